import { baseUrlOf, type Config } from '../kit/config.js';
import { LOOPBACK_HOSTS } from '../kit/loopback.js';

/** The service's addresses, each described by `A`: the configured one, and the one a request reached. */
export interface ServiceAddresses<A> {
  configured: A;
  /**
   * The address a request reached, from its Host header. With PUBLIC_BASE_URL unset, a loopback name
   * on the configured port (localhost, 127.0.0.1 or [::1]) is taken as the client wrote it: clients
   * check that the metadata names the URL they were given. Any other Host, and every Host once
   * PUBLIC_BASE_URL is set, gets the configured address: a Host header is never reflected otherwise.
   */
  at(host: string | undefined): A;
  all: readonly A[];
}

/** The configured address (PUBLIC_BASE_URL, else http://HOST:PORT) and the loopback ones, each made once by `addressOf(issuer)`. */
export function serviceAddresses<A>(config: Config, addressOf: (issuer: string) => A): ServiceAddresses<A> {
  const configuredIssuer = baseUrlOf(config).replace(/\/+$/, '');
  const configured = addressOf(configuredIssuer);
  // Keyed by URL host (name and port as the URL parser writes them); the configured address keeps its own.
  const byHost = new Map<string, A>();
  if (!config.publicBaseUrl) {
    const configuredHost = URL.parse(configuredIssuer)?.host;
    for (const name of LOOPBACK_HOSTS) {
      const issuer = new URL(`http://${name}:${config.port}`).origin;
      const host = new URL(issuer).host;
      byHost.set(host, host === configuredHost ? configured : addressOf(issuer));
    }
  }
  return {
    configured,
    at: (host) => (host === undefined ? undefined : byHost.get(URL.parse(`http://${host}`)?.host ?? '')) ?? configured,
    all: [configured, ...byHost.values()],
  };
}

/** Where the issuer of the address a request reached is read: MCP challenges name it, in either deployment. */
export interface IssuerAt {
  at(host: string | undefined): { issuer: string };
}

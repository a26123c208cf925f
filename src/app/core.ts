import type { Config } from '../kit/config.js';
import { migrate } from '../store/migrations.js';
import { createAuthenticator, type Authenticator } from '../access/authenticate.js';
import { createIdTokenVerifier } from '../access/id-token.js';
import { FirstUseRecorder } from '../access/first-use.js';
import { createMailer } from '../domain/mail.js';
import type { DomainDeps } from '../domain/deps.js';
import { createOAuthServer, type OAuthServer } from '../oauth/provider.js';
import { createAccessTokenVerifier } from '../oauth/verifier.js';
import { openBaseServices, type BaseOptions, type BaseServices } from './base-services.js';

/**
 * The process's services, built once from the parsed config: the domain's dependencies and what
 * the surfaces, the gateway and OAuth need above them.
 */
export interface Core extends DomainDeps, BaseServices {
  auth: Authenticator;
  /** The OAuth 2.1 authorization server of MCP clients (issuer, MCP resource URL, oidc-provider). */
  oauth: OAuthServer;
  /** Each API key's first successful v4 call (a successor key observed working). */
  keyFirstUse: Pick<FirstUseRecorder, 'record' | 'settled'>;
}

export interface CoreOptions extends BaseOptions {
  /**
   * How client metadata documents (CIMD) are fetched. Unset: oidc-provider's fetch, which refuses
   * private, loopback and link-local addresses; tests point it at a loopback fixture.
   */
  fetchClientMetadata?: typeof fetch;
}

/** The core: the base services on a migrated store, and the mailer, authenticator and OAuth server above them. */
export async function createCore(config: Config, options: CoreOptions = {}): Promise<Core> {
  const base = await openBaseServices(config, options, migrate);
  try {
    const { db, logger, now, secretKey, previousSecretKey, changes } = base;
    const idTokens =
      config.oidcIssuer && config.oidcAudience ? createIdTokenVerifier(config.oidcIssuer, config.oidcAudience) : undefined;
    const mailer = createMailer(db, config, logger);
    const keyFirstUse = new FirstUseRecorder(db, now, (error) => logger.warn({ err: error }, 'first use of an API key not written; retried on its next call'));
    const oauth = createOAuthServer({ config, db, secretKey, previousSecretKey, now, fetchClientMetadata: options.fetchClientMetadata });
    return {
      ...base,
      auth: createAuthenticator(db, { idTokens, accessTokens: createAccessTokenVerifier(db, oauth, now), changes }),
      mailer,
      oauth,
      keyFirstUse,
      // The v2 usage is written first (the cutover's quiet-key decisions read it); a mail send may outlast the grace.
      close: () =>
        base.close(async () => {
          await keyFirstUse.settled();
          await mailer.stop();
        }),
    };
  } catch (error) {
    await base.close().catch(() => undefined);
    throw error;
  }
}

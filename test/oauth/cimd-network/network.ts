import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/*
 * Test-only: a small internet for client metadata documents, so that the service fetches them the
 * way it does in production (oidc-provider's fetch over https, both SSRF checks, the platform's CA
 * store) with nothing in the service changed or configured for the test.
 *
 * The service runs in a network and mount namespace of its own (`unshare`, no privilege needed):
 * its loopback interface also carries PUBLIC_ADDRESS, its /etc/hosts is the test's, and host.mjs
 * serves the documents there over https. So a test host name resolves, through the system resolver
 * the service uses in production, to an address that is public in every registry the SSRF checks
 * consult; the connection's peer is that very address. Nothing the service runs is patched, and no
 * setting of the service weakens a check: a name the hosts file maps to loopback is refused as it
 * would be anywhere. The only things the test adds are the namespace, the hosts file and the CA
 * (NODE_EXTRA_CA_CERTS, node's own way to trust one more CA). Patching dns.lookup in the service
 * instead (a test-only --import) would still connect to loopback, which oidc-provider's check of the
 * connected peer refuses, unless the patch faked the peer too and so stopped testing the check.
 */

/**
 * The namespace's "public" address: global unicast, outside every IANA special-purpose block (11.0.0.0/8
 * is not announced on the internet, and nothing leaves the namespace anyway).
 */
export const PUBLIC_ADDRESS = '11.22.33.44';

const HOST_SCRIPT = fileURLToPath(new URL('host.mjs', import.meta.url));

/** A CA and one server certificate for `hostNames`, made with the openssl CLI, valid for a day. */
export function makeCertificates(dir: string, hostNames: string[]): { caFile: string } {
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const ecKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  openssl('req', '-x509', ...ecKey, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '1', '-subj', '/CN=svc CIMD test CA',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign');
  openssl('req', ...ecKey, '-keyout', 'server.key', '-out', 'server.csr', '-subj', `/CN=${hostNames[0]}`);
  writeFileSync(join(dir, 'server.ext'), `subjectAltName=${hostNames.map((name) => `DNS:${name}`).join(',')}\nextendedKeyUsage=serverAuth\n`);
  openssl('x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.pem', '-days', '1', '-extfile', 'server.ext');
  return { caFile: join(dir, 'ca.pem') };
}

/** The namespace's /etc/hosts: each name at its address. */
export function writeHosts(dir: string, names: Record<string, string>): void {
  const lines = ['127.0.0.1 localhost', '::1 localhost', ...Object.entries(names).map(([name, address]) => `${address} ${name}`)];
  writeFileSync(join(dir, 'hosts'), `${lines.join('\n')}\n`);
}

/** The documents host.mjs serves, by URL. */
export function writeDocuments(dir: string, documents: Record<string, unknown>): void {
  writeFileSync(join(dir, 'documents.json'), JSON.stringify(documents));
}

/**
 * What the service's command line is run under (ServerProcess's launcher): a new user, network and
 * mount namespace whose loopback carries PUBLIC_ADDRESS and whose /etc/hosts is the test's; host.mjs
 * starts first, and the service once the bridge's socket is there.
 */
export function namespaceLauncher(dir: string): string[] {
  const script = [
    'set -e',
    'ip link set lo up',
    `ip addr add ${PUBLIC_ADDRESS}/32 dev lo`,
    `mount --bind "${join(dir, 'hosts')}" /etc/hosts`,
    `"$1" "${HOST_SCRIPT}" "$@" &`,
    `until [ -S "${join(dir, 'service.sock')}" ]; do sleep 0.05; done`,
    'exec "$@"',
  ].join('\n');
  return ['unshare', '--user', '--map-root-user', '--net', '--mount', 'sh', '-c', script, 'sh'];
}

/** Listens on 127.0.0.1:`port` outside the namespace and carries each connection to the service inside. */
export async function bridgeToService(dir: string, port: number): Promise<{ close(): Promise<void> }> {
  const open = new Set<Socket>();
  const bridge: Server = createServer((outside) => {
    open.add(outside.once('close', () => open.delete(outside)));
    const inside = connect(join(dir, 'service.sock'));
    outside.pipe(inside).pipe(outside);
    outside.on('error', () => inside.destroy());
    inside.on('error', () => outside.destroy());
  });
  await new Promise<void>((resolve) => bridge.listen(port, '127.0.0.1', resolve));
  return {
    close: () =>
      new Promise<void>((resolve) => {
        bridge.close(() => resolve());
        for (const socket of open) socket.destroy();
      }),
  };
}

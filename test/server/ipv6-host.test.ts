import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServerProcess } from '../helpers/server-process.js';

/* HOST given as an IPv6 literal: the address the service names for itself is a URL, bracketed. */
describe('svc-server serve --host ::1', () => {
  let server: ServerProcess | undefined;
  beforeAll(async () => {
    server = await ServerProcess.start(['--demo', '--data-dir', 'memory://', '--host', '::1']);
  });
  afterAll(async () => server?.kill9());

  it('listens on [::1] and names itself there in its summary, OpenAPI and OAuth metadata', async () => {
    const base = new URL(server!.url);
    expect(base.hostname).toBe('[::1]');
    const port = base.port;
    expect((await fetch(`http://[::1]:${port}/readyz`)).status).toBe(200);
    const openapi = (await (await fetch(`http://[::1]:${port}/openapi.json`)).json()) as { servers: { url: string }[] };
    expect(openapi.servers[0]!.url).toBe(`http://[::1]:${port}`);
    const metadata = (await (await fetch(`http://[::1]:${port}/.well-known/oauth-authorization-server`)).json()) as { issuer: string };
    expect(metadata.issuer).toBe(`http://[::1]:${port}`);
  });
});

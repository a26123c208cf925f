import { createServer, request as forward, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A test-only loopback proxy that adds X-API-KEY to every request before the service sees it:
 * how tools that cannot send our credential (the conformance suite) reach /mcp. The service has
 * no switch for this, so nothing of it can be enabled in production.
 */
export async function startKeyInjectingProxy(target: string, apiKey: string): Promise<{ url: string; close(): Promise<void> }> {
  const upstream = new URL(target);
  const server: Server = createServer((req, res) => {
    const outgoing = forward(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: { ...req.headers, 'x-api-key': apiKey } },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    outgoing.on('error', () => res.destroy());
    req.pipe(outgoing);
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
}

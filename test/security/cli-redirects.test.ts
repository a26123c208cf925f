import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT } from '../../cli/exit-codes.js';
import { isolatedEnv, svc } from '../cli/svc-runner.js';

/*
 * `svc` never follows a redirect: following one would send X-API-KEY to whatever origin the
 * Location names, plain HTTP included. Two loopback servers: the API address redirects, the
 * other one (another origin) records what reaches it and must see nothing.
 */

const KEY = `svc_sk_zzzzzzzz_${'A'.repeat(43)}`;

interface Recorder {
  url: string;
  seen: Array<{ path: string; headers: IncomingHttpHeaders }>;
  server: Server;
}

const ME = JSON.stringify({ ok: true, data: { id: 'usr_1', email: 'a@example.com', role: 'admin' }, meta: {} });

/** A loopback server that records each request's path and headers and answers with `answer`. */
async function start(answer: (path: string, method: string) => { status: number; headers: Record<string, string>; body?: string }): Promise<Recorder> {
  const seen: Recorder['seen'] = [];
  const server = createServer((req, res) => {
    const path = req.url ?? '/';
    seen.push({ path, headers: req.headers });
    const { status, headers, body } = answer(path, req.method ?? 'GET');
    res.writeHead(status, headers).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, seen, server };
}

// Answers like the API would, so a client that followed the redirect would succeed.
const likeTheApi = () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: ME });

const close = (r: Recorder | undefined) => new Promise<void>((resolve) => (r ? r.server.close(() => resolve()) : resolve()));

describe('cli-redirects: svc sends the API key to --api-url only', { timeout: 60_000 }, () => {
  let elsewhere: Recorder;
  let api: Recorder;
  let sameOrigin: Recorder;
  const env = isolatedEnv();

  beforeAll(async () => {
    elsewhere = await start(likeTheApi);
    api = await start((path, method) => ({ status: method === 'POST' ? 307 : 302, headers: { location: `${elsewhere.url}${path}` } }));
    sameOrigin = await start((path) => (path === '/v4/me' ? { status: 301, headers: { location: '/v4/moved' } } : likeTheApi()));
  });
  afterAll(async () => {
    await close(api);
    await close(elsewhere);
    await close(sameOrigin);
  });

  it('refuses a redirect to another origin with exit 1, naming the Location, and the other origin sees nothing', async () => {
    const result = await svc(['whoami', '--api-url', api.url, '--allow-localhost', '--api-key', KEY], env);
    expect(result.code).toBe(EXIT.failure);
    expect(result.stderr).toBe(
      `svc: error: GET ${api.url}/v4/me: the API answered HTTP 302, redirecting to ${elsewhere.url}/v4/me; svc does not follow redirects, so the API key is sent to --api-url only (point --api-url at the new address if you trust it) (redirect_refused)\n`,
    );
    expect(result.stdout).toBe('');
    expect(api.seen.at(-1)?.headers['x-api-key']).toBe(KEY);
    expect(elsewhere.seen).toEqual([]);
  });

  it('refuses a 307 on a write too, and prints the error envelope with --format json', async () => {
    const result = await svc(
      ['teams', 'create', '--company-id', 'com_1', '--name', 'Moved', '--api-url', api.url, '--allow-localhost', '--api-key', KEY, '--format', 'json'],
      env,
    );
    expect(result.code).toBe(EXIT.failure);
    expect(JSON.parse(result.stdout)).toEqual({
      ok: false,
      error: {
        code: 'redirect_refused',
        message: expect.stringContaining(`POST ${api.url}/v4/teams: the API answered HTTP 307, redirecting to ${elsewhere.url}/v4/teams`),
        details: { status: 307, location: `${elsewhere.url}/v4/teams` },
      },
      meta: {},
    });
    expect(elsewhere.seen).toEqual([]);
  });

  it('refuses a same-origin redirect as well, resolving a relative Location in the message', async () => {
    const result = await svc(['whoami', '--api-url', sameOrigin.url, '--allow-localhost', '--api-key', KEY], env);
    expect(result.code).toBe(EXIT.failure);
    expect(result.stderr).toContain(`GET ${sameOrigin.url}/v4/me: the API answered HTTP 301, redirecting to ${sameOrigin.url}/v4/moved;`);
    expect(sameOrigin.seen.map((r) => r.path)).toEqual(['/v4/me']);
  });

  it('says so in svc help exit-codes', async () => {
    const codes = await svc(['help', 'exit-codes'], env);
    expect(codes.stdout).toContain('a redirect,\n     which svc never follows');
  });
});

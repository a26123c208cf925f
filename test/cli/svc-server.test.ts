import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { backends, TEST_SECRET_KEY } from '../helpers/harness.js';
import { runCommandSync, ServerProcess } from '../helpers/server-process.js';

describe.each(backends())('svc-server commands [%s]', (backend) => {
  let dataDir: string;
  let env: NodeJS.ProcessEnv;
  let schema: string | undefined;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'svc-cli-'));
    env = { ...process.env, LOG_LEVEL: 'warn', DATA_DIR: dataDir, DATABASE_URL: '', SVC_SECRET_KEY: '' };
    if (backend === 'postgres') {
      schema = `t_${randomBytes(6).toString('hex')}`;
      const admin = new pg.Client({ connectionString: inject('postgresUrl') });
      await admin.connect();
      await admin.query(`CREATE SCHEMA ${schema}`);
      await admin.end();
      const url = new URL(inject('postgresUrl'));
      url.searchParams.set('options', `-c search_path=${schema}`);
      env = { ...env, DATABASE_URL: url.toString(), SVC_SECRET_KEY: TEST_SECRET_KEY };
    }
  });

  afterAll(async () => {
    rmSync(dataDir, { recursive: true, force: true });
    if (schema) {
      const admin = new pg.Client({ connectionString: inject('postgresUrl') });
      await admin.connect();
      await admin.query(`DROP SCHEMA ${schema} CASCADE`);
      await admin.end();
    }
  });

  const run = (...args: string[]) => {
    const result = runCommandSync(args, env);
    return { code: result.status, stdout: result.stdout, stderr: result.stderr };
  };

  const me = (url: string, key: string) => fetch(`${url}/v4/me`, { headers: { 'x-api-key': key } });

  it('seeds the demo, serves it, and manages users and keys', async () => {
    const seeded = run('seed', '--demo', '--json');
    expect(seeded.stderr).toBe('');
    expect(seeded.code).toBe(0);
    // One JSON object on one line, as the log lines that follow it on `serve --json`'s stdout.
    expect(seeded.stdout.trimEnd().split('\n')).toHaveLength(1);
    const demo = JSON.parse(seeded.stdout);
    for (const who of ['admin', 'manager', 'employee']) expect(demo.apiKeys[who]).toMatch(/^svc_sk_/);
    for (const which of ['full', 'addressOnly']) expect(demo.legacyKeys[which]).toMatch(/^lk_live_/);

    const again = run('seed', '--demo', '--json');
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('store_not_empty');

    const migrated = run('migrate', '--json');
    expect(JSON.parse(migrated.stdout)).toMatchObject({ applied: [] });

    const created = run('users', 'create', '--email', 'bot@acme.example', '--name', 'Integration Bot', '--role', 'admin', '--company', 'co_acme', '--non-personal', '--json');
    expect(created.code).toBe(0);
    const minted = run('keys', 'mint', '--user', 'bot@acme.example', '--capabilities', 'mcp:teams:read,mcp:employees:read', '--json');
    expect(minted.code).toBe(0);
    const key = JSON.parse(minted.stdout);
    expect(key.apiKey).toMatch(/^svc_sk_/);
    const second = JSON.parse(run('keys', 'mint', '--user', 'bot@acme.example', '--capabilities', 'all', '--json').stdout);
    expect(second.capabilities).toHaveLength(10);
    expect(run('keys', 'revoke', second.keyId, '--json').code).toBe(0);

    const server = await ServerProcess.start([], env);
    const { url } = server.summary;
    try {
      const adminMe = await me(url, demo.apiKeys.admin);
      expect(adminMe.status).toBe(200);
      expect(((await adminMe.json()) as any).data.user.email).toBe('admin@demo.example');
      const botMe = (await (await me(url, key.apiKey)).json()) as any;
      expect(botMe.data.capabilities).toEqual(['mcp:employees:read', 'mcp:teams:read']);
      expect((await me(url, second.apiKey)).status).toBe(401);
      const legacyMe = await me(url, demo.legacyKeys.full);
      expect(legacyMe.status).toBe(401);
      expect(((await legacyMe.json()) as any).error.code).toBe('api_key_not_user_bound');
      if (backend === 'pglite') {
        const busy = run('keys', 'mint', '--user', 'bot@acme.example', '--capabilities', 'all');
        expect(busy.code).toBe(1);
        expect(busy.stderr).toContain('is in use by process');
      } else {
        // PostgreSQL serves several processes: disabling the user bites on the next request.
        expect(run('users', 'disable', '--email', 'bot@acme.example').code).toBe(0);
        expect((await me(url, key.apiKey)).status).toBe(401);
      }
    } finally {
      expect(await server.stop()).toBe(0);
    }
    if (backend === 'pglite') expect(existsSync(join(dataDir, 'svc.lock'))).toBe(false);
  }, 120_000);

  it('reports usage errors with exit 2 and bad arguments with exit 1 naming the field', () => {
    expect(run('frobnicate').code).toBe(2);
    const bad = run('users', 'create', '--email', 'not-an-email', '--name', 'X', '--role', 'admin', '--company', 'co_acme');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('email');
    const beyond = run('keys', 'mint', '--user', 'manager@acme.example', '--capabilities', 'mcp:teams:write');
    expect(beyond.code).toBe(1);
    expect(beyond.stderr).toContain('capability_beyond_role');
  }, 60_000);

  it('says in one line that the port is taken, and exits 1', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = taken.address() as AddressInfo;
      const refused = run('serve', '--port', String(port));
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(`svc-server: Cannot listen on 127.0.0.1:${port}: another process is using it.`);
      expect(refused.stderr).not.toContain('unexpected error');
      expect(refused.stderr).not.toMatch(/^\s+at /m);
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  }, 60_000);
});

describe('svc-server serve --demo on a taken port', () => {
  it('leaves the store empty, so the next start seeds it and shows the keys', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'svc-demo-port-'));
    const env = { ...process.env, LOG_LEVEL: 'warn', DATA_DIR: dataDir, DATABASE_URL: '', SVC_SECRET_KEY: '' };
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as AddressInfo;
    let server: ServerProcess | undefined;
    try {
      const refused = runCommandSync(['serve', '--demo', '--port', String(port)], env);
      expect(refused.status).toBe(1);
      expect(refused.stderr).toContain(`Cannot listen on 127.0.0.1:${port}: another process is using it.`);
      expect(refused.stderr).not.toContain('Demo API keys');
      expect(existsSync(join(dataDir, 'demo-keys.json'))).toBe(false);
      await new Promise((resolve) => taken.close(resolve));

      // The freed port given again: commander keeps the last --port, over the helper's own free one.
      server = await ServerProcess.start(['--demo', '--port', String(port)], env);
      const { summary } = server;
      expect(summary.url).toBe(`http://127.0.0.1:${port}`);
      expect(summary.demo?.apiKeys.admin).toMatch(/^svc_sk_/);
      const me = await fetch(`${summary.url}/v4/me`, { headers: { 'x-api-key': summary.demo!.apiKeys.admin! } });
      expect(me.status).toBe(200);
    } finally {
      await server?.kill9();
      taken.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});

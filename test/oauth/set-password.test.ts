import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SVC_SERVER_STEPS_TIMEOUT_MS } from '../helpers/harness.js';
import { runCommandSync } from '../helpers/server-process.js';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/kit/config.js';
import { createCore } from '../../src/app/core.js';
import { passwordMatches } from '../../src/access/passwords.js';
import { sql } from '../../src/store/sql.js';
import { pino } from 'pino';

describe('svc-server users set-password', { timeout: SVC_SERVER_STEPS_TIMEOUT_MS }, () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-password-'));
  const env = { ...process.env, LOG_LEVEL: 'warn', DATA_DIR: dataDir, DATABASE_URL: '', SVC_SECRET_KEY: '' };
  const run = (args: string[], input = '') => runCommandSync(args, env, input);
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('reads the password from stdin, stores only its scrypt hash, and refuses a short one', async () => {
    const seeded = run(['seed', '--demo', '--json']);
    expect(seeded.status).toBe(0);
    expect(JSON.parse(seeded.stdout).password).toBe('demo-password');

    expect(run(['users', 'set-password', '--email', 'eve@acme.example'], 'correct horse battery\n').status).toBe(0);
    const short = run(['users', 'set-password', '--email', 'eve@acme.example'], 'short\n');
    expect(short.status).not.toBe(0);
    expect(short.stderr).toContain('password_too_short');

    const core = await createCore(loadConfig({}, { dataDir, logLevel: 'silent' }), { logger: pino({ level: 'silent' }) });
    try {
      const [row] = await core.db.query<{ password_hash: string }>(sql`SELECT password_hash FROM users WHERE email = 'eve@acme.example'`);
      expect(row!.password_hash).toMatch(/^scrypt\$32768\$8\$1\$/);
      expect(row!.password_hash).not.toContain('correct horse');
      expect(await passwordMatches('correct horse battery', row!.password_hash)).toBe(true);
      expect(await passwordMatches('demo-password', row!.password_hash)).toBe(false);
    } finally {
      await core.close();
    }
  });
});

import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServeProcess, type ServeOptions, type ServerProcess } from '../test/faults/server-process.js';
import { createBenchSchema, type Backend } from './lib.js';

/*
 * The server processes that bench/reference.ts and bench/instructions.ts compare: the build of
 * `svc-server serve` on the demo data, and the reference (bench/workers/reference-server.ts) beside it.
 */

const SECRET_KEY = 'b'.repeat(64);
const REFERENCE_SERVER = fileURLToPath(new URL('./workers/reference-server.ts', import.meta.url));

/**
 * Where each server process keeps the demo data: one PostgreSQL schema shared by all, or on PGlite,
 * which is single-process, a copy each of the directory the seeding server left.
 */
export async function demoStore(backend: Backend) {
  const schema = backend === 'postgres' ? await createBenchSchema() : undefined;
  const root = mkdtempSync(join(tmpdir(), 'bench-servers-'));
  const seeded = join(root, 'seeded');
  const envFor = (copy: string): Record<string, string> => {
    if (schema) return { DATABASE_URL: schema.url };
    const dir = join(root, copy);
    if (copy !== 'seeded') cpSync(seeded, dir, { recursive: true });
    return { DATA_DIR: dir };
  };
  const seeding = await startServeProcess(['--demo'], { ...envFor('seeded'), SVC_SECRET_KEY: SECRET_KEY }, { compiled: true });
  await seeding.stop();
  return {
    demo: seeding.summary.demo!,
    envFor,
    /** The build of `svc-server serve` on the copy named `copy`. */
    startProject: (copy: string, options: ServeOptions = {}): Promise<ServerProcess> =>
      startServeProcess([], { ...envFor(copy), SVC_SECRET_KEY: SECRET_KEY }, { compiled: true, ...options }),
    async drop() {
      await schema?.drop();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/** The reference server on `env`'s store (under `launcher`, if given); resolves with its URL and how to stop it. */
export async function startReference(
  env: Record<string, string>,
  key: string,
  { launcher = [], startupMs = 90_000 }: { launcher?: string[]; startupMs?: number } = {},
): Promise<{ url: string; pid: number; stop(): Promise<void> }> {
  const [command, ...args] = [...launcher, process.execPath, '--import', 'tsx', REFERENCE_SERVER];
  const child = spawn(command!, args, {
    env: { ...process.env, ...env, REFERENCE_KEY: key, PORT: '0' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the reference server did not start within ${startupMs} ms`));
    }, startupMs);
    child.stdout.once('data', (chunk: Buffer) => {
      clearTimeout(timer);
      resolve(chunk.toString().trim());
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`the reference server exited with ${String(code)} before listening`));
    });
  });
  return {
    url,
    pid: child.pid!,
    async stop() {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

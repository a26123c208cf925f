import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { Redis } from 'ioredis';
import { inject } from 'vitest';

/** The machine's Redis found by the global setup, or '' where its suites cannot run (never in CI). */
export const redisUrl = () => inject('redisUrl');

/** The shared-state kinds to run: memory always, Redis where the machine has it. */
export const sharedStateKinds = (): Array<'memory' | 'redis'> => (redisUrl() ? ['memory', 'redis'] : ['memory']);

/** A key prefix no other test run uses, so runs in parallel on one Redis never meet. */
export const uniquePrefix = () => `svc:test:${randomBytes(6).toString('hex')}:`;

async function withClient<T>(url: string, work: (redis: Redis) => Promise<T>): Promise<T> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
  try {
    return await work(redis);
  } finally {
    redis.disconnect();
  }
}

/** Keys under `prefix`, prefix included. */
export const keysUnder = (url: string, prefix: string) => withClient(url, (redis) => redis.keys(`${prefix}*`));

/** Deletes every key under `prefix` (a test's own keys only). */
export const dropKeys = (url: string, prefix: string) =>
  withClient(url, async (redis) => {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
  });

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export async function waitFor(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A Redis of the test's own on `port`, that the test may kill and start again (never the machine's). */
export class OwnRedis {
  private child: ChildProcess | undefined;

  /** `settings`: further redis-server arguments, config directives as `--name value…`. */
  constructor(
    readonly port: number,
    private settings: string[] = [],
  ) {
    const probe = spawnSync('redis-server', ['--version'], { encoding: 'utf8' });
    if (probe.error || probe.status !== 0) {
      throw new Error('redis-server is not installed: the Redis outage tests start and stop their own (apt-get install redis-server)');
    }
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Starts it, with other `settings` from now on when given (a server upgraded in place). */
  async start(settings = this.settings): Promise<void> {
    this.settings = settings;
    this.child = spawn(
      'redis-server',
      ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no', ...settings],
      { stdio: 'ignore' },
    );
    await waitFor(async () => {
      const redis = new Redis(this.url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      redis.on('error', () => undefined);
      try {
        await redis.connect();
        return (await redis.ping()) === 'PONG';
      } catch {
        return false;
      } finally {
        redis.disconnect();
      }
    }, `redis-server on port ${this.port}`);
  }

  /** Kills it outright, as a crash would. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    this.child = undefined;
  }
}

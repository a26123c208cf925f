import Fastify from 'fastify';
import pino from 'pino';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { loadAfterListen, loadOnce } from '../../src/kit/load-once.js';

describe('a module loaded once', () => {
  it('loads once for callers that come together, keeps the result, and tries again after a failure', async () => {
    let attempts = 0;
    const load = loadOnce(async () => {
      attempts += 1;
      if (attempts === 1) throw new Error('first attempt fails');
      return `loaded on attempt ${attempts}`;
    });
    expect(load.started).toBeUndefined();
    const together = [load(), load()];
    expect(load.started).toBe(together[0]);
    await expect(Promise.all(together)).rejects.toThrow('first attempt fails');
    expect(attempts).toBe(1);
    expect(load.started).toBeUndefined();
    await expect(load()).resolves.toBe('loaded on attempt 2');
    await expect(load()).resolves.toBe('loaded on attempt 2');
    expect(attempts).toBe(2);
  });

  it('starts loading when the port opens, logs a failure, and leaves the next use to try again', async () => {
    const lines: string[] = [];
    const logger = pino(new Writable({ write: (chunk: Buffer, _encoding, done) => (lines.push(chunk.toString()), done()) }));
    let attempts = 0;
    const load = loadOnce(async () => {
      attempts += 1;
      if (attempts === 1) throw new Error('module missing');
      return attempts;
    });
    const app = Fastify();
    loadAfterListen(app, logger, 'The widget', load);
    expect(attempts).toBe(0);
    await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      await expect.poll(() => lines.length).toBe(1);
      expect(JSON.parse(lines[0]!)).toMatchObject({ level: 50, msg: 'The widget failed to load; the next request that needs it tries again', err: { message: 'module missing' } });
      await expect(load()).resolves.toBe(2);
    } finally {
      await app.close();
    }
  });
});

import { createServer } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { baseUrlOf, ConfigError, hostAndPort, type Config } from '../kit/config.js';
import type { Logger } from 'pino';
import { startDraining } from './drain.js';

/** What a listening server stops on a signal: the services' close and the log's last flush. */
export interface Stoppable {
  logger: Logger;
  close(): Promise<void>;
  /** Writes the log lines still buffered for at most `withinMs`. */
  endLogs(withinMs: number): Promise<void>;
}

// Of the grace, requests that hold out leave a fifth, at most this, to close the store and write the last log lines.
const CLOSING_RESERVE_MAX_MS = 2000;

/** Whether `work` settles within `ms`; its rejection is passed on. */
async function settlesWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([work.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Runs `listen`, saying a taken or forbidden port in one line, with what to change: the machine's state, not a fault of ours. */
async function withListenErrorsSaid(config: Config, listen: () => Promise<unknown>): Promise<void> {
  try {
    await listen();
  } catch (error) {
    const where = hostAndPort(config);
    const { code } = error as NodeJS.ErrnoException;
    if (code === 'EADDRINUSE') throw new ConfigError(`Cannot listen on ${where}: another process is using it. Stop it, or choose another port (PORT, --port)`);
    if (code === 'EACCES') throw new ConfigError(`Cannot listen on ${where}: not permitted (ports below 1024 need privileges). Choose another port (PORT, --port)`);
    throw error;
  }
}

/**
 * Fails as listening would if the port cannot be taken now: for work that must not be done by a start
 * that then cannot serve (seeding the demo, whose keys are shown once).
 */
export async function ensureCanListen(config: Config): Promise<void> {
  if (config.port === 0) return;
  const probe = createServer();
  await withListenErrorsSaid(config, () => new Promise<void>((resolve, reject) => {
    probe.once('error', reject);
    probe.listen({ port: config.port, host: config.host }, resolve);
  }));
  await new Promise((resolve) => probe.close(resolve));
}

/**
 * Listens until SIGTERM or SIGINT, then stops within SHUTDOWN_DRAIN_MS + SHUTDOWN_GRACE_MS, whatever hangs.
 * SIGTERM (a supervisor's stop) first drains: for the drain delay it keeps serving while /readyz answers
 * 503 and every answer closes its connection; SIGINT (a person at a terminal) skips that. Then it stops
 * listening and closes idle connections; in-flight requests finish while more than the closing reserve (a
 * fifth of the grace, at most 2 s) is left, then their connections are cut; the store closes (usage
 * flushed, shared state and database closed); the log lines still buffered get the time left, so a log
 * reader that stalls cannot hold the process. Exits 0, or 1 if closing failed or outlasted the grace. A
 * second signal exits at once. Returns the URL it serves.
 */
export async function listenUntilSignalled(app: FastifyInstance, core: Stoppable, config: Config): Promise<string> {
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) {
      core.logger.warn({ signal }, 'second signal: exiting without waiting');
      process.exit(1);
    }
    stopping = true;
    const drainMs = signal === 'SIGTERM' ? config.shutdownDrainMs : 0;
    if (drainMs > 0) {
      core.logger.info({ signal, drainMs }, 'draining: /readyz answers 503 while requests are still served');
      startDraining(app.server);
      await new Promise((resolve) => setTimeout(resolve, drainMs));
    }
    const graceMs = config.shutdownGraceMs;
    const deadline = Date.now() + graceMs;
    const timeLeft = () => Math.max(0, deadline - Date.now());
    core.logger.info({ signal, graceMs }, 'shutting down: finishing in-flight requests');
    const cut = setTimeout(() => {
      core.logger.warn('in-flight requests outlasted their share of the shutdown grace: closing their connections');
      app.server.closeAllConnections();
    }, graceMs - Math.min(CLOSING_RESERVE_MAX_MS, graceMs / 5));
    const closing = (async () => {
      await app.close();
      clearTimeout(cut);
      await core.close();
    })();
    let exitCode = 0;
    try {
      if (await settlesWithin(closing, timeLeft())) {
        core.logger.info('stopped');
      } else {
        core.logger.error('shutdown grace period over before the store closed: exiting without it');
        exitCode = 1;
      }
    } catch (error) {
      core.logger.error({ err: error }, 'shutdown failed');
      exitCode = 1;
    }
    await core.endLogs(timeLeft());
    process.exit(exitCode);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  await withListenErrorsSaid(config, () => app.listen({ port: config.port, host: config.host }));
  return baseUrlOf({ ...config, port: (app.server.address() as { port: number }).port });
}

import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';

/** Loads on first use and keeps the result; a failed load is forgotten, so the next use tries again. */
export interface LoadOnce<T> {
  (): Promise<T>;
  /** The load begun so far, if any (settled or not). */
  readonly started: Promise<T> | undefined;
}

export function loadOnce<T>(load: () => Promise<T>): LoadOnce<T> {
  let started: Promise<T> | undefined;
  const get = () => {
    if (!started) {
      const attempt = load();
      started = attempt;
      attempt.catch(() => {
        if (started === attempt) started = undefined;
      });
    }
    return started;
  };
  return Object.defineProperty(get, 'started', { get: () => started }) as LoadOnce<T>;
}

/**
 * Starts a load once the port is open, so the instance is ready without it; a request that comes
 * first waits for it. A failure is logged, and the next request tries again.
 */
export function loadAfterListen(app: FastifyInstance, logger: Logger, what: string, load: () => Promise<unknown>): void {
  app.addHook('onListen', () => {
    load().catch((error: unknown) => logger.error({ err: error }, `${what} failed to load; the next request that needs it tries again`));
  });
}

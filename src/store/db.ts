import { mkdirSync, openSync, readFileSync, rmSync, writeSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { ServiceUnavailable } from '../kit/errors.js';
import { sql, type Planning, type Sql } from './sql.js';
import { StatementNames } from './statement-names.js';
import { Heard } from './heard.js';
import { createPglite } from './pglite-template.js';
import type { ClientBase, Pool } from 'pg';
import type { PGlite, PGliteOptions } from '@electric-sql/pglite';

/** Something that runs parameterised SQL: the database itself or an open transaction. */
export interface Queryable {
  query<R = Record<string, unknown>>(statement: Sql): Promise<R[]>;
}

export interface Db extends Queryable {
  readonly kind: 'pglite' | 'postgres';
  /** Runs `work` in one transaction; it commits only if `work` resolves. */
  transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T>;
  /** Runs a multi-statement script (migrations). */
  exec(script: string): Promise<void>;
  /**
   * Delivers NOTIFY payloads of `channel`, this process's own before the committing call returns.
   * Call it before the first query. `onGap(false)` says notifications may be missed from now on
   * (the listening connection is lost); `onGap(true)` that listening resumed. Resolves once listening.
   */
  listen(channel: string, onNotify: (payload: string) => void, onGap: (live: boolean) => void): Promise<Listening>;
  close(): Promise<void>;
}

export interface Listening {
  /**
   * Resolves once every notification of a commit made before `asOf` (performance.now(); default: the
   * call) has been delivered; undefined when that is already known. Rejects when it cannot be known (the
   * listening connection is lost or stalled). Absent where notifications cannot lag behind commits: one
   * process, whose own commits are heard before they return.
   */
  caughtUp?(asOf?: number): Promise<void> | undefined;
  stop(): Promise<void>;
}

/** The plan_cache_mode of the sessions that run each fixed planning (Sql.planning); 'auto' leaves PostgreSQL's default. */
export const PLAN_CACHE_MODE = { custom: 'force_custom_plan', generic: 'force_generic_plan' } as const satisfies Record<Exclude<Planning, 'auto'>, string>;

// Both engines return the same JS types: ISO strings for timestamps, numbers for counts and numerics.
const TIMESTAMPTZ = 1184;
const INT8 = 20;
const NUMERIC = 1700;
// A UTC timestamptz in PostgreSQL's default DateStyle ("2026-11-25 03:06:37.123+00") is rewritten into the text
// toISOString gives, without a Date: a list page reads a hundred, and Date's parser took 0.5 µs for each.
// Other zones, eras and styles take the Date path.
const UTC_TIMESTAMP = /^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)(?:\.(\d{1,6}))?\+00$/;
const toIso = (value: string) => {
  const utc = UTC_TIMESTAMP.exec(value);
  return utc ? `${utc[1]}T${utc[2]}.${`${utc[3] ?? ''}000`.slice(0, 3)}Z` : new Date(value).toISOString();
};
const parsers: Record<number, (value: string) => unknown> = {
  [TIMESTAMPTZ]: toIso,
  [INT8]: Number,
  [NUMERIC]: Number,
};

export interface OpenDbOptions {
  databaseUrl?: string | undefined;
  dataDir: string;
  /** PostgreSQL schema to use (tests isolate themselves in their own schema). */
  schema?: string | undefined;
  /** The cluster a new PGlite store starts as (createPglite): tests start from one migrated and seeded once. */
  pgliteCluster?: Blob | undefined;
}

export async function openDb(options: OpenDbOptions): Promise<Db> {
  return options.databaseUrl ? openPostgres(options.databaseUrl, options.schema) : openPglite(options.dataDir, options.pgliteCluster);
}

export class DataDirInUseError extends Error {}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * PGlite is single-process: a second process on the same directory would corrupt it.
 * A pid lock file refuses that clearly; a lock left by a dead process is taken over.
 */
function lockDataDir(dataDir: string): () => void {
  const lockFile = join(dataDir, 'svc.lock');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(lockFile, 'wx', 0o600);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return () => rmSync(lockFile, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const owner = Number(readFileSync(lockFile, 'utf8'));
      if (Number.isInteger(owner) && owner > 0 && isAlive(owner)) {
        throw new DataDirInUseError(
          `The data directory ${dataDir} is in use by process ${owner}. Stop that server first, or run both against PostgreSQL (DATABASE_URL).`,
        );
      }
      rmSync(lockFile, { force: true });
    }
  }
  throw new DataDirInUseError(`Could not lock the data directory ${dataDir}`);
}

/** What every PGlite store is opened with: the shared type parsers and the trigram extension. */
export async function pgliteOptions(): Promise<PGliteOptions> {
  const { pg_trgm } = await import('@electric-sql/pglite/contrib/pg_trgm');
  return { parsers, extensions: { pg_trgm } };
}

async function openPglite(dataDir: string, cluster?: Blob): Promise<Db> {
  const options = await pgliteOptions();
  const inMemory = dataDir.startsWith('memory://');
  let unlock = () => {};
  if (!inMemory) {
    // A new data directory is this user's alone: PGlite writes its files readable and writable by everyone (0666).
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    unlock = lockDataDir(dataDir);
  }
  let pg;
  try {
    pg = await createPglite(inMemory ? dataDir : join(dataDir, 'pgdata'), options, undefined, cluster);
  } catch (error) {
    unlock();
    throw error;
  }
  return pgliteDb(pg, unlock);
}

/** A Db over an open PGlite store (opened with pgliteOptions); `release` runs once the store is closed. */
export function pgliteDb(pg: PGlite, release: () => void = () => {}): Db {
  const run = async <R>(target: Pick<PGlite, 'query'>, statement: Sql) => {
    const { text, values } = statement.toQuery();
    return (await target.query<R>(text, values)).rows;
  };
  return {
    kind: 'pglite',
    query: (statement) => run(pg, statement),
    transaction: (work) => pg.transaction((tx) => work({ query: (statement) => run(tx, statement) })),
    exec: async (script) => {
      await pg.exec(script);
    },
    // One in-process connection: notifications cannot be missed, so there is never a gap.
    listen: async (channel, onNotify) => {
      const stop = await pg.listen(channel, onNotify);
      return {
        stop: async () => {
          if (!pg.closed) await stop();
        },
      };
    },
    close: async () => {
      await pg.close();
      release();
    },
  };
}

const RECONNECT_DELAYS_MS = [100, 500, 1000, 2000, 5000];

/** The pool reconnects on the next query; a client may retry about this soon. */
const DATABASE_RETRY_AFTER_SECONDS = 2;

export class DatabaseUnavailable extends ServiceUnavailable {
  constructor() {
    super('database_unavailable', 'The database connection was lost; the request was not completed. Retry shortly', DATABASE_RETRY_AFTER_SECONDS);
    this.name = 'DatabaseUnavailable';
  }
}

// SQLSTATE classes 08 (connection exception) and 57P01–57P03 (server shutting down or starting).
const LOST_SQLSTATE = /^(08...|57P0[123])$/;
const LOST_SOCKET = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND']);
// node-postgres reports a dropped socket, or a client it has given up on, by message alone.
const LOST_MESSAGE = /^(Connection terminated|Client has encountered a connection error|Connection terminated due to connection timeout)/;

/** A lost connection, not a failed statement, becomes DatabaseUnavailable (503); anything else is passed on as is. */
function connectionLost(error: unknown): unknown {
  const code = pgErrorCode(error);
  const lost =
    (code !== undefined && (LOST_SQLSTATE.test(code) || LOST_SOCKET.has(code))) ||
    (error instanceof Error && LOST_MESSAGE.test(error.message));
  return lost ? new DatabaseUnavailable() : error;
}
/** How the listening connection shows in pg_stat_activity: per process, so an operator can tell instances apart. */
export const CHANGE_LISTENER_NAME = `svc-change-listener ${process.pid}`;
const HEARTBEAT_MS = 5000;
const HEARTBEAT_TIMEOUT_MS = 3000;

async function openPostgres(databaseUrl: string, schema?: string): Promise<Db> {
  const [{ default: pg }, { RowLayouts }] = await Promise.all([import('pg'), import('./row-layouts.js')]);
  const connection = {
    connectionString: databaseUrl,
    options: schema ? `-c search_path=${schema}` : undefined,
  };
  const listeners = new Map<string, (payload: string) => void>();
  const ignoreLost = () => undefined;
  const dispatch = (message: { channel: string; payload?: string | undefined }) => listeners.get(message.channel)?.(message.payload ?? '');
  const types = { getTypeParser: (oid: number, format?: string) => parsers[oid] ?? pg.types.getTypeParser(oid, format as 'text') };
  const heard = new Heard();
  const poolOf = (setUp: (client: ClientBase) => Promise<void>) => {
    const made = new pg.Pool({
      ...connection,
      max: 10,
      types,
      onConnect: async (client) => {
        // pg-pool leaves a client without an 'error' listener from handing it out until its borrower attaches
        // one, a microtask later; a backend's FATAL parsed in that gap (same socket read as the ReadyForQuery
        // that freed it) would be an uncaught 'error' event, which ends the process. The next query reports it.
        client.on('error', ignoreLost);
        await setUp(client);
      },
    });
    // An idle client's network error must not crash the process; the next query reports it.
    made.on('error', () => undefined);
    return made;
  };
  // The default pool's connections listen: the notification of this process's own commit then arrives on
  // the committing connection before the commit returns, so a caller never outruns its own write; and a
  // statement's answer proves the feed has heard what was committed before it was sent (see `heard`).
  const pool = poolOf(async (client) => {
    client.on('notification', dispatch);
    for (const channel of listeners.keys()) await client.query(`LISTEN ${channel}`);
    heard.connectionListening();
  });
  // Named statements whose planning is fixed (Sql.planning: searches planned with their values, pages
  // planned once) run on sessions of their own whose plan_cache_mode says so: a search is parsed once per
  // connection but never given a generic plan, and a page's generic plan is kept although PostgreSQL's
  // guess for its LIMIT parameter (a tenth of the rows) prices it above a custom one at a million rows.
  // Set per session, not as a startup option, which a pooler such as PgBouncer refuses. Read-only
  // statements outside transactions, so these connections need no LISTEN (and prove nothing heard).
  const plannedPool = (planning: keyof typeof PLAN_CACHE_MODE) =>
    poolOf(async (client) => {
      await client.query(`SET plan_cache_mode = ${PLAN_CACHE_MODE[planning]}`);
    });
  const pools: Record<Planning, Pool> = { auto: pool, custom: plannedPool('custom'), generic: plannedPool('generic') };
  const run = async <R>(target: { query: typeof pool.query }, statement: Sql) => {
    const { text, values } = statement.toQuery();
    try {
      return (await target.query(text, values)).rows as R[];
    } catch (error) {
      throw connectionLost(error);
    }
  };
  // Outside transactions only: a stale plan is retried unnamed, which an aborted transaction could not do.
  const names = new StatementNames();
  const layouts = new RowLayouts();
  const runPrepared = async <R>(statement: Sql) => {
    const { text, values } = statement.toQuery();
    const target = pools[statement.planning];
    const named = names.namedFor(text);
    // Taken before the pool lends a connection, so no later than the statement is sent.
    const sentAt = performance.now();
    let rows: R[];
    if (named === undefined) rows = await run<R>(target, statement);
    else {
      try {
        rows = (await layouts.run(target, named, values)).rows as R[];
      } catch (error) {
        const failure = names.failed(error);
        if (failure === undefined) throw connectionLost(error);
        // A pooler in transaction mode: the backend that answers is not the one that listened.
        if (failure === 'lost') heard.distrustStatements();
        rows = await run<R>(target, statement);
      }
    }
    if (target === pool) heard.statementAnswered(sentAt);
    return rows;
  };
  return {
    kind: 'postgres',
    query: runPrepared,
    transaction: async (work) => {
      const client = await pool.connect().catch((error: unknown) => {
        throw connectionLost(error);
      });
      try {
        await run(client as never, sql`BEGIN`);
        const result = await work({ query: (statement) => run(client as never, statement) });
        await run(client as never, sql`COMMIT`);
        client.release();
        return result;
      } catch (error) {
        // A lost connection goes back marked, so the pool discards it instead of lending it again.
        const rollback = await client.query('ROLLBACK').then(
          () => undefined,
          (rollbackError: Error) => rollbackError,
        );
        client.release(error instanceof DatabaseUnavailable ? error : rollback);
        throw error;
      }
    },
    exec: async (script) => {
      await pool.query(script);
    },
    listen: async (channel, onNotify, onGap) => {
      // A connection opened before would never listen, yet its statements would count as heard.
      if (pool.totalCount > 0) throw new Error('listen before the first query');
      listeners.set(channel, onNotify);
      // A dedicated connection hears other processes while the pool is idle; reconnected with backoff.
      // A heartbeat finds a half-open connection (no 'end' ever comes), which would otherwise leave caches trusted.
      let stopped = false;
      let current: { client: InstanceType<typeof pg.Client>; heartbeat: NodeJS.Timeout; lose: () => void } | undefined;
      // A round trip on the listening connection, bounded: what stalls it is treated as a lost connection.
      // The timer is cleared on the answer: round trips run on the request path.
      // An empty query: PostgreSQL orders notifications by when it reads a query, not by what the query
      // does, and an empty one has nothing to plan or execute and no row (decision record 0008).
      const roundTrip = (target: NonNullable<typeof current>) => {
        const sentAt = performance.now();
        let timer: NodeJS.Timeout | undefined;
        const timeout = new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error('change listener did not answer')), HEARTBEAT_TIMEOUT_MS).unref();
        });
        return Promise.race([target.client.query(''), timeout]).then(
          () => {
            clearTimeout(timer);
            heard.roundTripAnswered(sentAt);
          },
          (error: unknown) => {
            clearTimeout(timer);
            target.lose();
            throw error;
          },
        );
      };
      const connect = async (attempt: number): Promise<void> => {
        // Named, so an operator can tell it in pg_stat_activity.
        const next = new pg.Client({ ...connection, application_name: CHANGE_LISTENER_NAME, keepAlive: true });
        next.on('notification', dispatch);
        next.on('error', () => undefined);
        try {
          await next.connect();
          await next.query(`LISTEN ${channel}`);
        } catch (error) {
          await next.end().catch(() => undefined);
          if (attempt === 0) throw error;
          const delay = RECONNECT_DELAYS_MS[Math.min(attempt, RECONNECT_DELAYS_MS.length - 1)];
          if (!stopped) setTimeout(() => void connect(attempt + 1), delay).unref();
          return;
        }
        if (stopped) {
          await next.end().catch(() => undefined);
          return;
        }
        let lost = false;
        const lose = () => {
          if (lost || stopped) return;
          lost = true;
          clearInterval(heartbeat);
          if (current?.client === next) current = undefined;
          onGap(false);
          void next.end().catch(() => undefined);
          void connect(1);
        };
        const heartbeat = setInterval(() => void roundTrip(current!).catch(() => undefined), HEARTBEAT_MS).unref();
        current = { client: next, heartbeat, lose };
        next.on('end', lose);
        if (attempt > 0) onGap(true);
      };
      await connect(0);
      // One round trip at a time for callers (the heartbeat's runs beside); another only for callers its
      // answer did not cover, and none for those a statement answered meanwhile covered. A caller asking as of an earlier moment (its request's
      // arrival) needs none if an answer since covers it.
      let inFlight = false;
      const pump = (): void => {
        if (inFlight || !heard.waiting) return;
        if (!current || stopped) return heard.fail(new Error('not listening'));
        inFlight = true;
        roundTrip(current).then(
          () => {
            inFlight = false;
            pump();
          },
          (error: unknown) => {
            inFlight = false;
            heard.fail(error);
          },
        );
      };
      const caughtUp = (asOf = performance.now()) => {
        if (heard.covers(asOf)) return undefined;
        const waiting = heard.wait(asOf);
        pump();
        return waiting;
      };
      return {
        caughtUp,
        stop: async () => {
          stopped = true;
          listeners.delete(channel);
          if (current) clearInterval(current.heartbeat);
          await current?.client.end().catch(() => undefined);
        },
      };
    },
    close: async () => {
      await Promise.all(Object.values(pools).map((each) => each.end()));
    },
  };
}

/** PostgreSQL error code of a failed statement, the same on both engines. */
export function pgErrorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

export const UNIQUE_VIOLATION = '23505';

import type { Logger } from 'pino';
import type { Db } from './db.js';
import { sql } from './sql.js';

/*
 * What changed in the database, for the caches of every instance. Triggers (migration 0006) NOTIFY
 * on commit, whichever process wrote; a process hears its own commits before they return (see Db.listen).
 */

export type ChangeTopic = 'credentials' | 'teams';
const TOPICS: readonly ChangeTopic[] = ['credentials', 'teams'];
const CHANNEL = 'svc_changes';
/** Copies of one notification arrive together, so a short memory of payloads suffices to drop them. */
const MAX_HEARD_PAYLOADS = 1000;

export interface ChangeFeed {
  /** False while notifications may be missed (listener reconnecting): caches must not serve then. */
  readonly live: boolean;
  /**
   * Resolves once every change committed before `asOf` (performance.now(); default: the call), by any
   * process, has been heard; undefined when that is so already (always, in one process). Rejects when
   * it cannot be known.
   */
  caughtUp(asOf?: number): Promise<void> | undefined;
  /** Moves on every change of the topic: a value loaded across a move may be stale and is not kept. */
  generation(topic: ChangeTopic): number;
  subscribe(topic: ChangeTopic, onChange: () => void): void;
  close(): Promise<void>;
}

/** Opened before the database's first query, so that every pooled connection listens. */
export async function openChangeFeed(db: Db, logger: Logger): Promise<ChangeFeed> {
  // Learnt after listening (see below); the triggers name it in every payload.
  const ours: { schema?: string } = {};
  const generations = new Map<ChangeTopic, number>(TOPICS.map((topic) => [topic, 0]));
  const subscribers = new Map<ChangeTopic, Array<() => void>>(TOPICS.map((topic) => [topic, []]));
  let live = true;
  // Payloads already acted on: every listening connection delivers its own copy, within moments of the others.
  const heardPayloads = new Set<string>();

  const changed = (topic: ChangeTopic) => {
    generations.set(topic, generations.get(topic)! + 1);
    for (const onChange of subscribers.get(topic)!) onChange();
  };
  const listening = await db.listen(
    CHANNEL,
    (payload) => {
      const [topic, from, transaction] = payload.split(':');
      // Channels are per database; other schemas (tests, tenants) notify on the same one.
      if (from === undefined || from !== ours.schema || !TOPICS.includes(topic as ChangeTopic)) return;
      if (transaction !== undefined) {
        if (heardPayloads.has(payload)) return;
        if (heardPayloads.size >= MAX_HEARD_PAYLOADS) heardPayloads.delete(heardPayloads.values().next().value!);
        heardPayloads.add(payload);
      }
      changed(topic as ChangeTopic);
    },
    (nowLive) => {
      live = nowLive;
      // Whatever happened while deaf is unknown: everything cached is dropped, on losing and on regaining.
      for (const topic of TOPICS) changed(topic);
      if (nowLive) logger.info('change notifications resumed; caches serve again');
      else logger.warn('change notifications lost; caches bypassed until the listener reconnects');
    },
  );
  // Nothing is cached before this resolves, so notifications ignored until then lose nothing.
  const [row] = await db.query<{ schema: string }>(sql`SELECT current_schema() AS schema`);
  ours.schema = row!.schema;

  return {
    get live() {
      return live;
    },
    caughtUp: (asOf) => listening.caughtUp?.(asOf),
    generation: (topic) => generations.get(topic)!,
    subscribe: (topic, onChange) => {
      subscribers.get(topic)!.push(onChange);
    },
    close: () => listening.stop(),
  };
}

/**
 * What a request may take from a cache: what was true at `asOf` (performance.now() at its arrival, so its
 * later lookups wait for nothing more), waited for per hit; or, with `confirmedLater`, whatever is cached,
 * at once, the request's outcome being confirmed afterwards (readConfirmedLater).
 */
export interface Freshness {
  readonly asOf: number;
  readonly confirmedLater: boolean;
}

const changesHeard = (feed: ChangeFeed) => TOPICS.reduce((sum, topic) => sum + feed.generation(topic), 0);

/**
 * Runs a read on cached values without waiting for the feed, then keeps its outcome (answer or error)
 * only if the feed, caught up with `asOf`, heard no change since the read began; otherwise runs it
 * again, each hit waiting as usual. The read's own statements usually prove the feed caught up (Db.listen),
 * so a confirmed read waits for no round trip (decision record 0008). Reads only: side effects of a
 * first run that is discarded would stand.
 */
export async function readConfirmedLater<T>(feed: ChangeFeed, asOf: number, read: (freshness: Freshness) => Promise<T>): Promise<T> {
  if (!feed.live) return read({ asOf, confirmedLater: false });
  const before = changesHeard(feed);
  let outcome: { answer: T } | { error: unknown };
  try {
    outcome = { answer: await read({ asOf, confirmedLater: true }) };
  } catch (error) {
    outcome = { error };
  }
  const caughtUp = await Promise.resolve(feed.caughtUp(asOf)).then(
    () => true,
    () => false,
  );
  // A gap moves every generation too; `live` is checked all the same, as a hit would be.
  if (!caughtUp || !feed.live || changesHeard(feed) !== before) return read({ asOf, confirmedLater: false });
  if ('error' in outcome) throw outcome.error;
  return outcome.answer;
}

/**
 * A bounded cache of values that changes of its topics invalidate. A value is kept only if no change
 * happened while it loaded, so a read racing a revocation never caches what was revoked; a hit is served
 * only once the feed has heard every change committed before it (or, for a read confirmed later, before
 * that read answers), so a revocation on another instance bites at the next request here.
 */
export class TopicCache<V> {
  private readonly entries = new Map<string, V>();
  private readonly topics: readonly ChangeTopic[];

  constructor(
    private readonly feed: ChangeFeed,
    topics: ChangeTopic | readonly ChangeTopic[],
    private readonly maxEntries = 10_000,
  ) {
    this.topics = typeof topics === 'string' ? [topics] : topics;
    for (const topic of this.topics) feed.subscribe(topic, () => this.entries.clear());
  }

  private generation(): number {
    return this.topics.reduce((sum, topic) => sum + this.feed.generation(topic), 0);
  }

  /**
   * The cached value of `key`, or `load()`'s; `keep` decides which loaded values are worth caching. A hit
   * is on the hot path of every authenticated request and every v2 lookup: where the feed cannot lag
   * (one process) it is answered at once, with no promise; elsewhere once the feed has caught up with
   * `freshness.asOf` (default: now), or at once for a read that confirms it afterwards (readConfirmedLater).
   */
  get(key: string, load: () => Promise<V>, keep: (value: V) => boolean = () => true, freshness?: Freshness): V | Promise<V> {
    const hit = this.hit(key);
    if (hit === undefined) return this.loadInto(key, load, keep);
    if (freshness?.confirmedLater) return hit;
    const caughtUp = this.feed.caughtUp(freshness?.asOf);
    if (!caughtUp) return hit;
    // A change heard meanwhile has emptied the entry; a feed that cannot tell is not trusted.
    return caughtUp.then(
      () => this.hit(key) ?? this.loadInto(key, load, keep),
      () => this.loadInto(key, load, keep),
    );
  }

  private hit(key: string): V | undefined {
    return this.feed.live ? this.entries.get(key) : undefined;
  }

  private async loadInto(key: string, load: () => Promise<V>, keep: (value: V) => boolean): Promise<V> {
    const generation = this.generation();
    const value = await load();
    if (this.feed.live && generation === this.generation() && keep(value)) {
      // Oldest first out: Map keeps insertion order.
      if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
      this.entries.set(key, value);
    }
    return value;
  }
}

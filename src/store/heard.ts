/**
 * How far this process has heard the database's notifications (decision record 0008): every commit
 * made before `upTo` (performance.now()) has been delivered. PostgreSQL sends what was signalled
 * before it reads a query ahead of that query's answer, so two kinds of answer move it:
 * - a round trip on the dedicated listening connection, which listens for the feed's whole life;
 * - a statement answered outside a transaction on a connection of the default pool, whose connections
 *   listen too. Such a connection hears only commits after its own LISTEN, so statements count only
 *   once `upTo` already covers the latest moment one of them began listening.
 */
export class Heard {
  private upTo = -Infinity;
  private newestListener = -Infinity;
  private statementsProve = true;
  private waiters: Array<{ asOf: number; resolve: () => void; reject: (error: unknown) => void }> = [];

  covers(asOf: number): boolean {
    return this.upTo >= asOf;
  }

  get waiting(): boolean {
    return this.waiters.length > 0;
  }

  /** Resolves once every commit before `asOf` is heard; rejects if `fail` comes first. */
  wait(asOf: number): Promise<void> {
    return new Promise((resolve, reject) => this.waiters.push({ asOf, resolve, reject }));
  }

  /** Those still waiting cannot be told (the listener is lost or stalled): they read the database instead. */
  fail(error: unknown): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const waiter of waiters) waiter.reject(error);
  }

  /** A connection of the default pool has just begun listening. */
  connectionListening(): void {
    this.newestListener = performance.now();
  }

  roundTripAnswered(sentAt: number): void {
    this.advance(sentAt);
  }

  /** `sentAt`: no later than the statement was sent. */
  statementAnswered(sentAt: number): void {
    if (this.statementsProve && this.upTo >= this.newestListener) this.advance(sentAt);
  }

  /** Statements may reach other backends than the ones that listened (a pooler in transaction mode): only round trips count. */
  distrustStatements(): void {
    this.statementsProve = false;
  }

  private advance(sentAt: number): void {
    if (sentAt <= this.upTo) return;
    this.upTo = sentAt;
    if (this.waiters.length === 0) return;
    const still = [];
    for (const waiter of this.waiters) {
      if (waiter.asOf <= sentAt) waiter.resolve();
      else still.push(waiter);
    }
    this.waiters = still;
  }
}

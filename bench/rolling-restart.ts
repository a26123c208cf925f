import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { Deployment, send, type Answer } from '../test/helpers/deployment.js';
import { freePort } from '../test/helpers/ports.js';
import { createBenchSchema, POSTGRES_URL, SECRET_KEY, writeResults, type Row } from './lib.js';

/*
 * Issue 49's acceptance: two cores and a gateway started from deploy/systemd's units behind nginx
 * running deploy/nginx's configuration, on PostgreSQL and Redis, under steady reads (16 connections,
 * GET /v4/employees/{id}) and writes (4 connections creating teams, each with an Idempotency-Key).
 * 1. The rolling restart as docs/deployment.md gives it: SIGTERM a core, wait for its exit, start it,
 *    wait for /readyz 200, then the next. Failed writes are not retried: the target is none.
 * 2. kill -9 of one core, then started again: every failed write is retried by its client with its key.
 * Then every write is looked up in PostgreSQL: acknowledged but missing (lost), or applied twice.
 */

const READERS = 16;
const WRITERS = 4;
// Load before and after the restarts, so that each starts and ends on a steady state.
const STEADY_MS = Number(process.env.BENCH_STEADY_SECONDS ?? 3) * 1000;
// A client's retries of a failed write: with its key, after a pause, as svc does.
const RETRY_PAUSE_MS = 200;
const RETRY_ATTEMPTS = 50;

interface Write {
  name: string;
  key: string;
  answers: Answer[];
}

const succeeded = (answer: Answer) => answer.status === 200 || answer.status === 201;
const describeAnswer = (answer: Answer) => `${answer.status} ${answer.body.slice(0, 120).replace(/\s+/g, ' ')}`;
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

class Load {
  readonly writes: Write[] = [];
  reads = 0;
  readonly failedReads: Answer[] = [];
  private running = true;
  private readonly loops: Array<Promise<void>>;

  constructor(
    private readonly deployment: Deployment,
    employeeId: string,
    readonly scenario: string,
    private readonly retryFailedWrites: boolean,
  ) {
    const read = async () => {
      while (this.running) {
        const answer = await this.send(`/v4/employees/${employeeId}`);
        this.reads++;
        if (!succeeded(answer)) this.failedReads.push(answer);
      }
    };
    const write = async () => {
      while (this.running) await this.write();
    };
    this.loops = [...Array.from({ length: READERS }, read), ...Array.from({ length: WRITERS }, write)];
  }

  private send(path: string, options: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Answer> {
    const { nginx, demo } = this.deployment;
    return send(`${nginx.url}${path}`, { agent: nginx.agent, ...options, headers: { 'x-api-key': demo.apiKeys.admin, ...options.headers } }).catch(
      (error: unknown) => ({ status: 0, headers: {}, body: `no answer: ${String(error)}` }),
    );
  }

  private async write(): Promise<void> {
    const write: Write = { name: `rolling ${this.scenario} ${randomUUID()}`, key: randomUUID(), answers: [] };
    this.writes.push(write);
    const body = JSON.stringify({ companyId: this.deployment.demo.companies.acme, name: write.name });
    for (let attempt = 1; attempt <= (this.retryFailedWrites ? RETRY_ATTEMPTS : 1); attempt++) {
      const answer = await this.send('/v4/teams', { method: 'POST', headers: { 'idempotency-key': write.key }, body });
      write.answers.push(answer);
      if (succeeded(answer) || answer.status === 409) return;
      await pause(RETRY_PAUSE_MS);
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }
}

/** Rows of `teams` per name written by `scenario`, from PostgreSQL itself. */
async function rowsByName(schema: string, scenario: string): Promise<Map<string, number>> {
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string; n: number }>(`SELECT name, count(*)::int AS n FROM ${schema}.teams WHERE name LIKE $1 GROUP BY name`, [`rolling ${scenario} %`]);
    return new Map(rows.map((row) => [row.name, row.n]));
  } finally {
    await client.end();
  }
}

interface Outcome {
  label: string;
  load: Load;
  exits: string;
  seconds: number;
  /** Reads and writes nginx sent to a second core (a refused connection, a reset, a 502/503 from the first). */
  moved: { reads: number; writes: number };
}

async function row({ label, load, exits, seconds, moved }: Outcome, schema: string, failures: string[]): Promise<Row> {
  const applied = await rowsByName(schema, load.scenario);
  const acknowledged = load.writes.filter((write) => write.answers.some(succeeded));
  const failedAttempts = load.writes.flatMap((write) => write.answers.filter((answer) => !succeeded(answer)));
  // Each write's name is new: a second application shows as a second row, or as 409 team_name_taken
  // to a retry (the unique name refusing it) where its key should have replayed the first answer.
  const twice = load.writes.filter((write) => (applied.get(write.name) ?? 0) > 1 || write.answers.some((answer) => answer.status === 409));
  const lost = acknowledged.filter((write) => !applied.has(write.name));
  const unanswered = load.writes.filter((write) => !write.answers.some(succeeded));
  const appliedUnacknowledged = unanswered.filter((write) => applied.has(write.name));
  for (const answer of [...load.failedReads, ...failedAttempts].slice(0, 5)) failures.push(`${label}: ${describeAnswer(answer)}`);
  return [
    label,
    load.reads + load.writes.reduce((sum, write) => sum + write.answers.length, 0),
    load.failedReads.length + failedAttempts.length,
    load.reads,
    load.failedReads.length,
    load.writes.length,
    acknowledged.length,
    failedAttempts.length,
    unanswered.length,
    lost.length,
    twice.length,
    appliedUnacknowledged.length,
    moved.reads,
    moved.writes,
    acknowledged.filter((write) => write.answers.some((answer) => answer.headers['idempotent-replayed'] === 'true')).length,
    exits,
    seconds.toFixed(1),
  ];
}

function movedSince(deployment: Deployment, from: number): Outcome['moved'] {
  const moved = deployment.nginx.accessLog().slice(from).filter((line) => /upstreams=\S+, /.test(line));
  return { reads: moved.filter((line) => line.startsWith('GET ')).length, writes: moved.filter((line) => line.startsWith('POST ')).length };
}

/** The documented rolling restart, one core after the other, under load. */
async function rollingRestart(deployment: Deployment, employeeId: string): Promise<Outcome> {
  const logFrom = deployment.nginx.accessLog().length;
  const started = performance.now();
  const load = new Load(deployment, employeeId, 'rolling', false);
  await pause(STEADY_MS);
  const exits: string[] = [];
  for (const index of [0, 1]) {
    exits.push(String(await deployment.cores[index]!.stop()));
    await deployment.startCore(index);
  }
  await pause(STEADY_MS);
  await load.stop();
  return { label: 'rolling restart (SIGTERM, exit, start, /readyz 200; each core)', load, exits: exits.join(', '), seconds: (performance.now() - started) / 1000, moved: movedSince(deployment, logFrom) };
}

/** kill -9 of one core under load, started again; clients retry failed writes with their keys. */
async function killNine(deployment: Deployment, employeeId: string): Promise<Outcome> {
  const logFrom = deployment.nginx.accessLog().length;
  const started = performance.now();
  const load = new Load(deployment, employeeId, 'kill', true);
  await pause(STEADY_MS);
  const core = deployment.cores[0]!;
  await core.kill9();
  const exit = core.child.signalCode ?? String(core.child.exitCode);
  await deployment.startCore(0);
  await pause(STEADY_MS);
  await load.stop();
  return { label: 'kill -9 of one core, started again; failed writes retried with their key', load, exits: exit, seconds: (performance.now() - started) / 1000, moved: movedSince(deployment, logFrom) };
}

const schema = await createBenchSchema();
const deployment = await Deployment.start(
  { DATABASE_URL: schema.url, REDIS_URL: process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379', REDIS_KEY_PREFIX: `svc:bench:${schema.name}:`, SVC_SECRET_KEY: SECRET_KEY },
  freePort,
);
const rows: Row[] = [];
const failures: string[] = [];
try {
  const list = await send(`${deployment.nginx.url}/v4/employees?limit=1`, { agent: deployment.nginx.agent, headers: { 'x-api-key': deployment.demo.apiKeys.admin } });
  const employeeId = (JSON.parse(list.body) as { data: { employees: Array<{ id: string }> } }).data.employees[0]!.id;
  rows.push(await row(await rollingRestart(deployment, employeeId), schema.name, failures));
  rows.push(await row(await killNine(deployment, employeeId), schema.name, failures));
} finally {
  await deployment.stop();
  await schema.drop();
}
console.log(
  await writeResults(
    'rolling-restart',
    'npm run bench -- rolling-restart',
    ['scenario', 'requests', 'failed requests', 'reads', 'failed reads', 'writes', 'writes acknowledged', 'failed write attempts', 'writes never acknowledged', 'writes lost', 'writes applied twice', 'applied without an acknowledgement', 'reads nginx moved to the other core', 'writes nginx moved to the other core', 'writes acknowledged by a replay', 'core exit codes', 'seconds'],
    rows,
    [
      `Two cores (\`svc-core@.service\`'s ExecStart with \`core.env\`, SHUTDOWN_DRAIN_MS 10 s, SHUTDOWN_GRACE_MS 10 s) and a gateway, behind nginx (Debian's package) running \`deploy/nginx/device-lifecycle-service.conf\` over https, on one PostgreSQL schema and Redis, all on loopback. Load through nginx: ${READERS} connections reading \`GET /v4/employees/{id}\` and ${WRITERS} creating teams (\`POST /v4/teams\`, a new name and Idempotency-Key each), from the benchmark process, for ${STEADY_MS / 1000} s before the first stop and after the last start.`,
      'Rolling restart: each core in turn gets SIGTERM; once it exits it is started again and waited for until /readyz answers 200, then the next (no other wait: the drain covers nginx\'s fail_timeout). A failed write is not retried. kill -9: one core is killed and started again; a client retries a failed write with its key (200 ms apart, at most 50 times).',
      'Writes lost: acknowledged (200/201) but not in PostgreSQL. Applied twice: two rows of its name, or a retry refused 409 team_name_taken (its first application found by the unique name instead of replayed by the key). Applied without an acknowledgement: in PostgreSQL although every answer its client got was an error. Moved: requests nginx’s access log shows sent to two cores (a keyed write is moved like a read, see the configuration). Acknowledged by a replay: the answer said `Idempotent-Replayed: true`, the write having been applied by an attempt whose answer was lost.',
      ...(failures.length > 0 ? ['', 'First failures:', ...failures.map((failure) => `- ${failure}`)] : []),
    ],
  ),
);

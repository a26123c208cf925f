import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { PLAN_CACHE_MODE } from '../../src/store/db.js';
import type { Sql } from '../../src/store/sql.js';

/*
 * A statement of the store run by pgbench, with nothing in front of it: the limit a database-bound path
 * could reach on this machine, measured beside the path itself (see bench/scale.ts).
 */

/** A parameter as pgbench's -D passes it: text PostgreSQL casts to the parameter's type. */
function parameterText(value: unknown): string {
  if (Array.isArray(value)) return `{${value.map((item) => `"${String(item).replace(/["\\]/g, (c) => `\\${c}`)}"`).join(',')}}`;
  return String(value);
}

/** A pgbench script of one statement ($n become :pn) and the -D options that give its parameters. */
export function pgbenchScript(statement: Sql): { script: string; defines: string[] } {
  const { text, values } = statement.toQuery();
  // A command of a pgbench script ends at its line's end.
  const script = `${text.replace(/\s+/g, ' ').replace(/\$(\d+)/g, ':p$1')};\n`;
  return { script, defines: values.flatMap((value, i) => ['-D', `p${i + 1}=${parameterText(value)}`]) };
}

export interface PgbenchResult {
  transactions: number;
  requestsPerSecond: number;
  /** Latencies in ms, from pgbench's log of every transaction. */
  p50: number;
  mean: number;
  p99: number;
}

/**
 * `statement` under `clients` connections for `seconds`, prepared once per connection as the store
 * prepares it and planned as the store plans it; `databaseUrl` names the database and its search_path.
 */
export async function runPgbench(databaseUrl: string, statement: Sql, clients: number, seconds: number): Promise<PgbenchResult> {
  const { script, defines } = pgbenchScript(statement);
  const url = new URL(databaseUrl);
  // Planned as the store's pool for the statement's planning plans it.
  const mode = statement.planning === 'auto' ? undefined : PLAN_CACHE_MODE[statement.planning];
  if (mode) url.searchParams.set('options', `${url.searchParams.get('options') ?? ''} -c plan_cache_mode=${mode}`.trim());
  const dir = await mkdtemp(join(tmpdir(), 'pgbench-'));
  try {
    await writeFile(join(dir, 'statement.sql'), script);
    const args = ['-n', '-M', 'prepared', '-c', String(clients), '-j', '2', '-T', String(seconds), '-l', `--log-prefix=${join(dir, 'tx')}`];
    // libpq reads %20 as a space, not the + URLSearchParams writes (which writes a + itself as %2B).
    const conninfo = url.toString().replace(/\+/g, '%20');
    await promisify(execFile)('pgbench', [...args, ...defines, '-f', join(dir, 'statement.sql'), conninfo]);
    // Each line of a log: client, transaction number, latency in µs, script, and when it ended.
    const latencies: number[] = [];
    for (const file of (await readdir(dir)).filter((name) => name.startsWith('tx'))) {
      for (const line of (await readFile(join(dir, file), 'utf8')).split('\n')) {
        const micros = line.split(' ')[2];
        if (micros !== undefined) latencies.push(Number(micros) / 1000);
      }
    }
    latencies.sort((a, b) => a - b);
    const at = (share: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * share))] ?? 0;
    const round = (ms: number) => Math.round(ms * 100) / 100;
    return {
      transactions: latencies.length,
      requestsPerSecond: Math.round(latencies.length / seconds),
      p50: round(at(0.5)),
      mean: round(latencies.reduce((sum, ms) => sum + ms, 0) / Math.max(1, latencies.length)),
      p99: round(at(0.99)),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

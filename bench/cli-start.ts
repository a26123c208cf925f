import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadMappings, defaultMappingsDir } from '../src/legacy/mappings.js';
import { writeResults } from './lib.js';

/*
 * Cold start of the built `svc` against bare node, in the same run: `--version` and an offline
 * `migrate audit` of the 22 v2 scopes with a v4 successor must stay within 3× of `node -e 0`.
 * Runs are interleaved so a busy moment of the machine hits every command alike.
 */

const RUNS = Number(process.env.BENCH_RUNS ?? 25);
const TARGET = 3;
const root = fileURLToPath(new URL('..', import.meta.url));
const SVC = 'dist/cli/svc.js';

// The benchmark measures what users run: the build.
try {
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'ignore' });
} catch {
  // tsc emits despite type errors elsewhere in the tree; the file check below is what matters.
}
if (!existsSync(new URL(`../${SVC}`, import.meta.url))) throw new Error(`${SVC} is missing: run npm run build`);

const withSuccessor = loadMappings(defaultMappingsDir())
  .scopes.filter((entry) => entry.capability !== undefined)
  .map((entry) => entry.name);

const commands: Array<{ label: string; args: string[]; exitCode: number }> = [
  { label: '`node -e 0` (bare node)', args: ['-e', '0'], exitCode: 0 },
  { label: '`svc --version`', args: [SVC, '--version'], exitCode: 0 },
  { label: `\`svc migrate audit --scopes <${withSuccessor.length} scopes>\``, args: [SVC, 'migrate', 'audit', '--scopes', withSuccessor.join(','), '--fail-on', 'none'], exitCode: 0 },
  { label: '`svc teams list --help` (loads the operation table: metadata only; for reference)', args: [SVC, 'teams', 'list', '--help'], exitCode: 0 },
];

function timeOnce(args: string[], exitCode: number): number {
  const started = process.hrtime.bigint();
  const result = spawnSync(process.execPath, args, { cwd: root, encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' } });
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  if (result.status !== exitCode) throw new Error(`${args.join(' ')} exited ${result.status}: ${result.stderr}`);
  return ms;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

for (const c of commands) timeOnce(c.args, c.exitCode); // warm the file cache, not the processes
const samples = commands.map(() => [] as number[]);
for (let run = 0; run < RUNS; run++) commands.forEach((c, i) => samples[i]!.push(timeOnce(c.args, c.exitCode)));

/** What a command loads: our own modules and the packages behind the rest (one extra run with a loader hook). */
function closureOf(args: string[]): { own: number; packages: string[] } {
  const result = spawnSync(process.execPath, ['--import', './bench/workers/loaded-modules.mjs', ...args], { cwd: root, encoding: 'utf8' });
  const line = result.stderr.split('\n').find((l) => l.startsWith('LOADED_MODULES '));
  if (!line) throw new Error(`${args.join(' ')} reported no modules: ${result.stderr}`);
  return JSON.parse(line.slice('LOADED_MODULES '.length)) as { own: number; packages: string[] };
}

const bare = median(samples[0]!);
const rows = commands.map((c, i) => {
  const m = median(samples[i]!);
  const ratio = m / bare;
  const verdict = i === 0 ? '' : i === 3 ? '(no target)' : ratio <= TARGET ? 'within target' : 'OVER TARGET';
  const closure = i === 0 ? undefined : closureOf(c.args);
  const loaded = closure ? `${closure.own} / ${closure.packages.length} (${closure.packages.join(', ') || 'none'})` : '';
  return [c.label, m.toFixed(1), Math.min(...samples[i]!).toFixed(1), ratio.toFixed(2), verdict, loaded];
});

const text = await writeResults('cli-start', 'npm run bench -- cli-start', ['command', 'median ms', 'min ms', '× bare node', 'target ≤ 3×', 'own modules / packages loaded'], rows, [
  `Median of ${RUNS} cold starts each (new process every time), runs interleaved across the commands, after one warm-up run of each.`,
  'The two targeted commands never load the operation table, zod, Fastify or pg: svc registers only the command it was asked for and',
  'imports its modules on demand; `migrate audit --scopes` reads the bundled mappings/*.yaml with the yaml parser alone.',
  'The operation table is metadata to svc: handlers load their domain, SQL and gateway modules at their first call (onDemand in',
  'src/operations/operation.ts), so an operation command loads the schemas and help, never the store, pg, Fastify or the gateway.',
]);
process.stdout.write(text);

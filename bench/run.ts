// First: the servers this process hosts run with svc-server's V8 settings.
import '../src/kit/runtime-flags.js';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { machine } from './lib.js';

/**
 * `npm run bench [-- name…]`: runs every benchmark (or the named ones); each writes
 * bench/results/<name>.md, and bench/RESULTS.md gathers them all, the latest of each.
 */
const available = readdirSync(new URL('.', import.meta.url))
  .filter((f) => f.endsWith('.ts') && !['lib.ts', 'run.ts'].includes(f))
  .map((f) => f.replace(/\.ts$/, ''));
const wanted = process.argv.slice(2);
const unknown = wanted.filter((w) => !available.includes(w));
if (unknown.length > 0) {
  console.error(`unknown benchmark(s): ${unknown.join(', ')}; available: ${available.join(', ')}`);
  process.exit(2);
}
for (const name of wanted.length > 0 ? wanted : available) {
  console.error(`== ${name}`);
  await import(`./${name}.ts`);
}

// Each result file opens with `# name`; in RESULTS.md it is a section under one heading. A pinned
// run (BENCH_PIN=1) writes <name>-pinned.md, which follows its benchmark's section.
const sections = available
  .flatMap((name) => [name, `${name}-pinned`])
  .map((name) => new URL(`./results/${name}.md`, import.meta.url))
  .filter((file) => existsSync(file))
  .map((file) => readFileSync(file, 'utf8').trim().replace(/^# /, '## '));
writeFileSync(
  new URL('./RESULTS.md', import.meta.url),
  [
    '# Benchmark results',
    '',
    `- Command: \`npm run bench\` (every benchmark; \`npm run bench -- <name>\` runs one and refreshes its section)`,
    `- Machine: ${machine()}`,
    `- Assembled: ${new Date().toISOString().slice(0, 10)}${process.env.BENCH_SECONDS ? `, BENCH_SECONDS=${process.env.BENCH_SECONDS}` : ''}`,
    '- Each section gives its own command, date, medians (p50) and ratios; autocannon always runs in a separate process; each URL gets 1 s of unmeasured load before its first run (BENCH_WARMUP_SECONDS).',
    '',
    ...sections.flatMap((section) => [section, '']),
  ].join('\n'),
);
console.error('== wrote bench/RESULTS.md');

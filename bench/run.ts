import { readdirSync } from 'node:fs';

/** `npm run bench [-- name…]`: runs every benchmark (or the named ones); each writes bench/results/<name>.md. */
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

// `npm start`: builds dist/ only when a source is newer than the last build, saying so, then serves
// the demo on the embedded store (arguments after `npm start --` go to `svc-server serve`).
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync, utimesSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import process from 'node:process';
import { fileURLToPath, pathToFileURL, URL } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const SOURCES = ['src', 'cli', 'package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json'];
// Written by every build (tsconfig.build.json's incremental state), touched after one started here.
const STAMP = join(root, 'dist/.build.tsbuildinfo');

/** The newest modification time under `path`; a directory's own counts, so a deleted file counts too. */
function newestUnder(path) {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = stat.mtimeMs;
  for (const entry of readdirSync(path, { withFileTypes: true, recursive: true })) {
    newest = Math.max(newest, statSync(join(entry.parentPath, entry.name)).mtimeMs);
  }
  return newest;
}

const say = (text) => process.stderr.write(`${text}\n`);
const built = existsSync(STAMP) ? statSync(STAMP).mtimeMs : 0;
const changed = SOURCES.map((source) => join(root, source)).filter((path) => existsSync(path) && newestUnder(path) > built);
if (changed.length > 0) {
  say(built === 0 ? 'Building dist/ (TypeScript, about a minute the first time)…' : 'Sources changed since the last build: rebuilding dist/ (only what changed)…');
  const started = Date.now();
  try {
    execFileSync(process.execPath, [createRequire(import.meta.url).resolve('typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
  } catch {
    say('The build failed (above); nothing was started.');
    process.exit(1);
  }
  const now = new Date();
  utimesSync(STAMP, now, now);
  say(`Built in ${((Date.now() - started) / 1000).toFixed(0)} s.`);
}
say('Starting svc-server serve --demo (the demo data is loaded on a first start)…');
process.argv = [process.argv[0], join(root, 'dist/src/main.js'), 'serve', '--demo', ...process.argv.slice(2)];
await import(pathToFileURL(join(root, 'dist/src/main.js')).href);

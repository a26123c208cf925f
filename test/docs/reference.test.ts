import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { GENERATE_COMMAND, REFERENCE_DIR, referencePages } from '../../scripts/reference-pages.js';

/*
 * docs/reference/ is written by scripts/generate-reference.ts from the code. These tests regenerate
 * every page in memory and fail, naming the page and the command, when the committed copy differs.
 */

const ROOT = resolve(import.meta.dirname, '../..');
const stale = (file: string) => `${REFERENCE_DIR}/${file} is stale: run ${GENERATE_COMMAND}`;

/** Where two texts first part, as a line of each, for the failure message. */
function firstDifference(committed: string, generated: string): string {
  const a = committed.split('\n');
  const b = generated.split('\n');
  const at = a.findIndex((line, i) => line !== b[i]);
  const line = at < 0 ? a.length : at;
  return `first difference at line ${line + 1}:\n  committed: ${a[line] ?? '(end of file)'}\n  generated: ${b[line] ?? '(end of file)'}`;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => join(entry.parentPath, entry.name));
}

describe('the generated reference (docs/reference/)', () => {
  let pages: Map<string, string>;
  beforeAll(async () => {
    pages = await referencePages();
  }, 180_000);

  it('is what the generator writes from the code today', () => {
    for (const [file, generated] of pages) {
      const path = join(ROOT, REFERENCE_DIR, file);
      if (!existsSync(path)) expect.fail(`${REFERENCE_DIR}/${file} is missing: run ${GENERATE_COMMAND}`);
      const committed = readFileSync(path, 'utf8');
      if (committed !== generated) expect.fail(`${stale(file)}\n${firstDifference(committed, generated)}`);
    }
  });

  it('holds no page the generator does not write', () => {
    const extra = readdirSync(join(ROOT, REFERENCE_DIR)).filter((file) => !pages.has(file));
    expect(extra, `not generated (remove them, or run ${GENERATE_COMMAND}, which does)`).toEqual([]);
  });

  it('lists every environment variable that src/ and cli/ read by name', () => {
    const configuration = pages.get('configuration.md')!;
    const read = new Set<string>();
    for (const file of [...sourceFiles('src'), ...sourceFiles('cli')]) {
      for (const match of readFileSync(file, 'utf8').matchAll(/\benv(?:\.([A-Z][A-Z0-9_]*)\b|\[['"]([A-Z][A-Z0-9_]*)['"]\])/g)) read.add(match[1] ?? match[2]!);
    }
    expect(read.size).toBeGreaterThan(0);
    const undocumented = [...read].filter((name) => !configuration.includes(`| \`${name}\` |`));
    expect(undocumented, 'read by the code but absent from docs/reference/configuration.md: describe them in src/kit/config.ts or cli/environment.ts').toEqual([]);
  });
});

import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultMappingsDir, loadMappings, type Mappings } from '../../src/legacy/mappings.js';

/** An edit of one map file: `from` must occur exactly once. */
export type MapEdit = [file: string, from: string, to: string];

/** The shipped maps loaded with textual edits applied to a temporary copy (removed again). */
export function loadShippedWith(...edits: MapEdit[]): Mappings {
  const dir = mkdtempSync(join(tmpdir(), 'v2-maps-'));
  try {
    cpSync(defaultMappingsDir(), dir, { recursive: true });
    for (const [file, from, to] of edits) {
      const text = readFileSync(join(dir, file), 'utf8');
      if (text.split(from).length !== 2) throw new Error(`"${from}" does not occur exactly once in ${file}`);
      writeFileSync(join(dir, file), text.replace(from, to));
    }
    return loadMappings(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { REFERENCE_DIR, referencePages } from './reference-pages.js';

/* `npm run docs:reference`: writes docs/reference/ from the code; test/docs/reference.test.ts fails while a page is stale. */

const dir = resolve(import.meta.dirname, '..', REFERENCE_DIR);
const pages = await referencePages();
mkdirSync(dir, { recursive: true });
// A page the generator no longer writes would otherwise linger, describing code that is gone.
for (const file of readdirSync(dir)) if (file.endsWith('.md') && !pages.has(file)) rmSync(join(dir, file));
for (const [file, text] of pages) writeFileSync(join(dir, file), text);
process.stdout.write(`Wrote ${[...pages.keys()].map((file) => `${REFERENCE_DIR}/${file}`).join(', ')}\n`);

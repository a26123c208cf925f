import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { anchorsOf, outsideFences } from '../helpers/markdown.js';

/*
 * The docs as a reader follows them: every relative link of the README and of docs/ reaches a file
 * (and a heading, when it names one), and every page under docs/ is reachable from the README.
 */

const ROOT = normalize(join(import.meta.dirname, '../..'));
const DOC_PAGES = readdirSync(join(ROOT, 'docs'), { recursive: true })
  .map(String)
  .filter((path) => path.endsWith('.md'))
  .map((path) => join('docs', path))
  .sort();

interface Link {
  from: string;
  /** A repository path, or '' for the page itself. */
  path: string;
  anchor: string | undefined;
}

/** The relative links of a Markdown page (inline `[text](target)` outside code); web and mail links are left out. */
function linksOf(page: string): Link[] {
  const text = outsideFences(join(ROOT, page)).replace(/`[^`\n]*`/g, '');
  return [...text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)]
    .map((match) => match[1]!)
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target))
    .map((target) => {
      const [file = '', anchor] = target.split('#');
      return { from: page, path: file === '' ? '' : relative(ROOT, join(ROOT, dirname(page), decodeURIComponent(file))), anchor };
    });
}

const target = (link: Link) => (link.path === '' ? link.from : link.path);

describe('the documentation’s links', () => {
  it('reach a file, and a heading where they name one', () => {
    const broken = ['README.md', 'CHANGELOG.md', ...DOC_PAGES].flatMap((page) =>
      linksOf(page).flatMap((link) => {
        const file = target(link);
        if (file.startsWith('..') || !existsSync(join(ROOT, file))) return [`${page}: ${file} does not exist`];
        if (link.anchor === undefined || !file.endsWith('.md')) return [];
        return anchorsOf(join(ROOT, file)).has(link.anchor) ? [] : [`${page}: ${file} has no heading #${link.anchor}`];
      }),
    );
    expect(broken).toEqual([]);
  });

  it('lead from the README to every page under docs/', () => {
    const reached = new Set(['README.md']);
    const queue = ['README.md'];
    for (let page = queue.shift(); page !== undefined; page = queue.shift()) {
      for (const link of linksOf(page)) {
        const file = target(link);
        const pages = existsSync(join(ROOT, file)) && statSync(join(ROOT, file)).isDirectory() ? DOC_PAGES.filter((doc) => dirname(doc) === file) : [file];
        for (const next of pages.filter((p) => p.endsWith('.md') && !reached.has(p) && existsSync(join(ROOT, p)))) {
          reached.add(next);
          queue.push(next);
        }
      }
    }
    expect(DOC_PAGES.filter((page) => !reached.has(page))).toEqual([]);
  });
});

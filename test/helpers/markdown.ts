import { readFileSync } from 'node:fs';

/** GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces as hyphens. */
export const headingAnchor = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');

/** The file's text outside fenced code blocks, where Markdown neither makes headings nor links. */
export const outsideFences = (file: string) =>
  readFileSync(file, 'utf8')
    .split(/^```.*$/m)
    .filter((_part, index) => index % 2 === 0)
    .join('\n');

/** The anchors of a Markdown file's headings; a repeated heading gets -1, -2… as GitHub numbers them. */
export function anchorsOf(file: string): Set<string> {
  const anchors = new Set<string>();
  for (const match of outsideFences(file).matchAll(/^#{1,6}\s+(.+)$/gm)) {
    const anchor = headingAnchor(match[1]!);
    let unique = anchor;
    for (let n = 1; anchors.has(unique); n++) unique = `${anchor}-${n}`;
    anchors.add(unique);
  }
  return anchors;
}

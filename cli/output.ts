/*
 * Rendering of API data: `table` for people (fits the terminal), `text` for scripts (tab-separated,
 * nothing cut), `json` the envelope as the API sent it. Data goes to stdout, messages to stderr.
 */

export const DATA_FORMATS = ['table', 'json', 'text'] as const;
export type DataFormat = (typeof DATA_FORMATS)[number];

type Row = Record<string, unknown>;

/** Colour only on a terminal, and never when NO_COLOR is set (https://no-color.org). */
export function useColour(stream: NodeJS.WriteStream, env: NodeJS.ProcessEnv = process.env): boolean {
  return stream.isTTY === true && !env.NO_COLOR;
}

export function style(on: boolean, code: 'bold' | 'red' | 'yellow' | 'dim', text: string): string {
  const codes = { bold: [1, 22], red: [31, 39], yellow: [33, 39], dim: [2, 22] } as const;
  return on ? `\x1b[${codes[code][0]}m${text}\x1b[${codes[code][1]}m` : text;
}

/** The terminal's width, else $COLUMNS, else 100. */
export function terminalWidth(stream: NodeJS.WriteStream = process.stdout, env: NodeJS.ProcessEnv = process.env): number {
  if (stream.isTTY && stream.columns) return stream.columns;
  const fromEnv = Number(env.COLUMNS);
  return Number.isInteger(fromEnv) && fromEnv > 20 ? fromEnv : 100;
}

const isRecord = (value: unknown): value is Row => typeof value === 'object' && value !== null && !Array.isArray(value);
const isScalar = (value: unknown) => value === null || ['string', 'number', 'boolean'].includes(typeof value);

/** One cell: scalars as they are, lists of scalars joined, anything else as compact JSON. */
export function cell(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value.replace(/\s+/g, ' ');
  if (Array.isArray(value) && value.every(isScalar)) return value.map(String).join(', ');
  if (isScalar(value)) return String(value);
  return JSON.stringify(value);
}

/** The part of the data worth a table: the first list of records, with the scalar fields beside it. */
function splitData(data: unknown): { heading: Row; records: Row[] | undefined; list: unknown[] | undefined } {
  if (Array.isArray(data)) return { heading: {}, records: data.every(isRecord) ? data : undefined, list: data };
  if (!isRecord(data)) return { heading: { value: data }, records: undefined, list: undefined };
  const listKey = Object.keys(data).find((key) => Array.isArray(data[key]) && (data[key] as unknown[]).every(isRecord) && (data[key] as unknown[]).length > 0)
    ?? Object.keys(data).find((key) => Array.isArray(data[key]));
  if (listKey === undefined) return { heading: data, records: undefined, list: undefined };
  const list = data[listKey] as unknown[];
  // Paging fields are said on stderr ("Showing 1–20 of 57"), not between the records.
  const heading = Object.fromEntries(Object.entries(data).filter(([key]) => key !== listKey && !PAGING.includes(key)));
  return { heading, records: list.every(isRecord) ? (list as Row[]) : undefined, list };
}

const PAGING = ['page', 'pageSize', 'totalCount', 'nextCursor'];

const truncate = (text: string, width: number) => (text.length <= width ? text : `${text.slice(0, Math.max(0, width - 1))}…`);

/** Columns that fit `width`: each at most its widest cell; the widest shrink first; trailing ones dropped if need be. */
export function renderTable(records: Row[], width: number, colour = false): { text: string; hidden: string[] } {
  if (records.length === 0) return { text: '(none)\n', hidden: [] };
  const columns = [...new Set(records.flatMap((r) => Object.keys(r)))];
  const cells = records.map((r) => columns.map((c) => cell(r[c])));
  const natural = columns.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i]!.length)));
  const GAP = 2;
  // Long values are cut at a column's cap; columns that still do not fit are dropped from the right.
  const CAP = 36;
  const widths = natural.map((w) => Math.min(w, CAP));
  let shown = 1;
  let used = widths[0]!;
  while (shown < columns.length && used + GAP + widths[shown]! <= width) used += GAP + widths[shown++]!;
  widths[0] = Math.min(widths[0]!, width);
  const line = (values: string[]) =>
    values
      .slice(0, shown)
      .map((v, i) => truncate(v, widths[i]!).padEnd(widths[i]!))
      .join(' '.repeat(GAP))
      .trimEnd();
  const header = line(columns.map((c) => c.toUpperCase()));
  const text = [style(colour, 'bold', header), ...cells.map(line)].join('\n');
  return { text: `${text}\n`, hidden: columns.slice(shown) };
}

/** Greedy word wrap; a word longer than the room is cut into pieces. */
function wrap(text: string, room: number): string[] {
  const lines = [''];
  for (const word of text.split(' ')) {
    const last = lines[lines.length - 1]!;
    if (last === '' || last.length + 1 + word.length <= room) lines[lines.length - 1] = last ? `${last} ${word}` : word;
    else lines.push(word);
    while (lines[lines.length - 1]!.length > room) {
      const long = lines.pop()!;
      lines.push(long.slice(0, room), long.slice(room));
    }
  }
  return lines;
}

/** A single record: one field per line, long values wrapped under their column rather than cut. */
function keyValueLines(row: Row, width: number, colour: boolean): string {
  const entries = Object.entries(row);
  const keyWidth = Math.max(0, ...entries.map(([k]) => k.length));
  const room = Math.max(20, width - keyWidth - 2);
  return entries
    .map(([k, v]) => {
      const text = cell(v);
      const chunks = wrap(text, room);
      return chunks.map((chunk, i) => `${i === 0 ? style(colour, 'bold', k.padEnd(keyWidth)) : ' '.repeat(keyWidth)}  ${chunk}`.trimEnd()).join('\n');
    })
    .map((line) => `${line}\n`)
    .join('');
}

export interface Rendered {
  stdout: string;
  /** Said on stderr: what the table left out. */
  notes: string[];
}

export function renderData(data: unknown, format: Exclude<DataFormat, 'json'>, width: number, colour = false): Rendered {
  const { heading, records, list } = splitData(data);
  if (format === 'text') {
    const head = Object.entries(heading).map(([k, v]) => `${k}\t${cell(v)}\n`).join('');
    const body = records
      ? records.map((r) => `${Object.values(r).map(cell).join('\t')}\n`).join('')
      : (list ?? []).map((v) => `${cell(v)}\n`).join('');
    return { stdout: head + body, notes: [] };
  }
  const head = Object.keys(heading).length > 0 ? keyValueLines(heading, width, colour) : '';
  if (records) {
    const table = renderTable(records, width, colour);
    const notes = table.hidden.length > 0 ? [`${table.hidden.length} column(s) hidden to fit ${width} columns (${table.hidden.join(', ')}); --format json shows all`] : [];
    return { stdout: `${head}${head && '\n'}${table.text}`, notes };
  }
  const body = list ? list.map((v) => `${cell(v)}\n`).join('') || '(none)\n' : '';
  return { stdout: head + body, notes: [] };
}

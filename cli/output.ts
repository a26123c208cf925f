import stringWidth from 'string-width';
import { usageError } from './exit-codes.js';
import { useColour, type CliIo } from './io.js';

/*
 * Rendering of API data: `table` for people (fits the terminal), `text` for scripts (tab-separated,
 * nothing cut), `json` the envelope as the API sent it. Data goes to stdout, messages to stderr.
 */

export const DATA_FORMATS = ['table', 'json', 'text'] as const;
export type DataFormat = (typeof DATA_FORMATS)[number];

/** What the migrate reports print: `text` is the table report never cut nor coloured, markdown pastes as a ticket. */
export const REPORT_FORMATS = ['table', 'json', 'text', 'markdown'] as const;

/** --format, checked against what the command prints (the first is its default). */
export function chooseFormat<F extends string>(given: string | undefined, allowed: readonly [F, ...F[]]): F {
  const format = given ?? allowed[0];
  if (!(allowed as readonly string[]).includes(format)) throw usageError(`--format ${format}: use one of ${allowed.join(', ')}`);
  return format as F;
}

/** No width to fit: output that is not a terminal is never cut. */
export const UNBOUNDED = Number.POSITIVE_INFINITY;

type Row = Record<string, unknown>;

export function style(on: boolean, code: 'bold' | 'red' | 'yellow' | 'dim', text: string): string {
  const codes = { bold: [1, 22], red: [31, 39], yellow: [33, 39], dim: [2, 22] } as const;
  return on ? `\x1b[${codes[code][0]}m${text}\x1b[${codes[code][1]}m` : text;
}

/**
 * The width tables fit: the terminal's, else $COLUMNS when set, else none: piped into a file or
 * another program, cells are printed whole rather than cut to a width nobody sees.
 */
export function terminalWidth({ stdout, env }: Pick<CliIo, 'stdout' | 'env'>): number {
  if (stdout.isTTY && stdout.columns) return stdout.columns;
  const fromEnv = Number(env.COLUMNS);
  if (Number.isInteger(fromEnv) && fromEnv > 20) return fromEnv;
  return stdout.isTTY ? 100 : UNBOUNDED;
}

/** The width and colour of a report's `table` (fitted to the terminal) or `text` (whole, plain) layout. */
export function reportLayout(format: 'table' | 'text', io: Pick<CliIo, 'stdout' | 'env'>): { width: number; colour: boolean } {
  return format === 'text' ? { width: UNBOUNDED, colour: false } : { width: terminalWidth(io), colour: useColour(io.stdout, io.env) };
}

const isRecord = (value: unknown): value is Row => typeof value === 'object' && value !== null && !Array.isArray(value);
const isScalar = (value: unknown) => value === null || ['string', 'number', 'boolean'].includes(typeof value);

/** One value for `text` output (scripts): scalars as they are, lists of scalars joined, anything else as compact JSON. */
export function cell(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value.replace(/\s+/g, ' ');
  if (Array.isArray(value) && value.every(isScalar)) return value.map(String).join(', ');
  if (isScalar(value)) return String(value);
  return JSON.stringify(value);
}

/** One value for people (table cells, wrapped lines): nested records as "key: value" pairs, never JSON. */
function humanCell(value: unknown): string {
  if (isRecord(value)) {
    return Object.entries(value)
      .filter(([, v]) => v !== null && v !== undefined)
      .map(([k, v]) => `${k}: ${humanCell(v)}`)
      .join(', ');
  }
  if (Array.isArray(value) && !value.every(isScalar)) return value.map(humanCell).join('; ');
  return cell(value);
}

/** Columns a text takes on a terminal: a wide character such as 山 counts two, a combining mark none. */
export const displayWidth = (text: string): number => stringWidth(text);

const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/** Splits `text` after the longest start that fits `width` display columns, never inside a character. */
function splitAtWidth(text: string, width: number): [string, string] {
  let used = 0;
  let end = 0;
  for (const { segment, index } of graphemes.segment(text)) {
    used += stringWidth(segment);
    if (used > width) break;
    end = index + segment.length;
  }
  return [text.slice(0, end), text.slice(end)];
}

/** At most `width` display columns, ending in an ellipsis when anything was cut. */
export function truncate(text: string, width: number): string {
  return stringWidth(text) <= width ? text : `${splitAtWidth(text, Math.max(0, width - 1))[0]}…`;
}

const padEnd = (text: string, width: number) => text + ' '.repeat(Math.max(0, width - stringWidth(text)));

/** The part of the data worth a table: the first list of records, with the scalar fields beside it. */
function splitData(data: unknown): { heading: Row; listKey: string | undefined; records: Row[] | undefined; list: unknown[] | undefined } {
  if (Array.isArray(data)) return { heading: {}, listKey: undefined, records: data.every(isRecord) ? data : undefined, list: data };
  if (!isRecord(data)) return { heading: { value: data }, listKey: undefined, records: undefined, list: undefined };
  const listKey = Object.keys(data).find((key) => Array.isArray(data[key]) && (data[key] as unknown[]).every(isRecord) && (data[key] as unknown[]).length > 0)
    ?? Object.keys(data).find((key) => Array.isArray(data[key]));
  if (listKey === undefined) return { heading: data, listKey, records: undefined, list: undefined };
  const list = data[listKey] as unknown[];
  // Paging fields are said on stderr ("Showing 1–20 of 57"), not between the records.
  const heading = Object.fromEntries(Object.entries(data).filter(([key]) => key !== listKey && !PAGING.includes(key)));
  return { heading, listKey, records: list.every(isRecord) ? (list as Row[]) : undefined, list };
}

const PAGING = ['page', 'pageSize', 'totalCount', 'nextCursor'];

/** A field of a record, or a nested one by dotted path (assignment.displayName). */
function valueAt(record: Row, path: string): unknown {
  let value: unknown = record;
  for (const key of path.split('.')) value = isRecord(value) ? value[key] : undefined;
  return value;
}

/**
 * The declared columns first, in their order of importance (those the records have), then
 * every other field in record order, except a nested record a declared path already reads from.
 */
function orderColumns(records: Row[], declared: readonly string[]): string[] {
  const fields = [...new Set(records.flatMap((r) => Object.keys(r)))];
  const present = declared.filter((path) => fields.includes(path.split('.')[0]!));
  const covered = new Set(present.map((path) => path.split('.')[0]));
  return [...present, ...fields.filter((field) => !covered.has(field))];
}

/** A column's heading: its field, or for a dotted path the field it reads from unless two paths read from one field. */
function headerOf(column: string, order: readonly string[]): string {
  const field = column.split('.')[0]!;
  const shared = order.filter((c) => c.split('.')[0] === field).length > 1;
  return (shared ? column : field).toUpperCase();
}

/** The least room worth giving a column cut to fit; with less, the column is hidden instead. */
const MIN_CUT_WIDTH = 12;

/**
 * Columns that fit `width` display columns, most important (declared) first: each at most its
 * widest cell and at most 36 wide, long values cut with an ellipsis. The first column that does
 * not fit whole takes the room left when that is worth it; the columns after it are hidden.
 * With an UNBOUNDED width every column shows whole.
 */
export function renderTable(records: Row[], width: number, colour = false, columns: readonly string[] = []): { text: string; hidden: string[] } {
  if (records.length === 0) return { text: '(none)\n', hidden: [] };
  const order = orderColumns(records, columns);
  const headers = order.map((c) => headerOf(c, order));
  const cells = records.map((r) => order.map((c) => humanCell(valueAt(r, c))));
  const GAP = 2;
  const CAP = width === UNBOUNDED ? UNBOUNDED : 36;
  const widths = headers.map((h, i) => Math.min(CAP, Math.max(stringWidth(h), ...cells.map((row) => stringWidth(row[i]!)))));
  widths[0] = Math.min(widths[0]!, width);
  let shown = 1;
  let used = widths[0]!;
  while (shown < order.length && used + GAP + widths[shown]! <= width) used += GAP + widths[shown++]!;
  const room = width - used - GAP;
  if (shown < order.length && room >= MIN_CUT_WIDTH) widths[shown++] = room;
  const line = (values: string[]) =>
    values
      .slice(0, shown)
      .map((v, i) => padEnd(truncate(v, widths[i]!), widths[i]!))
      .join(' '.repeat(GAP))
      .trimEnd();
  const text = [style(colour, 'bold', line(headers)), ...cells.map(line)].join('\n');
  return { text: `${text}\n`, hidden: order.slice(shown) };
}

/** Greedy word wrap to `room` display columns; a word longer than the room is cut into pieces. */
function wrap(text: string, room: number): string[] {
  const lines = [''];
  for (const word of text.split(' ')) {
    const last = lines[lines.length - 1]!;
    if (last === '' || stringWidth(last) + 1 + stringWidth(word) <= room) lines[lines.length - 1] = last ? `${last} ${word}` : word;
    else lines.push(word);
    while (stringWidth(lines[lines.length - 1]!) > room) {
      const [head, rest] = splitAtWidth(lines.pop()!, room);
      lines.push(head, rest);
    }
  }
  return lines;
}

/**
 * A record, one field per line: long values wrapped under their column rather than cut, a
 * nested record indented beneath its name, a list of records as "- " items.
 */
function keyValueLines(row: Row, width: number, colour: boolean, indent = ''): string[] {
  const entries = Object.entries(row);
  const keyWidth = Math.max(0, ...entries.map(([k]) => stringWidth(k)));
  const room = Math.max(20, width - indent.length - keyWidth - 2);
  return entries.flatMap(([k, v]) => {
    if (isRecord(v) && Object.keys(v).length > 0) return [`${indent}${style(colour, 'bold', k)}`, ...keyValueLines(v, width, colour, `${indent}  `)];
    if (Array.isArray(v) && v.length > 0 && v.every(isRecord)) {
      const items = v.map((item) => keyValueLines(item, width, colour, `${indent}  `).map((l, i) => (i === 0 ? `${indent}- ${l.slice(indent.length + 2)}` : l)));
      return [`${indent}${style(colour, 'bold', k)}`, ...items.flat()];
    }
    return wrap(humanCell(v), room).map((chunk, i) => `${indent}${i === 0 ? style(colour, 'bold', padEnd(k, keyWidth)) : ' '.repeat(keyWidth)}  ${chunk}`.trimEnd());
  });
}

export interface Rendered {
  stdout: string;
  /** Said on stderr: what the table left out. */
  notes: string[];
}

/** `columns`: per list field of the data, the record fields its table shows first (the operation's `columns`). */
export function renderData(
  data: unknown,
  format: Exclude<DataFormat, 'json'>,
  width: number,
  colour = false,
  columns: Readonly<Record<string, readonly string[]>> = {},
): Rendered {
  const { heading, listKey, records, list } = splitData(data);
  if (format === 'text') {
    const head = Object.entries(heading).map(([k, v]) => `${k}\t${cell(v)}\n`).join('');
    const body = records
      ? records.map((r) => `${Object.values(r).map(cell).join('\t')}\n`).join('')
      : (list ?? []).map((v) => `${cell(v)}\n`).join('');
    return { stdout: head + body, notes: [] };
  }
  const head = Object.keys(heading).length > 0 ? keyValueLines(heading, width, colour).map((l) => `${l}\n`).join('') : '';
  // Beside other fields, the list is named: "usage" under a legacy key, "subOrders" under an order.
  const title = head && listKey ? `\n${style(colour, 'bold', listKey)}\n` : '';
  if (records) {
    const table = renderTable(records, width, colour, listKey === undefined ? [] : columns[listKey]);
    const notes = table.hidden.length > 0 ? [`${table.hidden.length} column(s) hidden to fit ${width} columns (${table.hidden.join(', ')}); --format json shows all`] : [];
    return { stdout: `${head}${title}${table.text}`, notes };
  }
  const body = list ? list.map((v) => `${humanCell(v)}\n`).join('') || '(none)\n' : '';
  return { stdout: `${head}${title}${body}`, notes: [] };
}

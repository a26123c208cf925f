import { readFileSync } from 'node:fs';
import { Option, type Command } from 'commander';
import { fullDescription, type AnyOperation } from '../src/operations/operation.js';
import { fillPath, pathParams } from '../src/kit/path-template.js';
import { buildInput, describeInput, describeIssues, type FieldFlag } from './args.js';
import { confirmDestructive } from './confirm.js';
import { usageError } from './exit-codes.js';
import type { Envelope } from './http.js';
import { readStdin, useColour, type CliIo } from './io.js';
import { renderData, style, terminalWidth, type DataFormat } from './output.js';
import type { Session } from './session.js';

/*
 * `svc <resource> <action> [id] [flags]`: one command per row of the operation table, its words
 * from the row's `cli`, its flags from the row's input schema.
 */

/** A list operation: the v4 envelope out, page and limit in. */
function listKeyOf(op: AnyOperation): string | undefined {
  const shape = (op.output as unknown as { shape?: Record<string, unknown> }).shape;
  if (!shape || !('totalCount' in shape) || !('nextCursor' in shape)) return undefined;
  return Object.keys(shape).find((key) => !['page', 'pageSize', 'totalCount', 'nextCursor'].includes(key));
}

function optionFor(flag: FieldFlag): Option[] {
  // Choices the description does not already name; none for free text.
  const unnamed = flag.choices.some((choice) => !flag.description.includes(choice));
  const choices = unnamed && flag.choices.length <= 12 ? `(one of: ${flag.choices.join(', ')})` : '';
  const text = [flag.description, choices, flag.required ? '[required]' : ''].filter(Boolean).join(' ');
  switch (flag.kind) {
    case 'boolean':
      return [new Option(`--${flag.flag}`, text), new Option(`--no-${flag.flag}`, `sets ${flag.field} to false`)];
    case 'list':
      return [
        new Option(`--${flag.flag} <values>`, `${text}; comma-separated or repeated`).argParser((value: string, previous?: string[]) => [
          ...(previous ?? []),
          value,
        ]),
      ];
    case 'json':
      // Accepted only so the refusal can name --input instead of "unknown option".
      return [new Option(`--${flag.flag} [value]`).hideHelp()];
    default:
      return [new Option(`--${flag.flag} <${flag.kind === 'number' ? 'n' : 'value'}>`, text)];
  }
}

async function readDocument(source: string, io: CliIo): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = source === '-' ? await readStdin(io) : readFileSync(source, 'utf8');
  } catch (error) {
    throw usageError(`--input ${source}: cannot be read: ${(error as Error).message}`);
  }
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (error) {
    throw usageError(`--input ${source}: is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof document !== 'object' || document === null || Array.isArray(document)) {
    throw usageError(`--input ${source}: must be a JSON object of the request's fields`);
  }
  return document as Record<string, unknown>;
}

/** The request of a call: path parameters filled in, the rest as query (GET) or JSON body. */
export function requestOf(op: AnyOperation, input: Record<string, unknown>) {
  const { path, rest: fields } = fillPath(op.path, input);
  const rest = Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
  if (op.method === 'GET') {
    return { method: op.method, path, query: Object.fromEntries(Object.entries(rest).map(([k, v]) => [k, String(v)])) };
  }
  return { method: op.method, path, body: rest };
}

/** Reads flags and --input into the operation's input, checked by its schema before any request. */
async function inputFromCommandLine(op: AnyOperation, id: string | undefined, values: Record<string, unknown>, io: CliIo): Promise<Record<string, unknown>> {
  const params = pathParams(op.path);
  const flags = describeInput(op.input, params);
  const document = typeof values.input === 'string' ? await readDocument(values.input, io) : {};
  const input = buildInput(flags, values, document, id === undefined ? {} : { [params[0]!]: id });
  const checked = op.input.safeParse(input);
  if (!checked.success) {
    const problems = describeIssues(checked.error, flags);
    throw usageError(`Invalid input to ${op.cli}: ${problems.join('; ')}`, problems);
  }
  return input;
}

interface ListData {
  [key: string]: unknown;
  page: number;
  pageSize: number;
  totalCount: number;
}

/** --all: every page in turn, at the largest page size unless --limit says otherwise. */
async function walkPages(session: Session, op: AnyOperation, key: string, input: Record<string, unknown>): Promise<Envelope & { ok: true }> {
  const records: unknown[] = [];
  const requestIds: unknown[] = [];
  const { stderr } = session.io;
  const progress = stderr.isTTY === true;
  let first: ListData | undefined;
  for (let page = 1; ; page++) {
    const envelope = await session.call(requestOf(op, { ...input, limit: input.limit ?? 50, page, cursor: undefined }));
    const data = envelope.data as ListData;
    first ??= data;
    requestIds.push(envelope.meta.requestId);
    const batch = (data[key] as unknown[]) ?? [];
    records.push(...batch);
    if (progress) stderr.write(`\rFetching ${key}: ${records.length} of ${data.totalCount}`);
    if (batch.length === 0 || records.length >= data.totalCount) break;
  }
  if (progress) stderr.write('\r\x1b[2K');
  return {
    ok: true,
    data: { ...first, [key]: records, page: 1, pageSize: records.length, nextCursor: null },
    meta: { requestIds, pages: requestIds.length },
  };
}

function printEnvelope(io: CliIo, envelope: Envelope & { ok: true }, format: DataFormat, columns: AnyOperation['columns'] = {}): void {
  if (format === 'json') {
    io.stdout.write(`${JSON.stringify(envelope, null, 2)}\n`);
    return;
  }
  const rendered = renderData(envelope.data, format, terminalWidth(io), useColour(io.stdout, io.env), columns);
  io.stdout.write(rendered.stdout);
  for (const note of rendered.notes) io.stderr.write(`${style(useColour(io.stderr, io.env), 'dim', note)}\n`);
}

async function runOperation(session: Session, op: AnyOperation, id: string | undefined, values: Record<string, unknown>): Promise<void> {
  const input = await inputFromCommandLine(op, id, values, session.io);
  await confirmDestructive(session, op, input, values.yes === true);
  const key = listKeyOf(op);
  const envelope = key && values.all ? await walkPages(session, op, key, input) : await session.call(requestOf(op, input));
  printEnvelope(session.io, envelope, session.format, op.columns);
  const data = envelope.data as ListData;
  if (key && !values.all && Array.isArray(data[key])) {
    const shown = (data[key] as unknown[]).length;
    const before = (data.page - 1) * data.pageSize;
    if (data.totalCount > before + shown) {
      const range = shown === 0 ? 'none' : `${before + 1}–${before + shown}`;
      session.io.stderr.write(`Showing ${range} of ${data.totalCount} ${key}; --page ${data.page + 1} for the next page, --all for every one\n`);
    }
  }
}

/** Adds every operation's command under its resource words (`company addresses list`). */
export function registerOperationCommands(program: Command, operations: readonly AnyOperation[], session: () => Session): void {
  const groups = new Map<string, Command>();
  const groupOf = (words: string[]): Command => {
    let parent = program;
    words.forEach((word, i) => {
      const key = words.slice(0, i + 1).join(' ');
      let group = groups.get(key);
      if (!group) {
        group = parent.command(word).description(`${words.slice(0, i + 1).join(' ')} commands`);
        groups.set(key, group);
      }
      parent = group;
    });
    return parent;
  };
  for (const op of operations) {
    const words = op.cli.split(' ');
    const params = pathParams(op.path);
    const flags = describeInput(op.input, params);
    const command = groupOf(words.slice(0, -1)).command(words[words.length - 1]!).summary(op.title).description(fullDescription(op));
    if (params[0]) command.argument(`<${params[0]}>`, `${params[0]} of the ${words[0]} record`);
    for (const flag of flags) for (const option of optionFor(flag)) command.addOption(option);
    const jsonOnly = flags.filter((f) => f.kind === 'json').map((f) => f.field);
    if (op.method !== 'GET') {
      command.option('--input <file>', 'the JSON body from a file, or - for stdin; flags override its fields');
    }
    if (jsonOnly.length > 0) {
      command.addHelpText('after', `\n${jsonOnly.join(', ')}: objects or lists of objects, accepted only in the JSON body (--input <file> or --input -).`);
    }
    if (listKeyOf(op)) command.option('--all', 'fetch every page (progress on stderr when it is a terminal)');
    if (op.destructive) command.option('-y, --yes', 'run without asking: it changes or removes data, so svc asks first on a terminal and needs --yes elsewhere');
    command.action(async (...args: unknown[]) => {
      const values = (args[params[0] ? 1 : 0] ?? {}) as Record<string, unknown>;
      await runOperation(session(), op, params[0] ? (args[0] as string) : undefined, values);
    });
  }
}

import { createInterface } from 'node:readline';
import type { AnyOperation } from '../src/operations/operation.js';
import { fillPath, pathParams } from '../src/kit/path-template.js';
import { CliError, EXIT, usageError } from './exit-codes.js';
import type { InputStream } from './io.js';
import type { Session } from './session.js';

/*
 * A destructive operation (it overwrites or removes data: the table's `destructive`, MCP's
 * destructiveHint) runs once confirmed: on a terminal svc shows what it changes and asks; elsewhere
 * --yes says so up front, so a script neither hangs on a question nor runs one unseen.
 */

/** The first line typed; empty when stdin ends first. */
async function firstLine(stdin: InputStream): Promise<string> {
  const lines = createInterface({ input: stdin, crlfDelay: Infinity });
  try {
    const { value } = await lines[Symbol.asyncIterator]().next();
    return typeof value === 'string' ? value : '';
  } finally {
    lines.close();
  }
}

/** Returns once the call may go ahead: confirmed by --yes, or by "y" on a terminal. */
export async function confirmDestructive(session: Session, op: AnyOperation, input: Record<string, unknown>, confirmed: boolean): Promise<void> {
  if (!op.destructive || confirmed) return;
  const { io } = session;
  const terminal = io.stdin?.isTTY === true ? io.stdin : undefined;
  if (!terminal) throw usageError(`${op.cli} changes or removes data: confirm it with --yes (svc asks only when stdin is a terminal)`);
  if (op.confirmWith) {
    const { data } = await session.call({ method: 'GET', path: fillPath(op.confirmWith.path, input).path });
    io.stderr.write(`${op.confirmWith.describe(data)}\n`);
  }
  const [param] = pathParams(op.path);
  io.stderr.write(`${op.title}${param ? ` ${String(input[param])}` : ''}? [y/N] `);
  if (!/^y(es)?$/i.test((await firstLine(terminal)).trim())) {
    throw new CliError(EXIT.failure, `Not confirmed: ${op.cli} did nothing`, 'not_confirmed');
  }
}

import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { run } from '../../cli/run.js';
import type { TestApp } from '../helpers/harness.js';

/*
 * `svc` in a test: `svc` runs a command line in this process, with its own streams, environment
 * and config directory, so the server in this process answers it; `svcBin` runs the built client
 * as its own process, as a user does, for what only a process shows (exit, EPIPE, the real stdin).
 */

export interface SvcResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** An environment without the developer's own svc settings: a fresh config directory, no SVC_API_KEY, no colour. */
export function isolatedEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const { SVC_API_KEY: _key, ...rest } = process.env;
  return { ...rest, XDG_CONFIG_HOME: mkdtempSync(join(tmpdir(), 'svc-config-')), NO_COLOR: '1', COLUMNS: '200', ...extra };
}

/** What a run wrote to one of its streams; no terminal, as when svc's output is piped. */
class CapturedOutput extends Writable {
  private readonly chunks: Buffer[] = [];

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: () => void): void {
    this.chunks.push(chunk);
    done();
  }

  get text(): string {
    return Buffer.concat(this.chunks).toString('utf8');
  }
}

/**
 * Runs `svc <args>` in this process; `stdin` is all its standard input (none: empty), typed on a
 * terminal with `terminal` (what a question to the user needs).
 */
export async function svc(args: string[], env: NodeJS.ProcessEnv, stdin?: string, { terminal = false } = {}): Promise<SvcResult> {
  const stdout = new CapturedOutput();
  const stderr = new CapturedOutput();
  const input = Object.assign(Readable.from(stdin === undefined ? [] : [Buffer.from(stdin)]), { isTTY: terminal });
  const code = await run(['node', 'svc', ...args], { stdout, stderr, env, fetch: globalThis.fetch, stdin: input });
  return { code, stdout: stdout.text, stderr: stderr.text };
}

/** The built client (global-setup builds it), run as its own process. */
export const SVC_BIN = 'dist/cli/svc.js';

/** Runs the built `svc <args>` as a process; asynchronous, so a server in this process keeps answering. */
export function svcBin(args: string[], env: NodeJS.ProcessEnv, stdin?: string): Promise<SvcResult> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [SVC_BIN, ...args], { env, encoding: 'utf8', timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr });
    });
    child.stdin?.end(stdin ?? '');
  });
}

/** Listens on 127.0.0.1 on a free port and returns the base address. */
export async function listen(t: TestApp): Promise<string> {
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  return `http://127.0.0.1:${(t.app.server.address() as { port: number }).port}`;
}

export interface SilentServer {
  url: string;
  /** Connections accepted so far: proof the request reached the server. */
  readonly accepted: number;
  close(): Promise<void>;
}

/** A test server listening on a loopback port; close() cuts the connections in `sockets` and stops it. */
export async function onLoopback(server: Server, sockets: ReadonlySet<Socket>): Promise<{ url: string; close(): Promise<void> }> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * A loopback socket that accepts connections and never answers; with `headers`, it sends a
 * status line and headers and then stalls in the body.
 */
export async function silentServer(answer: 'nothing' | 'headers' = 'nothing'): Promise<SilentServer> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  const server = createServer((socket) => {
    accepted++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    if (answer === 'headers') {
      socket.once('data', () => socket.write('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{"ok":'));
    }
  });
  const { url, close } = await onLoopback(server, sockets);
  return {
    url,
    get accepted() {
      return accepted;
    },
    close,
  };
}

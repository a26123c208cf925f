import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestApp } from '../helpers/harness.js';

/*
 * `svc` run as a user runs it: its own process, its own config directory, against a server
 * listening on loopback. Asynchronous, so the server in the test process keeps answering.
 */

export interface SvcResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

// The built client (global-setup builds it), so a cell costs a plain node start, not a TypeScript compile.
const ENTRY = ['dist/cli/svc.js'];

/** An environment without the developer's own svc settings: a fresh config directory, no SVC_API_KEY, no colour. */
export function isolatedEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const { SVC_API_KEY: _key, ...rest } = process.env;
  return { ...rest, XDG_CONFIG_HOME: mkdtempSync(join(tmpdir(), 'svc-config-')), NO_COLOR: '1', COLUMNS: '200', ...extra };
}

export function svc(args: string[], env: NodeJS.ProcessEnv, stdin?: string): Promise<SvcResult> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [...ENTRY, ...args], { env, encoding: 'utf8', timeout: 60_000 }, (error, stdout, stderr) => {
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
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    get accepted() {
      return accepted;
    },
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/*
 * `svc-server` as an operator runs it: its own process, on a fresh embedded data directory,
 * its pino log lines (stdout) collected so that a test can wait for what it says.
 */

const ENTRY = ['--import', 'tsx', 'src/main.ts'];

export interface LogLine {
  msg?: string;
  level?: number;
  [field: string]: unknown;
}

export const freshDataDir = () => mkdtempSync(join(tmpdir(), 'svc-server-'));

/** Runs a one-shot command to completion; rejects on a non-zero exit. */
export function runCommand(args: string[], env: NodeJS.ProcessEnv = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...ENTRY, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('exit', (code) => (code === 0 ? resolve(stdout) : reject(new Error(`svc-server ${args.join(' ')} exited ${code}: ${stderr}`))));
  });
}

export class ServerProcess {
  readonly logs: LogLine[] = [];
  readonly exited: Promise<number | null>;
  url = '';
  private readonly child: ChildProcess;
  private stdoutRest = '';
  private readonly waiters: Array<() => void> = [];

  constructor(args: string[], env: NodeJS.ProcessEnv = {}) {
    this.child = spawn(process.execPath, [...ENTRY, 'serve', '--port', '0', ...args], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.exited = new Promise((resolve) => this.child.on('exit', (code) => resolve(code)));
    this.child.stdout!.on('data', (chunk: Buffer) => this.onOutput(chunk.toString()));
    this.child.stderr!.on('data', (chunk: Buffer) => this.onOutput(chunk.toString()));
  }

  private onOutput(text: string): void {
    const lines = (this.stdoutRest + text).split('\n');
    this.stdoutRest = lines.pop() ?? '';
    for (const line of lines) {
      const serving = /^Serving (http:\/\/\S+)/.exec(line);
      if (serving) this.url = serving[1]!;
      else if (line.startsWith('{')) this.logs.push(JSON.parse(line) as LogLine);
    }
    for (const wake of this.waiters.splice(0)) wake();
  }

  /** Resolves once `condition` holds on the output so far; fails if the process exits first. */
  async until(condition: () => boolean, what: string): Promise<void> {
    while (!condition()) {
      const exited = await Promise.race([
        new Promise<false>((resolve) => this.waiters.push(() => resolve(false))),
        this.exited.then(() => true),
      ]);
      if (exited && !condition()) throw new Error(`svc-server exited before ${what}; its log:\n${JSON.stringify(this.logs, null, 1)}`);
    }
  }

  async started(): Promise<string> {
    await this.until(() => this.url !== '', 'it served');
    return this.url;
  }

  /** The reader of stdout stops reading, as a stalled log collector does: the pipe fills up. */
  stopReadingStdout(): void {
    this.child.stdout!.pause();
  }

  /** The reader of stdout goes away: the server's writes there fail with EPIPE. */
  closeStdout(): void {
    this.child.stdout!.destroy();
  }

  signal(signal: NodeJS.Signals): void {
    this.child.kill(signal);
  }

  /** For cleanup after a failed test. */
  kill(): void {
    if (this.child.exitCode === null) this.child.kill('SIGKILL');
  }
}

import { spawn, spawnSync, type ChildProcess, type SpawnSyncReturns } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { untilHealthy } from './healthz.js';
import { freePort } from './ports.js';

/*
 * `svc-server` as an operator runs it: the build (dist/, which global-setup makes), each command a
 * process of its own. `serve` runs with --json: its summary line, then its pino log lines on stdout,
 * collected so that a test can wait for what it says. A server started from another command line
 * (a systemd unit's ExecStart, `svc-server gateway`) is the same ServerProcess, its stdout in a file.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** package.json's `svc-server` bin: a plain node start, with no TypeScript to compile first. */
export const SVC_SERVER = join(ROOT, 'dist/src/main.js');

export interface LogLine {
  msg?: string;
  level?: number;
  [field: string]: unknown;
}

export interface ServeSummary {
  url: string;
  store: string;
  demo?: { apiKeys: Record<string, string>; legacyKeys: Record<string, string>; companies: Record<string, string> };
}

export interface ServeOptions {
  /** How long `serve` may take to listen; past it, it is killed and the start fails. */
  startupMs?: number;
  /** node's own flags. */
  nodeArgs?: string[];
  /** A command that runs node, the server's command line after it (a benchmark's valgrind, counting instructions). */
  launcher?: string[];
  /**
   * Log at this level, the lines to /dev/null (the benchmarks' way of logging as deployed). Nothing is
   * read then: `logs` stays empty, and the summary is the URL once /healthz answers.
   */
  logToDevNullAt?: string;
}

export const freshDataDir = () => mkdtempSync(join(tmpdir(), 'svc-server-'));

const commandEnv = (env: NodeJS.ProcessEnv) => ({ ...process.env, ...env });

/** Runs a one-shot command to completion, whatever its exit code. */
export function runCommandSync(args: string[], env: NodeJS.ProcessEnv = {}, input?: string): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, [SVC_SERVER, ...args], { cwd: ROOT, env: commandEnv(env), input, encoding: 'utf8', timeout: 60_000 });
}

/** Runs a one-shot command to completion without blocking this process; rejects on a non-zero exit. */
export function runCommand(args: string[], env: NodeJS.ProcessEnv = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SVC_SERVER, ...args], { cwd: ROOT, env: commandEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('exit', (code) => (code === 0 ? resolve(stdout) : reject(new Error(`svc-server ${args.join(' ')} exited ${code}: ${stderr}`))));
  });
}

/** A server running as a child process, stopped as a supervisor stops it, or killed. */
export class ServerProcess {
  readonly exited: Promise<number | null>;
  /** The pino lines of `serve --json` (start); empty for a launched command, whose stdout goes to a file. */
  readonly logs: LogLine[] = [];
  /** The `--json` summary line, once the server listens. */
  private listening: ServeSummary | undefined;
  private stdoutRest = '';
  private stderrText = '';
  private readonly waiters: Array<() => void> = [];

  /** Starts `serve --json` with `args` and `env` (LOG_LEVEL silent, SHUTDOWN_DRAIN_MS 0 unless given); resolves once it listens. */
  static async start(args: string[], env: NodeJS.ProcessEnv = {}, options: ServeOptions = {}): Promise<ServerProcess> {
    const { startupMs = 90_000, nodeArgs = [], launcher = [], logToDevNullAt } = options;
    const port = await freePort();
    const [command, ...commandArgs] = [...launcher, process.execPath, ...nodeArgs, SVC_SERVER, 'serve', '--json', '--port', String(port), ...args];
    const server = new ServerProcess(
      spawn(command!, commandArgs, {
        cwd: ROOT,
        // No drain before a stop unless a test asks: stopping many servers must not wait for balancers that are not there.
        env: commandEnv({ LOG_LEVEL: logToDevNullAt ?? 'silent', SHUTDOWN_DRAIN_MS: '0', ...env }),
        stdio: ['ignore', logToDevNullAt ? 'ignore' : 'pipe', 'pipe'],
      }),
    );
    // A server that never came up is not left running behind the failure.
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      server.child.kill('SIGKILL');
    }, startupMs);
    try {
      if (logToDevNullAt) {
        const url = `http://127.0.0.1:${port}`;
        if (await untilHealthy(url, server.child, { timeoutMs: startupMs })) server.listening = { url, store: 'not read (logs to /dev/null)' };
      } else {
        await server.until(() => server.listening !== undefined, 'it listened').catch(() => undefined);
      }
    } finally {
      clearTimeout(timer);
    }
    if (server.listening === undefined) {
      await server.kill9();
      const why = timedOut ? `did not listen within ${startupMs} ms` : `exited with ${server.child.exitCode} before listening`;
      throw new Error(`serve ${why}: ${server.stderrText}`);
    }
    return server;
  }

  /**
   * A command line run as given, with exactly `env` (nothing inherited): a unit's ExecStart with its
   * environment file, or `svc-server gateway`. It answers at `url`; its stdout goes to a file, read by output().
   */
  static launch(command: string[], { url, env, cwd = ROOT }: { url: string; env: NodeJS.ProcessEnv; cwd?: string }): ServerProcess {
    const logFile = join(mkdtempSync(join(tmpdir(), 'svc-process-')), 'stdout.log');
    const stdout = openSync(logFile, 'w');
    const [file, ...args] = command;
    try {
      return new ServerProcess(spawn(file!, args, { cwd, env, stdio: ['ignore', stdout, 'pipe'] }), url, logFile);
    } finally {
      closeSync(stdout);
    }
  }

  private constructor(
    readonly child: ChildProcess,
    private readonly address?: string,
    private readonly logFile?: string,
  ) {
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
    child.stdout?.on('data', (chunk: Buffer) => this.onStdout(chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (this.stderrText += chunk.toString()));
  }

  /** SIGTERM, and the exit code once the graceful shutdown is done. */
  stop(): Promise<number | null> {
    this.child.kill('SIGTERM');
    return this.exited;
  }

  /** SIGKILL, as an OOM killer or a power cut would: no drain, no flush. Also the cleanup after a failed test. */
  async kill9(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
    await this.exited;
  }

  /** Where it answers: the launched command's address, or what `serve` said. */
  get url(): string {
    return this.address ?? this.summary.url;
  }

  /** Resolves once `probe` answers 200; fails with the process's output if it exits or takes over `timeoutMs`. */
  async ready({ probe = '/readyz', timeoutMs = 60_000 }: { probe?: string; timeoutMs?: number } = {}): Promise<this> {
    if (!(await untilHealthy(this.url, this.child, { timeoutMs, probe }))) throw new Error(`not ready at ${this.url}${probe}:\n${this.output()}`);
    return this;
  }

  /** Its stderr and the end of its log, for failure messages. */
  output(): string {
    const log = this.logFile ? readFileSync(this.logFile, 'utf8') : this.logs.map((line) => JSON.stringify(line)).join('\n');
    return `stderr:\n${this.stderrText}\nlog (end):\n${log.slice(-4000)}`;
  }

  private onStdout(text: string): void {
    const lines = (this.stdoutRest + text).split('\n');
    this.stdoutRest = lines.pop() ?? '';
    for (const line of lines) {
      if (!line.startsWith('{')) continue;
      const parsed = JSON.parse(line) as LogLine;
      // Every pino line has a level; the summary has none.
      if (parsed.level !== undefined) this.logs.push(parsed);
      else this.listening ??= parsed as unknown as ServeSummary;
    }
    for (const wake of this.waiters.splice(0)) wake();
  }

  /** The `--json` summary line. */
  get summary(): ServeSummary {
    if (!this.listening) throw new Error('serve has not listened yet');
    return this.listening;
  }

  /** What the process wrote to stderr so far (for failure messages). */
  stderr(): string {
    return this.stderrText;
  }

  /** Resolves once `condition` holds on the output so far; fails if the process exits first. */
  async until(condition: () => boolean, what: string): Promise<void> {
    while (!condition()) {
      const exited = await Promise.race([
        new Promise<false>((resolve) => this.waiters.push(() => resolve(false))),
        this.exited.then(() => true),
      ]);
      if (exited && !condition()) {
        throw new Error(`svc-server exited before ${what}; its stderr:\n${this.stderrText}\nits log:\n${JSON.stringify(this.logs, null, 1)}`);
      }
    }
  }

  /** The reader of stdout stops reading, as a stalled log collector does: the pipe fills up. */
  stopReadingStdout(): void {
    this.child.stdout!.pause();
  }

  /** The reader of stdout goes away: the server's writes there fail with EPIPE. */
  closeStdout(): void {
    this.child.stdout!.destroy();
  }

}

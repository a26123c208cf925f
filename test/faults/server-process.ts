import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { untilHealthy } from '../helpers/healthz.js';
import { freePort } from '../helpers/ports.js';

/*
 * `svc-server serve` as a child process, as an operator runs it: the fault tests kill it,
 * the soak benchmark samples its memory. Logs are off; stdout carries the --json summary only.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface ServeSummary {
  url: string;
  store: string;
  demo?: { apiKeys: Record<string, string>; legacyKeys: Record<string, string>; companies: Record<string, string> };
}

export interface ServerProcess {
  child: ChildProcess;
  summary: ServeSummary;
  /** What the process wrote to stderr so far (for failure messages). */
  stderr(): string;
  /** SIGKILL, as an OOM killer or a power cut would: no drain, no flush. */
  kill9(): Promise<void>;
  /** SIGTERM and wait for the graceful exit. */
  stop(): Promise<number | null>;
}


export interface ServeOptions {
  startupMs?: number;
  /** Run the build (`npm run build`), as `npm start` does, instead of the TypeScript through tsx. */
  compiled?: boolean;
  /** node's own flags. */
  nodeArgs?: string[];
  /**
   * Log at this level, the lines to /dev/null (the benchmarks' way of logging as deployed). The lines
   * share stdout with the summary, so none is read: the summary is the URL once /healthz answers.
   */
  logLevel?: string;
  /** A command that runs node, the server's command line after it (a benchmark's valgrind, counting instructions). */
  launcher?: string[];
}

/** Starts `serve --json` with `args` and `env`; resolves with its summary once it listens. */
export async function startServeProcess(
  args: string[],
  env: NodeJS.ProcessEnv,
  { startupMs = 90_000, compiled = false, nodeArgs = [], logLevel, launcher = [] }: ServeOptions = {},
): Promise<ServerProcess> {
  const port = await freePort();
  const entry = compiled ? ['dist/src/main.js'] : ['--import', 'tsx', 'src/main.ts'];
  const [command, ...commandArgs] = [...launcher, process.execPath, ...nodeArgs, ...entry, 'serve', '--json', '--port', String(port), ...args];
  const child = spawn(command!, commandArgs, {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: logLevel ?? 'silent', ...env },
    stdio: ['ignore', logLevel ? 'ignore' : 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const summary = await new Promise<ServeSummary>((resolve, reject) => {
    // A server that never came up is not left running behind the failure.
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`serve did not start within ${startupMs} ms: ${stderr}`));
    }, startupMs);
    const started = (parsed: ServeSummary) => {
      clearTimeout(timer);
      resolve(parsed);
    };
    const url = `http://127.0.0.1:${port}`;
    if (logLevel) {
      void untilHealthy(url, child, { timeoutMs: startupMs }).then(
        (healthy) => healthy && started({ url, store: 'not read (logs to /dev/null)' }),
      );
    }
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      try {
        started(JSON.parse(stdout) as ServeSummary);
      } catch {
        // The summary is not complete yet.
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code} before listening: ${stderr}`));
    });
  });
  return {
    child,
    summary,
    stderr: () => stderr,
    async kill9() {
      child.kill('SIGKILL');
      await exited;
    },
    async stop() {
      child.kill('SIGTERM');
      return exited;
    },
  };
}

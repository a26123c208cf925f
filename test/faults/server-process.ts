import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
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
}

/** Starts `serve --json` with `args` and `env`; resolves with its summary once it listens. */
export async function startServeProcess(
  args: string[],
  env: NodeJS.ProcessEnv,
  { startupMs = 90_000, compiled = false, nodeArgs = [] }: ServeOptions = {},
): Promise<ServerProcess> {
  const port = await freePort();
  const entry = compiled ? ['dist/src/main.js'] : ['--import', 'tsx', 'src/main.ts'];
  const child = spawn(process.execPath, [...nodeArgs, ...entry, 'serve', '--json', '--port', String(port), ...args], {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: 'silent', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const summary = await new Promise<ServeSummary>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start within ${startupMs} ms: ${stderr}`)), startupMs);
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      try {
        const parsed = JSON.parse(stdout) as ServeSummary;
        clearTimeout(timer);
        resolve(parsed);
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

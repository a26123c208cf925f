import type { ChildProcess } from 'node:child_process';

/**
 * Waits for a server started as a child process: polls `${url}/healthz` (or `probe`) until it answers 200
 * (or a status `accept` takes). False once the process has exited (no point polling a dead server) or
 * `timeoutMs` has passed.
 */
export async function untilHealthy(
  url: string,
  server: ChildProcess,
  { timeoutMs, intervalMs = 100, probe = '/healthz', accept = (status: number) => status === 200 }: { timeoutMs: number; intervalMs?: number; probe?: string; accept?: (status: number) => boolean },
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  const exited = () => server.exitCode !== null || server.signalCode !== null;
  while (!exited() && Date.now() < deadline) {
    // A server that accepts but never answers must not hold the wait past its deadline.
    const healthy = await fetch(`${url}${probe}`, { redirect: 'manual', signal: AbortSignal.timeout(Math.max(1, deadline - Date.now())) }).then(
      (response) => accept(response.status),
      () => false,
    );
    if (healthy) return true;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  return false;
}

import { execFileSync } from 'node:child_process';
import { danaOf } from '../test/faults/support.js';
import { ServerProcess } from '../test/helpers/server-process.js';
import { seriesValue } from '../test/helpers/prometheus.js';
import { measure, openMcpSession, writeResults, type Measurement } from './lib.js';

/*
 * Soak: v4 REST, v2 through the gateway and MCP tools/call at once against one server process (the
 * build of `svc-server serve --demo`, embedded store) for a fixed time (SOAK_SECONDS, default 60).
 * Every answer must be a 2xx; the server's memory is scraped from its /metrics every second.
 */

const SECONDS = Number(process.env.SOAK_SECONDS ?? 60);
const CONNECTIONS = 5;

// The build of the sources as they are now: a stale one would measure other code.
execFileSync('npm', ['run', 'build', '--silent'], { stdio: 'inherit' });
const server = await ServerProcess.start(['--demo', '--data-dir', 'memory://'], { SVC_SECRET_KEY: 'c'.repeat(64) });
try {
  const { url, demo } = server.summary;
  const v4Key = { 'x-api-key': demo!.apiKeys.admin! };
  const dana = await danaOf(url, demo!.apiKeys.admin!);
  const mcp = await openMcpSession(`${url}/mcp`, v4Key, { name: 'get_employee', arguments: { id: dana } });

  const samples: Array<{ rss: number; heap: number }> = [];
  const gauge = (text: string, name: string) => seriesValue(text, name) ?? NaN;
  const sampler = setInterval(() => {
    void fetch(`${url}/metrics`)
      .then((r) => r.text())
      .then((text) => samples.push({ rss: gauge(text, 'process_resident_memory_bytes'), heap: gauge(text, 'nodejs_heap_size_used_bytes') }));
  }, 1000);

  const kinds: Array<[string, Promise<Measurement>]> = [
    ['v4 REST GET /v4/employees/{id}', measure(`${url}/v4/employees/${dana}`, v4Key, SECONDS, CONNECTIONS)],
    ['v2 GET /v2/employees/{id} (gateway in the core’s process)', measure(`${url}/v2/employees/${dana}`, { 'x-api-key': demo!.legacyKeys.full! }, SECONDS, CONNECTIONS)],
    ['MCP tools/call get_employee (session open)', measure(`${url}/mcp`, mcp.callHeaders, SECONDS, CONNECTIONS, { body: mcp.body })],
  ];
  const results = await Promise.all(kinds.map(([, m]) => m));
  clearInterval(sampler);

  const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(1);
  const third = Math.floor(samples.length / 3);
  const mean = (list: number[]) => list.reduce((a, b) => a + b, 0) / list.length;
  const memory = (what: 'rss' | 'heap') => {
    const first = mean(samples.slice(0, third).map((s) => s[what]));
    const last = mean(samples.slice(-third).map((s) => s[what]));
    return { first, last, growth: ((last - first) / first) * 100 };
  };
  const rss = memory('rss');
  const heap = memory('heap');
  const errors = results.reduce((sum, m) => sum + m.errors, 0);
  const text = await writeResults(
    'soak',
    `SOAK_SECONDS=${SECONDS} npm run bench -- soak`,
    ['traffic', 'req/s', 'p50 ms', 'p99 ms', 'errors'],
    [
      ...kinds.map(([label], i) => [label, results[i]!.requestsPerSecond, results[i]!.p50, results[i]!.p99, results[i]!.errors]),
      ['memory: RSS MiB, mean of first third → last third', `${mib(rss.first)} → ${mib(rss.last)}`, '', '', `${rss.growth.toFixed(1)} %`],
      ['memory: V8 heap used MiB, first third → last third', `${mib(heap.first)} → ${mib(heap.last)}`, '', '', `${heap.growth.toFixed(1)} %`],
    ],
    [
      `${SECONDS} s, three autocannon processes at once (${CONNECTIONS} connections each) against one \`svc-server serve --demo\` process on the embedded store, on loopback.`,
      `Memory scraped from the server's /metrics every second (${samples.length} samples); the last column of the memory rows is the growth from the first third of the run to the last.`,
      `Errors (any non-2xx or failed request) across all traffic: ${errors}; the run fails unless it is 0.`,
    ],
  );
  process.stdout.write(text);
  if (errors > 0) throw new Error(`soak: ${errors} errors`);
} finally {
  await server.stop();
}

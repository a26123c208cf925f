import { readFileSync } from 'node:fs';

/*
 * Load worker for requests whose bodies must differ (each create_order needs its own device):
 * `node --import tsx bench/workers/post-loop.ts <spec.json>` posts the listed bodies in turn with
 * a fixed concurrency for a fixed time and prints one JSON result. Runs in its own process so
 * that the server under test has its event loop to itself.
 */
interface Spec {
  url: string;
  headers: Record<string, string>;
  bodies: unknown[];
  seconds: number;
  connections: number;
}

const spec = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as Spec;
const latencies: number[] = [];
let next = 0;
let errors = 0;
const deadline = performance.now() + spec.seconds * 1000;

async function worker() {
  while (performance.now() < deadline && next < spec.bodies.length) {
    const body = spec.bodies[next++];
    const started = performance.now();
    const response = await fetch(spec.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...spec.headers },
      body: JSON.stringify(body),
    });
    await response.arrayBuffer();
    latencies.push(performance.now() - started);
    if (response.status >= 300) errors++;
  }
}

const started = performance.now();
await Promise.all(Array.from({ length: spec.connections }, worker));
const elapsed = (performance.now() - started) / 1000;
latencies.sort((a, b) => a - b);
const at = (q: number) => Math.round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0);
const mean = latencies.reduce((sum, latency) => sum + latency, 0) / Math.max(1, latencies.length);
console.log(
  JSON.stringify({
    requests: latencies.length,
    requestsPerSecond: Math.round(latencies.length / elapsed),
    p50: at(0.5),
    p99: at(0.99),
    mean: Math.round(mean * 100) / 100,
    errors,
    exhausted: next >= spec.bodies.length,
  }),
);

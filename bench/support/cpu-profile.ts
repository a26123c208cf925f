/*
 * Where a server's main thread spends a request, from the CPU profile `node --cpu-prof` writes: each
 * sample's own frame put in one of a few layers (logging, pg, Fastify, node's HTTP, our code…), counted
 * over a window of load only, so the server's start and warm-up are left out.
 */

/** The part of V8's .cpuprofile read here. */
export interface CpuProfile {
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string } }>;
  /** µs on the monotonic clock, which process.hrtime reads in every process of the machine. */
  startTime: number;
  endTime: number;
  samples: number[];
  /** µs from the previous sample (the first: from startTime). */
  timeDeltas: number[];
}

export const LAYERS = [
  'logging (pino, the request line)',
  'socket writes (writev)',
  'pg, pg-protocol, pg-pool',
  'node: HTTP, streams, net, timers',
  'Fastify and its parts',
  'MCP SDK',
  'zod, prom-client',
  'other packages',
  'our code (the reference’s own, for it)',
  'other native calls (JSON, crypto…)',
  'V8 and node unattributed (program)',
  'garbage collection',
] as const;

export type Layer = (typeof LAYERS)[number] | 'idle';

const SCRIPT_LAYERS: Array<[RegExp, Layer]> = [
  [/\/node_modules\/(pino[^/]*|sonic-boom|thread-stream|fast-redact|on-exit-leak-free)\//, 'logging (pino, the request line)'],
  [/\/node_modules\/(pg|pg-[a-z-]+|postgres-[a-z-]+|pgpass)\//, 'pg, pg-protocol, pg-pool'],
  [
    /\/node_modules\/(fastify|@fastify\/[^/]+|find-my-way|avvio|fast-json-stringify|secure-json-parse|fast-querystring|light-my-request|toad-cache|fastq|rfdc|process-warning|abstract-logging|safe-regex2|ret|fast-uri)\//,
    'Fastify and its parts',
  ],
  [/\/node_modules\/@modelcontextprotocol\//, 'MCP SDK'],
  [/\/node_modules\/(zod|prom-client|tdigest|bintrees)\//, 'zod, prom-client'],
  [/\/node_modules\//, 'other packages'],
  // Our request line and its output are logging, whoever wrote them.
  [/\/src\/(http\/request-log|log-output)\.[jt]s$/, 'logging (pino, the request line)'],
];

const SOCKET_WRITES = new Set(['writev', 'writeBuffer', 'writeUtf8String', 'writeLatin1String', 'writeAsciiString', 'writeUcs2String']);

/** The layer of a sample whose own (innermost) frame is `callFrame`. */
export function layerOf({ functionName, url }: { functionName: string; url: string }): Layer {
  if (functionName === '(idle)') return 'idle';
  if (functionName === '(garbage collector)') return 'garbage collection';
  if (functionName === '(program)') return 'V8 and node unattributed (program)';
  if (url === '') return SOCKET_WRITES.has(functionName) ? 'socket writes (writev)' : 'other native calls (JSON, crypto…)';
  if (url.startsWith('node:')) return 'node: HTTP, streams, net, timers';
  // Any other script is the server's own: ours, or the reference's.
  return SCRIPT_LAYERS.find(([pattern]) => pattern.test(url))?.[1] ?? 'our code (the reference’s own, for it)';
}

/** A span of the monotonic clock, in µs (process.hrtime.bigint() / 1000). */
export interface Window {
  from: number;
  to: number;
}

/**
 * The µs of `windows` each layer took, idle included: each sample stands for the time until the next one
 * (the profiler's interval stretches on a busy machine). One pass over the samples; windows do not overlap.
 */
export function layerTimes(profile: CpuProfile, windows: readonly Window[]): Map<Layer, number> {
  const layers = new Map(profile.nodes.map((node) => [node.id, layerOf(node.callFrame)]));
  const ordered = [...windows].sort((a, b) => a.from - b.from);
  const counted = ordered.map(() => 0);
  const times = new Map<Layer, number>();
  let current = 0;
  let at = profile.startTime;
  for (let i = 0; i < profile.samples.length && current < ordered.length; i++) {
    at += profile.timeDeltas[i] ?? 0;
    while (current < ordered.length && at > ordered[current]!.to) current++;
    const window = ordered[current];
    if (!window || at < window.from) continue;
    const layer = layers.get(profile.samples[i]!) ?? 'V8 and node unattributed (program)';
    times.set(layer, (times.get(layer) ?? 0) + (profile.timeDeltas[i + 1] ?? 0));
    counted[current]!++;
  }
  const empty = ordered.find((_, k) => counted[k] === 0);
  if (empty) throw new Error(`the profile (${profile.startTime}–${profile.endTime} µs) has no sample in the window ${empty.from}–${empty.to}`);
  return times;
}

/** The main thread's profile among a process's files (`CPU.<date>.<time>.<pid>.<thread>.<n>.cpuprofile`; a loader thread writes one too). */
export const isMainThreadProfile = (file: string) => /\.\d+\.0\.\d+\.cpuprofile$/.test(file);

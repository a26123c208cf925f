import { Counter } from 'prom-client';
import sonicBoom from 'sonic-boom';

const { SonicBoom } = sonicBoom;

/*
 * Where the server's log lines go: stdout, written so that a log reader which stalls or goes away never
 * holds the server. Writes are asynchronous (a request never waits for the reader); what the reader has
 * not taken yet is buffered up to a bound, and lines beyond it are dropped and counted; a write error (the
 * reader gone: EPIPE) turns logging off instead of crashing; and nothing flushes synchronously at exit, as
 * pino's default stdout does, waiting forever for a reader that never reads.
 *
 * Lines are gathered for at most BATCH_MS (or BATCH_BYTES) and written together: each asynchronous write
 * is a round trip through libuv's thread pool, which at one write per request line cost more CPU than
 * building the line (bench/RESULTS.md, "reference").
 */

const BATCH_MS = 10;
const BATCH_BYTES = 16_384;

type LogDropReason = 'buffer_full' | 'output_closed';

export interface LogOutput {
  write(line: string): void;
  /** svc_log_lines_dropped_total, for the core's registry. */
  readonly droppedLines: Counter<'reason'>;
  /** Writes the lines still buffered, waiting at most `withinMs` for the reader, then stops: the last step before exit. */
  end(withinMs: number): Promise<void>;
}

let stdoutOpened = false;

/**
 * Opening process.stdout puts a pipe or socket in non-blocking mode (libuv). A write to a full pipe then
 * fails with EAGAIN, retried by sonic-boom every 100 ms, instead of parking a threadpool thread that
 * process.exit would wait for. The start line shares the pipe: a reader gone must not crash the server.
 */
function openStdout(): void {
  if (stdoutOpened) return;
  stdoutOpened = true;
  process.stdout.on('error', () => undefined);
}

const linesIn = (text: string) => {
  let lines = 0;
  for (let at = text.indexOf('\n'); at >= 0; at = text.indexOf('\n', at + 1)) lines++;
  return lines;
};

/** Log output to stdout, or to `fd` (the benchmarks write to /dev/null through the same path). */
export function createLogOutput(maxBufferBytes: number, fd = 1): LogOutput {
  if (fd === 1) openStdout();
  const stream = new SonicBoom({ fd, sync: false, maxLength: maxBufferBytes });
  // Plain numbers on the logging path, read at scrape time.
  const dropped: Record<LogDropReason, number> = { buffer_full: 0, output_closed: 0 };
  const droppedLines = new Counter({
    name: 'svc_log_lines_dropped_total',
    help: 'Log lines not written: buffer_full while the log reader lags (bounded buffer), output_closed once stdout failed (reader gone)',
    labelNames: ['reason'] as const,
    registers: [],
    collect() {
      this.reset();
      for (const [reason, lines] of Object.entries(dropped)) this.inc({ reason }, lines);
    },
  });

  let closed = false;
  // Lines taken since the buffer was last written out: lost with it if the output fails.
  let unwrittenLines = 0;
  stream.on('drain', () => (unwrittenLines = 0));
  // A batch is dropped whole (one line per newline: pino escapes newlines inside a line).
  stream.on('drop', (batch: string) => {
    const lines = linesIn(batch);
    unwrittenLines -= lines;
    dropped.buffer_full += lines;
  });
  stream.on('error', () => {
    closed = true;
    dropped.output_closed += unwrittenLines;
    stream.destroy();
  });
  let batch = '';
  let batchLines = 0;
  let batchTimer: NodeJS.Timeout | undefined;
  const writeBatch = () => {
    clearTimeout(batchTimer);
    batchTimer = undefined;
    if (batchLines === 0) return;
    const text = batch;
    const lines = batchLines;
    batch = '';
    batchLines = 0;
    if (!closed) {
      try {
        stream.write(text);
        unwrittenLines += lines;
        return;
      } catch {
        // Written after end(): the stream is gone.
        closed = true;
      }
    }
    dropped.output_closed += lines;
  };

  return {
    droppedLines,
    write(line) {
      if (closed) {
        dropped.output_closed++;
        return;
      }
      batch += line;
      batchLines++;
      if (batch.length >= BATCH_BYTES) writeBatch();
      // Not unref'd: a process that ends by running out of work still writes its last lines.
      else batchTimer ??= setTimeout(writeBatch, BATCH_MS);
    },
    end(withinMs) {
      writeBatch();
      if (closed) return Promise.resolve();
      return new Promise((resolve) => {
        const timer = setTimeout(resolve, withinMs);
        stream.once('close', () => {
          clearTimeout(timer);
          resolve();
        });
        stream.end();
      });
    },
  };
}

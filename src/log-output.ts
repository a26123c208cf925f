import { Counter } from 'prom-client';
import sonicBoom from 'sonic-boom';

const { SonicBoom } = sonicBoom;

/*
 * Where the server's log lines go: stdout, written so that a log reader which stalls or goes away never
 * holds the server. Writes are asynchronous (a request never waits for the reader); what the reader has
 * not taken yet is buffered up to a bound, and lines beyond it are dropped and counted; a write error (the
 * reader gone: EPIPE) turns logging off instead of crashing; and nothing flushes synchronously at exit, as
 * pino's default stdout does, waiting forever for a reader that never reads.
 */

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

export function createStdoutLogOutput(maxBufferBytes: number): LogOutput {
  openStdout();
  const stream = new SonicBoom({ fd: 1, sync: false, maxLength: maxBufferBytes });
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
  stream.on('drop', () => {
    unwrittenLines--;
    dropped.buffer_full++;
  });
  stream.on('error', () => {
    closed = true;
    dropped.output_closed += unwrittenLines;
    stream.destroy();
  });
  return {
    droppedLines,
    write(line) {
      if (!closed) {
        try {
          stream.write(line);
          unwrittenLines++;
          return;
        } catch {
          // Written after end(): the stream is gone.
          closed = true;
        }
      }
      dropped.output_closed++;
    },
    end(withinMs) {
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

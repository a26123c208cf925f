/*
 * What one run of svc reads and writes: the process's own streams, environment and fetch in the
 * bin (cli/svc.ts), buffers in a test that runs several commands in one process, even at once.
 * Nothing in cli/ reaches for `process` instead. Kept free of imports: --version loads it.
 */

/** A stream svc writes to; isTTY and columns as a terminal's (absent elsewhere). */
export type OutputStream = NodeJS.WritableStream & { readonly isTTY?: boolean; readonly columns?: number };

export type InputStream = NodeJS.ReadableStream & { readonly isTTY?: boolean };

export interface CliIo {
  stdout: OutputStream;
  stderr: OutputStream;
  env: NodeJS.ProcessEnv;
  fetch: typeof fetch;
  /** Absent: stdin is empty. */
  stdin?: InputStream;
}

/** Colour only on a terminal, and never when NO_COLOR is set (https://no-color.org). */
export function useColour(stream: OutputStream, env: NodeJS.ProcessEnv): boolean {
  return stream.isTTY === true && !env.NO_COLOR;
}

/** Everything on stdin, up to its end. */
export async function readStdin(io: CliIo): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of io.stdin ?? []) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks).toString('utf8');
}

#!/usr/bin/env node
import { EXIT } from './exit-codes.js';
import { run } from './run.js';

// A reader that stops early (svc … | head) ends the output, not the process with a stack trace.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') throw error;
  process.exit(process.exitCode ?? EXIT.ok);
});
process.exitCode = await run(process.argv, {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  fetch: globalThis.fetch,
  // A getter: Node creates process.stdin on first use, and most commands never read it.
  get stdin() {
    return process.stdin;
  },
});

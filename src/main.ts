#!/usr/bin/env node
// First: V8 settings and the compile cache must be in place before anything else loads (so the rest is imported).
import './kit/runtime-flags.js';
const { runServerCommand } = await import('./app/operator/run.js');
await runServerCommand(process.argv);

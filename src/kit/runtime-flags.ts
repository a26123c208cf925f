import module from 'node:module';
import { setFlagsFromString } from 'node:v8';

/*
 * V8 settings of the server process, applied before any other module loads (main.ts imports this
 * module first). Allocation-site pretenuring is turned off: V8 decides at start-up, when most of what
 * is allocated lives on, to allocate some sites straight into the old generation, and keeps those
 * decisions under load. Young objects written into those old ones then outlive young-generation
 * collections: a v4 read promoted 4.7 KB (node-postgres's objects of each query). Without it their
 * pause per request is between a half and a sixth as long (the `pretenuring` benchmark, bench/RESULTS.md). An operator who passes the flag to node explicitly keeps V8's default.
 */
export const PRETENURING_FLAG = '--allocation-site-pretenuring';

if (!process.execArgv.includes(PRETENURING_FLAG)) setFlagsFromString('--no-allocation-site-pretenuring');

/*
 * Node 22.1 and later keep V8's compiled code of every module loaded after this on disk (in
 * NODE_COMPILE_CACHE, else the temporary directory), so a restart skips compiling what did not change:
 * compiling is most of a start's CPU (bench/results/server-start.md). Node 20 has no such cache.
 */
(module as { enableCompileCache?: () => unknown }).enableCompileCache?.();

import { Option, type Command } from 'commander';
import { z } from 'zod';
import { ConfigError } from '../../kit/config.js';
import { demoKeysFile, describeKeys, seedDemoInto } from '../demo-seed.js';
import { ensureCanListen, listenUntilSignalled } from '../../http/listen.js';
import { configFrom, output, storeOptions, type StoreFlags } from './store-options.js';

/** `serve` (the core with its gateway) and `gateway` (the gateway apart, in front of a core). */
export function addServeCommands(program: Command): void {
  storeOptions(
    program
      .command('serve')
      .description('run the HTTP service')
      .addOption(new Option('--port <port>', 'port (env PORT, default 3001)'))
      .addOption(new Option('--host <host>', 'interface (env HOST, default 127.0.0.1)'))
      .option('--demo', 'seed the demo data set when the store is empty'),
  ).action(async (flags: StoreFlags & { port?: string; host?: string; demo?: boolean }) => {
    const [{ createCore }, { buildApp }, { isEmpty }] = await Promise.all([
      import('../core.js'),
      import('../http-app.js'),
      import('../../domain/demo.js'),
    ]);
    const config = configFrom(flags);
    const core = await createCore(config);
    let demo: Awaited<ReturnType<typeof seedDemoInto>> | undefined;
    if (flags.demo) {
      if (await isEmpty(core.db)) {
        // The keys are shown once: a start that could not serve must leave the store empty for the next.
        await ensureCanListen(config);
        demo = await seedDemoInto(core);
        if (!flags.json) process.stderr.write(`${describeKeys(demo)}\n`);
      } else {
        const file = demoKeysFile(config);
        process.stderr.write(`Store already has data${file ? `; demo keys from the first start are in ${file}` : ''}\n`);
      }
    }
    const app = await buildApp(core);
    const url = await listenUntilSignalled(app, core, config);
    output(flags, { url, store: core.db.kind, ...(demo ? { demo } : {}) }, `Serving ${url}  (API docs: ${url}/docs, store: ${core.db.kind})`);
  });

  storeOptions(
    program
      .command('gateway')
      .description('run the v2 gateway as its own process in front of a running core (PostgreSQL only)')
      .addOption(new Option('--upstream <url>', 'http(s) base URL of the core whose v4 API the gateway translates v2 calls into').env('V4_UPSTREAM').makeOptionMandatory())
      .addOption(new Option('--port <port>', 'port (env PORT, default 3001)'))
      .addOption(new Option('--host <host>', 'interface (env HOST, default 127.0.0.1)')),
  ).action(async (flags: StoreFlags & { upstream: string; port?: string; host?: string }) => {
    const config = configFrom(flags);
    // The gateway reads legacy keys and writes usage in the core's database; an embedded store cannot be shared.
    if (!config.databaseUrl) {
      throw new ConfigError('svc-server gateway shares the core’s PostgreSQL database: set DATABASE_URL (or --database-url) to the one the core uses');
    }
    const upstream = z.url({ protocol: /^https?$/ }).safeParse(flags.upstream);
    if (!upstream.success) throw new ConfigError(`--upstream must be the core’s http(s) base URL, got ${flags.upstream}`);
    const [{ createGatewayCore }, { buildGatewayApp }] = await Promise.all([import('../gateway-core.js'), import('../gateway-app.js')]);
    // Only what the gateway reads: no mailer or OAuth server, and the schema checked, never migrated (the core's job).
    const core = await createGatewayCore(config);
    const app = await buildGatewayApp(core, upstream.data);
    const url = await listenUntilSignalled(app, core, config);
    output(flags, { url, upstream: upstream.data }, `Gateway serving ${url} in front of ${upstream.data}`);
  });
}

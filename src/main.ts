#!/usr/bin/env node
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command, CommanderError, Option } from 'commander';
import { baseUrlOf, ConfigError, loadConfig, type Config } from './config.js';
import { z } from 'zod';
import type { FastifyInstance } from 'fastify';
import type { Core } from './core.js';
import { AppError, validationError } from './errors.js';
import type { LegacyKeySummary } from './gateway/legacy-keys.js';
import { defaultMappingsDir } from './gateway/mappings.js';
import { DataDirInUseError } from './store/db.js';
import { packageVersion } from './version.js';

/*
 * svc-server: the server and its operator commands. Each command loads only what it needs,
 * and every command has --json for scripts (data on stdout, messages on stderr).
 */

interface StoreFlags {
  dataDir?: string;
  databaseUrl?: string;
  logLevel?: string;
  json?: boolean;
}

const storeOptions = (command: Command) =>
  command
    .addOption(new Option('--data-dir <dir>', 'embedded store directory (env DATA_DIR)'))
    .addOption(new Option('--database-url <url>', 'PostgreSQL connection string (env DATABASE_URL)'))
    .addOption(new Option('--log-level <level>', 'log level (env LOG_LEVEL)'))
    .option('--json', 'machine-readable output on stdout');

function configFrom(flags: StoreFlags & { port?: string; host?: string }): Config {
  return loadConfig(process.env, {
    dataDir: flags.dataDir,
    databaseUrl: flags.databaseUrl,
    logLevel: flags.logLevel,
    port: flags.port,
    host: flags.host,
  });
}

/** Opens the store for a one-shot command: quiet logs, closed afterwards whatever happens. */
async function withCore<T>(flags: StoreFlags, work: (core: Core) => Promise<T>): Promise<T> {
  const { createCore } = await import('./core.js');
  const { pino } = await import('pino');
  const config = configFrom(flags);
  const core = await createCore(config, { logger: pino({ level: flags.logLevel ?? 'warn' }) });
  try {
    return await work(core);
  } finally {
    await core.close();
  }
}

function output(flags: StoreFlags, data: unknown, human: string): void {
  process.stdout.write(flags.json ? `${JSON.stringify(data, null, 2)}\n` : `${human}\n`);
}

// Of the grace, requests that hold out leave a fifth, at most this, to close the store and write the last log lines.
const CLOSING_RESERVE_MAX_MS = 2000;

/** Whether `work` settles within `ms`; its rejection is passed on. */
async function settlesWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([work.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Listens until SIGINT or SIGTERM, then drains and exits within SHUTDOWN_GRACE_MS, whatever hangs: no new
 * requests (503); in-flight ones finish while more than the closing reserve (a fifth of the grace, at most
 * 2 s) is left, then their connections are cut; the store closes (usage flushed, shared state and database
 * closed); the log lines still buffered get the time left, so a log reader that stalls cannot hold the
 * process. Exits 0, or 1 if closing failed or outlasted the grace. A second signal exits at once.
 * Returns the URL it serves.
 */
async function listenUntilSignalled(app: FastifyInstance, core: Core, config: Config): Promise<string> {
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) {
      core.logger.warn({ signal }, 'second signal: exiting without waiting');
      process.exit(1);
    }
    stopping = true;
    const graceMs = config.shutdownGraceMs;
    const deadline = Date.now() + graceMs;
    const timeLeft = () => Math.max(0, deadline - Date.now());
    core.logger.info({ signal, graceMs }, 'shutting down: finishing in-flight requests');
    const cut = setTimeout(() => {
      core.logger.warn('in-flight requests outlasted their share of the shutdown grace: closing their connections');
      app.server.closeAllConnections();
    }, graceMs - Math.min(CLOSING_RESERVE_MAX_MS, graceMs / 5));
    const closing = (async () => {
      await app.close();
      clearTimeout(cut);
      await core.close();
    })();
    let exitCode = 0;
    try {
      if (await settlesWithin(closing, timeLeft())) {
        core.logger.info('stopped');
      } else {
        core.logger.error('shutdown grace period over before the store closed: exiting without it');
        exitCode = 1;
      }
    } catch (error) {
      core.logger.error({ err: error }, 'shutdown failed');
      exitCode = 1;
    }
    await core.endLogs(timeLeft());
    process.exit(exitCode);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  await app.listen({ port: config.port, host: config.host });
  return baseUrlOf({ ...config, port: (app.server.address() as { port: number }).port });
}

async function readFirstStdinLine(): Promise<string> {
  const { createInterface } = await import('node:readline');
  const lines = createInterface({ input: process.stdin, terminal: false });
  for await (const line of lines) {
    lines.close();
    return line;
  }
  return '';
}

function demoKeysFile(config: Config): string | undefined {
  return config.databaseUrl || config.dataDir.startsWith('memory://') ? undefined : join(config.dataDir, 'demo-keys.json');
}

/**
 * Two v2 integrations of Acme: one with every scope v4 can serve (plus one it cannot), one address-only;
 * and a retired Globex export gone quiet. With 30 days of usage, so the migration dashboard has a story.
 */
async function seedDemoLegacyKeys(core: Core, companies: { acme: string; globex: string }): Promise<{ full: string; addressOnly: string }> {
  const [{ createLegacyKey }, { seedDemoUsageHistory }] = await Promise.all([
    import('./gateway/legacy-keys.js'),
    import('./gateway/demo-traffic.js'),
  ]);
  const withSuccessor = core.mappings.scopes.filter((entry) => entry.capability !== undefined).map((entry) => entry.name);
  const register = (companyId: string, name: string, scopes: string[]) => createLegacyKey(core, core.mappings, { companyId, name, scopes });
  const full = await register(companies.acme, 'Demo v2 integration (full)', [...withSuccessor, 'api.catalogs.getAll']);
  const addressOnly = await register(companies.acme, 'Demo v2 address sync', [
    'api.employee.deliveryAddress.get',
    'api.employee.deliveryAddress.create',
    'api.employee.deliveryAddress.update',
  ]);
  const quiet = await register(companies.globex, 'Globex HR export (retired)', ['api.employees.getAll', 'api.company.get']);
  await seedDemoUsageHistory(core, { full: full.id, addressOnly: addressOnly.id, quiet: quiet.id });
  if (!full.rawKey || !addressOnly.rawKey) throw new Error('a generated legacy key is always returned');
  // The quiet key's raw key is not kept: nothing should call it again.
  return { full: full.rawKey, addressOnly: addressOnly.rawKey };
}

async function seedDemoInto(core: Core) {
  const [{ seedDemo, DEMO_PASSWORD }, { seedDemoOrders }] = await Promise.all([
    import('./domain/demo.js'),
    import('./domain/orders/demo-orders.js'),
  ]);
  const demo = await seedDemo(core.db);
  // Orders in several states, with history and tracking, so every order operation shows real data.
  await seedDemoOrders(core, demo);
  const summary = {
    apiKeys: demo.apiKeys,
    legacyKeys: await seedDemoLegacyKeys(core, demo.companies),
    users: demo.emails,
    password: DEMO_PASSWORD,
    companies: demo.companies,
    keysFile: demoKeysFile(core.config),
  };
  if (summary.keysFile) writeFileSync(summary.keysFile, `${JSON.stringify(summary, null, 2)}\n`, { mode: 0o600 });
  return summary;
}

function describeKeys(summary: {
  apiKeys: Record<string, string>;
  users: Record<string, string>;
  password: string;
  legacyKeys: Record<string, string>;
  keysFile?: string | undefined;
}): string {
  const lines = (keys: Record<string, string>) => Object.entries(keys).map(([who, key]) => `  ${who.padEnd(11)} ${key}`);
  return [
    'Demo API keys (shown once; send as X-API-KEY):',
    ...lines(summary.apiKeys),
    'Demo legacy v2 keys of Acme (for the /v2 gateway; refused on /v4):',
    ...lines(summary.legacyKeys),
    `Demo users sign in at /app/sign-in (and on OAuth consent) with the password "${summary.password}":`,
    `  ${Object.values(summary.users).join(', ')}`,
    ...(summary.keysFile ? [`Also written to ${summary.keysFile}`] : []),
  ].join('\n');
}

export function buildProgram(): Command {
  const program = new Command('svc-server')
    .description('Device Lifecycle Service: v4 core and v2 migration gateway')
    .version(packageVersion())
    .showHelpAfterError();

  storeOptions(
    program
      .command('serve')
      .description('run the HTTP service')
      .addOption(new Option('--port <port>', 'port (env PORT, default 3001)'))
      .addOption(new Option('--host <host>', 'interface (env HOST, default 127.0.0.1)'))
      .option('--demo', 'seed the demo data set when the store is empty'),
  ).action(async (flags: StoreFlags & { port?: string; host?: string; demo?: boolean }) => {
    const [{ createCore }, { buildApp }, { isEmpty }] = await Promise.all([
      import('./core.js'),
      import('./http/app.js'),
      import('./domain/demo.js'),
    ]);
    const config = configFrom(flags);
    const core = await createCore(config);
    let demo: Awaited<ReturnType<typeof seedDemoInto>> | undefined;
    if (flags.demo) {
      if (await isEmpty(core.db)) {
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
      .addOption(new Option('--upstream <url>', 'base URL of the core').env('V4_UPSTREAM').makeOptionMandatory())
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
    const [{ createCore }, { buildGatewayApp }] = await Promise.all([import('./core.js'), import('./gateway/gateway-app.js')]);
    const core = await createCore(config);
    const app = await buildGatewayApp(core, upstream.data);
    const url = await listenUntilSignalled(app, core, config);
    output(flags, { url, upstream: upstream.data }, `Gateway serving ${url} in front of ${upstream.data}`);
  });

  storeOptions(program.command('migrate').description('apply pending schema migrations')).action(async (flags: StoreFlags) => {
    const { migrate } = await import('./store/migrations.js');
    // createCore already migrates; asking again reports that nothing is pending.
    await withCore(flags, async (core) => {
      const applied = await migrate(core.db);
      output(flags, { applied, store: core.db.kind }, applied.length ? `Applied ${applied.join(', ')}` : 'Schema is up to date');
    });
  });

  storeOptions(
    program.command('seed').description('load a data set into an empty store').requiredOption('--demo', 'the demo data set'),
  ).action(async (flags: StoreFlags) => {
    const { isEmpty } = await import('./domain/demo.js');
    await withCore(flags, async (core) => {
      if (!(await isEmpty(core.db))) throw new AppError(409, 'store_not_empty', 'The store already has data; seed an empty one');
      const summary = await seedDemoInto(core);
      output(flags, summary, describeKeys(summary));
    });
  });

  const users = program.command('users').description('manage users');
  storeOptions(
    users
      .command('create')
      .description('create a user')
      .requiredOption('--email <email>')
      .requiredOption('--name <displayName>')
      .addOption(new Option('--role <role>').choices(['admin', 'manager', 'employee']).makeOptionMandatory())
      .requiredOption('--company <id...>', 'company id(s); only admins may have several')
      .option('--team <id...>', 'manager scope: team ids')
      .option('--region <code...>', 'manager scope: ISO country codes')
      .option('--employee <id>', 'the employee record of an employee user')
      .option('--non-personal', 'a dedicated service user, not a person (recommended for integrations)'),
  ).action(async (flags: StoreFlags & { email: string; name: string; role: 'admin'; company: string[]; team?: string[]; region?: string[]; employee?: string; nonPersonal?: boolean }) => {
    const { createUser } = await import('./domain/admin.js');
    await withCore(flags, async (core) => {
      const id = await createUser(core.db, {
        email: flags.email,
        displayName: flags.name,
        role: flags.role,
        companyIds: flags.company,
        teamIds: flags.team ?? [],
        regions: (flags.region ?? []).map((r) => r.toUpperCase()),
        employeeId: flags.employee,
        nonPersonal: flags.nonPersonal ?? false,
      });
      output(flags, { id, email: flags.email, role: flags.role }, `Created user ${id} <${flags.email}>`);
    });
  });
  storeOptions(
    users
      .command('set-password')
      .description('set the password a user signs in to the application pages with; read from the first line of stdin')
      .requiredOption('--email <email>'),
  ).action(async (flags: StoreFlags & { email: string }) => {
    const { setUserPassword } = await import('./access/passwords.js');
    // Never a flag: a password in argv shows in the process list and the shell history.
    const password = (await readFirstStdinLine()).replace(/\r$/, '');
    await withCore(flags, async (core) => {
      await setUserPassword(core.db, flags.email, password);
      output(flags, { email: flags.email, passwordSet: true }, `Password set for ${flags.email}`);
    });
  });
  for (const [name, disabled] of [['disable', true], ['enable', false]] as const) {
    storeOptions(
      users.command(name).description(`${name} a user (keys bound to it ${disabled ? 'stop' : 'resume'} working at once)`).requiredOption('--email <email>'),
    ).action(async (flags: StoreFlags & { email: string }) => {
      const { setUserDisabled } = await import('./domain/admin.js');
      await withCore(flags, async (core) => {
        await setUserDisabled(core.db, flags.email, disabled);
        output(flags, { email: flags.email, disabled }, `User ${flags.email} ${name}d`);
      });
    });
  }

  const keys = program.command('keys').description('manage API keys');
  storeOptions(
    keys
      .command('mint')
      .description('mint a v4 API key bound to a user; the raw key is printed once')
      .requiredOption('--user <email>', 'the user the key is bound to')
      .requiredOption('--capabilities <list>', 'comma-separated capabilities, or "all" (within the user’s role)')
      .option('--name <name>', 'a label for the key', 'API key'),
  ).action(async (flags: StoreFlags & { user: string; capabilities: string; name: string }) => {
    const [{ mintKeyForUser }, { parseCapabilityList }] = await Promise.all([
      import('./domain/admin.js'),
      import('./access/capabilities.js'),
    ]);
    await withCore(flags, async (core) => {
      const minted = await mintKeyForUser(core.db, flags.user, parseCapabilityList(flags.capabilities), flags.name);
      output(
        flags,
        { keyId: minted.keyId, apiKey: minted.rawKey, user: flags.user, capabilities: minted.capabilities },
        `${minted.rawKey}\n(key id ${minted.keyId}; this is the only time the key is shown)`,
      );
    });
  });
  storeOptions(keys.command('revoke').description('revoke a key (takes effect on the next request)').argument('<keyId>')).action(
    async (keyId: string, flags: StoreFlags) => {
      const { revokeKey } = await import('./domain/admin.js');
      await withCore(flags, async (core) => {
        await revokeKey(core.db, keyId);
        output(flags, { keyId, revoked: true }, `Revoked ${keyId}`);
      });
    },
  );

  // Legacy v2 keys: registering one provisions its bridge user and v4 key (the spec's reissue steps).
  const legacyKeys = program.command('legacy-keys').description('register and retire legacy v2 keys served by the gateway');
  const withMappings = (command: Command) =>
    storeOptions(command.addOption(new Option('--mappings <dir>', 'the v2 → v4 maps (scopes.yaml …)').default(defaultMappingsDir())));
  const loadMaps = async (dir: string) => {
    const { loadMappings, MappingError } = await import('./gateway/mappings.js');
    try {
      return loadMappings(dir);
    } catch (error) {
      if (error instanceof MappingError) throw new ConfigError(`The v2 maps in ${dir} are unusable: ${error.message}`);
      throw error;
    }
  };
  const describeLegacyKey = (key: LegacyKeySummary) =>
    `${key.id}  ${key.companyId}  ${key.keyHint}  ${key.disabledAt ? 'disabled' : 'active'}  ${key.name}  [${key.scopes.join(', ')}] → [${key.capabilities.join(', ')}]`;
  withMappings(
    legacyKeys
      .command('create')
      .description('generate a legacy key for a company; the raw key is printed once')
      .requiredOption('--company <id>', 'the company the key is bound to')
      .requiredOption('--name <name>', 'a label for the key')
      .requiredOption('--scopes <list>', 'comma-separated v2 scopes, e.g. api.employees.getAll,api.teams.getAll'),
  ).action(async (flags: StoreFlags & { company: string; name: string; scopes: string; mappings: string }) => {
    const { createLegacyKey } = await import('./gateway/legacy-keys.js');
    const mappings = await loadMaps(flags.mappings);
    const scopes = flags.scopes.split(',').map((s) => s.trim()).filter(Boolean);
    await withCore(flags, async (core) => {
      const { rawKey, ...key } = await createLegacyKey(core, mappings, { companyId: flags.company, name: flags.name, scopes });
      output(flags, { ...key, legacyKey: rawKey }, `${rawKey}
${describeLegacyKey(key)}
(this is the only time the key is shown)`);
    });
  });
  withMappings(
    legacyKeys
      .command('import')
      .description('register existing v2 keys from a JSON or YAML list of {company, name, key, scopes}, all or none')
      .argument('<file>'),
  ).action(async (file: string, flags: StoreFlags & { mappings: string }) => {
    const { importLegacyKeys, parseImportDocument } = await import('./gateway/legacy-keys.js');
    const mappings = await loadMaps(flags.mappings);
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      throw new AppError(400, 'import_file_unreadable', `Cannot read ${file}: ${(error as Error).message}`);
    }
    const document = parseImportDocument(text);
    await withCore(flags, async (core) => {
      const result = await importLegacyKeys(core, mappings, document);
      output(flags, result, [`Imported ${result.imported} legacy key(s):`, ...result.keys.map(describeLegacyKey)].join('\n'));
    });
  });
  storeOptions(legacyKeys.command('list').description('list legacy keys (never the keys themselves)').option('--company <id>')).action(
    async (flags: StoreFlags & { company?: string }) => {
      const { listLegacyKeys } = await import('./gateway/legacy-keys.js');
      await withCore(flags, async (core) => {
        const keys = await listLegacyKeys(core, flags.company === undefined ? {} : { companyIds: [flags.company] });
        output(flags, keys, keys.length ? keys.map(describeLegacyKey).join('\n') : 'No legacy keys');
      });
    },
  );
  storeOptions(
    legacyKeys.command('disable').description('disable a legacy key and revoke its bridge key (takes effect on the next request)').argument('<id>'),
  ).action(async (id: string, flags: StoreFlags) => {
    const { disableLegacyKey } = await import('./gateway/legacy-keys.js');
    await withCore(flags, async (core) => {
      const key = await disableLegacyKey(core, id);
      output(flags, key, `Disabled ${id}${key.bridgeKeyId ? `; bridge key ${key.bridgeKeyId} revoked` : ''}`);
    });
  });

  // The logistics side at the host: the operator reaches every company's orders (see operatorActor).
  const orders = program.command('orders').description('post fulfilment and courier events on orders, as the logistics side');
  const EVENT_FIELDS = ['status', 'reason', 'note', 'carrier', 'trackingNumber', 'direction', 'productId', 'occurredAt'] as const;
  type EventFlags = StoreFlags & Partial<Record<(typeof EVENT_FIELDS)[number], string>>;
  const postEvent = async (orderId: string, type: string, flags: EventFlags) => {
    const [{ OrderEventBody }, { operatorActor, recordOrderEvent }] = await Promise.all([
      import('./operations/order-events.js'),
      import('./domain/orders/events.js'),
    ]);
    const given = EVENT_FIELDS.filter((field) => flags[field] !== undefined).map((field) => [field, flags[field]]);
    const { id, ...event } = OrderEventBody.parse({ ...Object.fromEntries(given), type, id: orderId });
    await withCore(flags, async (core) => {
      const recorded = await recordOrderEvent(core, await operatorActor(core.db), id, event);
      output(flags, recorded, `Order ${id}: recorded ${recorded.event.type}; status ${recorded.status}`);
    });
  };
  const eventOptions = (command: Command) =>
    storeOptions(command.argument('<orderId>').option('--note <text>').option('--occurred-at <iso>', 'when it happened (default now)'));
  eventOptions(
    orders.command('advance').description('move an order to another status (see the transitions in the API docs)').requiredOption('--status <status>', 'the new status, any case'),
  ).action((orderId: string, flags: EventFlags) => postEvent(orderId, 'status', flags));
  eventOptions(
    orders
      .command('event')
      .description('post any order event (the body of POST /v4/orders/:id/events, as flags)')
      .requiredOption('--type <type>', 'status, delay, delay_resolved, shipment or device')
      .option('--status <status>', 'status: the new order status; device: the device status')
      .option('--reason <reason>', 'delay and delay_resolved: the delay reason')
      .option('--carrier <name>', 'shipment: the carrier')
      .option('--tracking-number <number>', 'shipment: the tracking number')
      .option('--direction <direction>', 'shipment: outbound or return')
      .option('--product-id <id>', 'device: the device on the order'),
  ).action((orderId: string, flags: EventFlags & { type: string }) => postEvent(orderId, flags.type, flags));

  return program;
}

/** Exit codes: 0 ok, 1 failure, 2 usage error. */
async function main(argv: string[]): Promise<void> {
  const program = buildProgram();
  // Usage errors of any subcommand must reach the catch below to exit 2.
  const override = (command: Command): void => {
    command.exitOverride();
    command.commands.forEach(override);
  };
  override(program);
  try {
    await program.parseAsync(argv);
  } catch (caught) {
    let error = caught;
    if (error instanceof CommanderError) {
      process.exit(error.exitCode === 0 ? 0 : 2);
    }
    if (error instanceof z.ZodError) error = validationError(error, 'arguments');
    const known = error instanceof AppError || error instanceof ConfigError || error instanceof DataDirInUseError;
    const message = error instanceof AppError ? `${error.code}: ${error.message}` : error instanceof Error ? error.message : String(error);
    process.stderr.write(`svc-server: ${known ? message : `unexpected error: ${message}`}\n`);
    if (!known && error instanceof Error && error.stack) process.stderr.write(`${error.stack}\n`);
    process.exit(1);
  }
}

await main(process.argv);

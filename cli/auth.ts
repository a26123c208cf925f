import { createInterface } from 'node:readline/promises';
import type { Command } from 'commander';
import { describeTarget, maskKey, parseEnvironment, resolveTarget, serverOf, writeConfig, type Account } from './config.js';
import { CliError, EXIT, usageError } from './exit-codes.js';
import { refuseLegacyKey, type Envelope } from './http.js';
import { readStdin, useColour, type CliIo } from './io.js';
import { renderData, terminalWidth } from './output.js';
import { Session, type GlobalOptions } from './session.js';

/*
 * `svc auth login|status|switch|logout`: named accounts in the config file, one of them active
 * (spec "Command-line credentials"). A key is printed only masked.
 */

interface Me {
  user: { email: string; displayName: string; role: string };
  companies: { id: string; name: string }[];
  capabilities: string[];
}

/** The key to log in with: --api-key, else a prompt on a terminal, else the first line of stdin. */
async function readKey(given: string | undefined, io: CliIo): Promise<string> {
  if (given) return given.trim();
  if (io.stdin?.isTTY) {
    const prompt = createInterface({ input: io.stdin, output: io.stderr, terminal: true });
    try {
      return (await prompt.question('Paste your v4 API key (svc_sk_…): ')).trim();
    } finally {
      prompt.close();
    }
  }
  return (await readStdin(io)).split('\n')[0]!.trim();
}

function print(session: Session, envelope: Envelope & { ok: true }, human: string): void {
  if (session.format === 'json') session.io.stdout.write(`${JSON.stringify(envelope, null, 2)}\n`);
  else session.io.stdout.write(human);
}

async function login(session: Session, name: string | undefined): Promise<void> {
  const apiKey = await readKey(session.options.apiKey, session.io);
  if (!apiKey) throw usageError('No API key: pass --api-key, or paste one when asked');
  await refuseLegacyKey(apiKey);
  const { environment: given, apiUrl, allowLocalhost } = session.options;
  const environment = given === undefined ? undefined : parseEnvironment(given);
  const config = session.config;
  // The developer-specific environment takes its address from this login (stored only if it succeeds).
  if (environment === 'dev' && apiUrl !== undefined) config.devApiUrl = apiUrl;
  const target = resolveTarget(session.options, undefined, config);
  const me = (await session.request(target, apiKey, { method: 'GET', path: '/v4/me' })).data as Me;
  const accountName = name ?? me.user.email;
  const account: Account = {
    apiKey,
    user: me.user.email,
    // A server named only by --api-url has no environment: it is labelled by its URL.
    ...(environment !== undefined || apiUrl === undefined ? { environment: environment ?? 'prod' } : {}),
    ...(apiUrl !== undefined && environment !== 'dev' ? { apiUrl: target.baseUrl } : {}),
    ...(allowLocalhost === true && target.baseUrl.startsWith('http://') ? { allowLocalhost: true } : {}),
  };
  config.accounts[accountName] = account;
  config.active = accountName;
  if (environment === 'dev' && apiUrl !== undefined) config.devApiUrl = target.baseUrl;
  writeConfig(config, session.configFile);
  print(
    session,
    { ok: true, data: { account: accountName, active: true, environment: target.environment, baseUrl: target.baseUrl, user: me.user, key: maskKey(apiKey) }, meta: {} },
    `Logged in to ${describeTarget(target)} as ${me.user.email} (${me.user.role}) with ${maskKey(apiKey)}; account "${accountName}" is active\n`,
  );
}

async function status(session: Session): Promise<void> {
  const credential = session.credential();
  const accounts = Object.entries(session.config.accounts).map(([name, a]) => {
    const server = serverOf(a.environment ?? 'prod', a.apiUrl, session.config);
    return {
      name,
      active: name === session.config.active,
      environment: server.environment,
      baseUrl: server.address ?? null,
      user: a.user ?? '',
      key: maskKey(a.apiKey),
    };
  });
  if (!credential) {
    throw new CliError(EXIT.auth, `Not logged in: run svc auth login, pass --api-key or set SVC_API_KEY${accounts.length ? ' (or svc auth switch <account>)' : ''}`, 'authentication_required');
  }
  const target = session.target();
  const envelope = await session.request(target, credential.apiKey, { method: 'GET', path: '/v4/me' });
  const me = envelope.data as Me;
  const source = credential.source === 'flag' ? '--api-key' : credential.source === 'env' ? 'SVC_API_KEY' : `account "${credential.account}"`;
  const resolved = { source, key: maskKey(credential.apiKey), environment: target.environment, baseUrl: target.baseUrl };
  const human = renderData(
    {
      user: `${me.user.displayName} <${me.user.email}>`,
      role: me.user.role,
      companies: me.companies.map((c) => `${c.id} (${c.name})`).join(', '),
      capabilities: me.capabilities.length > 0 ? me.capabilities.join(', ') : '(none)',
      credential: `${resolved.key} from ${source}`,
      server: describeTarget(target),
    },
    session.format === 'text' ? 'text' : 'table',
    terminalWidth(session.io),
    useColour(session.io.stdout, session.io.env),
  ).stdout;
  const list = accounts.map((a) => `${a.active ? '*' : ' '} ${a.name}  ${a.environment ?? a.baseUrl}  ${a.key}`).join('\n');
  print(
    session,
    { ...envelope, data: { ...me, resolved, accounts } },
    `${human}${accounts.length > 0 ? `\nAccounts (* active):\n${list}\n` : ''}`,
  );
}

function requireAccount(session: Session, name: string): void {
  if (!session.config.accounts[name]) {
    const known = Object.keys(session.config.accounts);
    throw usageError(`No account "${name}"${known.length > 0 ? `: known accounts are ${known.join(', ')}` : ': run svc auth login first'}`);
  }
}

function switchTo(session: Session, name: string): void {
  requireAccount(session, name);
  session.config.active = name;
  writeConfig(session.config, session.configFile);
  print(session, { ok: true, data: { account: name, active: true }, meta: {} }, `Account "${name}" is active\n`);
}

function logout(session: Session, name: string | undefined): void {
  const target = name ?? session.config.active;
  if (target === undefined) throw usageError('No active account: name one with --name <account>');
  requireAccount(session, target);
  delete session.config.accounts[target];
  const wasActive = session.config.active === target;
  if (wasActive) delete session.config.active;
  writeConfig(session.config, session.configFile);
  print(
    session,
    { ok: true, data: { account: target, removed: true, active: session.config.active ?? null }, meta: {} },
    `Logged out of "${target}"; its key is removed from ${session.configFile}${wasActive ? '. No account is active now' : ''}\n`,
  );
}

export function registerAuthCommands(program: Command, io: CliIo): void {
  const auth = program.command('auth').description('log in with v4 API keys: named accounts, one active');
  const sessionOf = (command: Command) => new Session(command.optsWithGlobals<GlobalOptions>(), io);
  auth
    .command('login')
    .description('store a v4 API key as a named account and make it active; checks it with GET /v4/me (a legacy v2 key is refused)')
    .option('--name <account>', 'the account name (default: the email of the key’s user)')
    .addHelpText('after', '\nThe key comes from --api-key, else a prompt on a terminal, else the first line of stdin.\nEnvironment with --environment (prod, io, next, local or local:<port>, dev) or an address with --api-url;\nthe account remembers them, and --allow-localhost for a server on this machine.')
    .action(async (flags: { name?: string }, command: Command) => login(sessionOf(command), flags.name));
  auth
    .command('status')
    .description('show the identity and access the resolved credential has (GET /v4/me), and the stored accounts')
    .action(async (_flags: unknown, command: Command) => status(sessionOf(command)));
  auth
    .command('switch')
    .description('make another stored account the active one')
    .argument('<account>')
    .action((name: string, _flags: unknown, command: Command) => switchTo(sessionOf(command), name));
  auth
    .command('logout')
    .description('remove an account and its key from the config file (default: the active one)')
    .option('--name <account>', 'the account to remove')
    .action((flags: { name?: string }, command: Command) => logout(sessionOf(command), flags.name));
}

import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { maskedKey, parseApiKey } from '../src/access/api-keys.js';
import { CliError, EXIT, usageError } from './exit-codes.js';

/*
 * Credentials and environments of `svc` (spec "Command-line credentials", "Versioning"): named
 * accounts in one config file, one of them active; the key is resolved from --api-key, then
 * SVC_API_KEY, then the active account.
 */

/** Base addresses of the named environments; `dev` is the developer-specific one, set in the config file. */
export const ENVIRONMENTS = {
  prod: 'https://api.devicelifecycle.example',
  // Alias of prod before the cutover: the same base address.
  io: 'https://api.devicelifecycle.example',
  next: 'https://api.next.devicelifecycle.example',
  local: 'http://127.0.0.1:3001',
  dev: undefined,
} as const satisfies Record<string, string | undefined>;
export type EnvironmentName = keyof typeof ENVIRONMENTS;
export const ENVIRONMENT_NAMES = Object.keys(ENVIRONMENTS) as EnvironmentName[];

export interface Account {
  apiKey: string;
  /** As given at login: prod, io, next, local, local:<port> or dev; absent when only --api-url named the server. */
  environment?: string;
  /**
   * The base address given with --api-url at login. An environment given by name is looked up
   * at each use instead, so an alias such as io follows its environment at the cutover.
   */
  apiUrl?: string;
  /** --allow-localhost was given at login: plain HTTP to this account's own 127.0.0.1 address needs no flag. */
  allowLocalhost?: boolean;
  /** Who the key resolved to at login, for `auth status` without a request. */
  user?: string;
}

export interface StoredConfig {
  active?: string;
  accounts: Record<string, Account>;
  /** The developer-specific environment's base address. */
  devApiUrl?: string;
}

/** `$XDG_CONFIG_HOME/svc/config.json` (default ~/.config), or `%APPDATA%\svc\config.json` on Windows. */
export function configPath(env: NodeJS.ProcessEnv): string {
  const base =
    env.XDG_CONFIG_HOME || (process.platform === 'win32' && env.APPDATA ? env.APPDATA : join(homeDirectory(env), '.config'));
  return join(base, 'svc', 'config.json');
}

/** What os.homedir() answers, but from the run's environment: $HOME first, except on Windows. */
const homeDirectory = (env: NodeJS.ProcessEnv) => (process.platform !== 'win32' && env.HOME !== undefined ? env.HOME : homedir());

export function readConfig(path: string): StoredConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { accounts: {} };
    throw error;
  }
  let parsed: StoredConfig;
  try {
    parsed = JSON.parse(text) as StoredConfig;
  } catch {
    throw usageError(`The config file ${path} is not valid JSON; fix or delete it`);
  }
  const config = { ...parsed, accounts: parsed.accounts ?? {} };
  for (const account of Object.values(config.accounts)) migrateAccount(account, config);
  return config;
}

/**
 * Accounts written before svc remembered --allow-localhost: login accepted a plain-HTTP loopback
 * address only with that flag, so such an account had it.
 */
function migrateAccount(account: Account, config: StoredConfig): void {
  if (account.allowLocalhost !== undefined) return;
  const { address } = serverOf(account.environment ?? 'prod', account.apiUrl, config);
  if (address !== undefined && originOf(address)?.startsWith('http://')) account.allowLocalhost = true;
}

/** Written to a temporary file and renamed, readable by its owner only (0600 in a 0700 directory). */
export function writeConfig(config: StoredConfig, path: string): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  chmodSync(temporary, 0o600);
  renameSync(temporary, path);
}

/** Enough of a key to tell keys apart, never enough to use one. */
export function maskKey(apiKey: string): string {
  const parsed = parseApiKey(apiKey);
  return parsed ? maskedKey(parsed.keyId) : `${apiKey.slice(0, Math.min(6, Math.floor(apiKey.length / 4)))}…`;
}

export interface CredentialFlags {
  apiKey?: string;
  environment?: string;
  apiUrl?: string;
  allowLocalhost?: boolean;
}

export interface ResolvedCredential {
  apiKey: string;
  source: 'flag' | 'env' | 'account';
  account?: string;
}

export const activeAccount = (config: StoredConfig): Account | undefined => (config.active === undefined ? undefined : config.accounts[config.active]);

/** The spec's order: --api-key, then SVC_API_KEY, then the active account. */
export function resolveCredential(flags: CredentialFlags, env: NodeJS.ProcessEnv, config: StoredConfig): ResolvedCredential | undefined {
  if (flags.apiKey) return { apiKey: flags.apiKey, source: 'flag' };
  if (env.SVC_API_KEY) return { apiKey: env.SVC_API_KEY, source: 'env' };
  const account = activeAccount(config);
  if (account && config.active !== undefined) return { apiKey: account.apiKey, source: 'account', account: config.active };
  return undefined;
}

/** Checks an --environment value: a name, or local:<port> for a server on this machine at another port. */
export function parseEnvironment(text: string): string {
  if ((ENVIRONMENT_NAMES as string[]).includes(text)) return text;
  const port = /^local:(.*)$/.exec(text)?.[1];
  if (port === undefined) {
    throw usageError(`Unknown environment "${text}": use one of ${ENVIRONMENT_NAMES.join(', ')}, or local:<port> for a local server on another port`);
  }
  if (!/^\d{1,5}$/.test(port) || Number(port) < 1 || Number(port) > 65535) {
    throw usageError(`--environment ${text}: the port of local:<port> must be a whole number from 1 to 65535`);
  }
  return `local:${Number(port)}`;
}

/** An environment's own base address; undefined for dev before its address is set. */
function environmentAddress(environment: string, config: StoredConfig): string | undefined {
  if (environment === 'dev') return config.devApiUrl;
  if (environment.startsWith('local:')) return `http://127.0.0.1:${environment.slice('local:'.length)}`;
  return ENVIRONMENTS[environment as EnvironmentName];
}

function originOf(address: string): string | undefined {
  try {
    return new URL(address).origin;
  } catch {
    return undefined;
  }
}

/**
 * The server an environment and an --api-url name: the address (the URL if given, else the
 * environment's), and the environment only when the address is its own, so that a custom URL is
 * labelled by itself rather than by the environment it overrides.
 */
export function serverOf(environment: string, apiUrl: string | undefined, config: StoredConfig): { environment: string | null; address: string | undefined } {
  const named = environmentAddress(environment, config);
  const address = apiUrl ?? named;
  const own = named !== undefined && address !== undefined && originOf(address) === originOf(named);
  return { environment: own ? environment : null, address };
}

export interface Target {
  /** The environment whose own address this is; null for a server named only by its URL. */
  environment: string | null;
  baseUrl: string;
}

/** How a server is named to people: its address, and its environment when it is one. */
export const describeTarget = (target: Target) => (target.environment === null ? target.baseUrl : `${target.baseUrl} (${target.environment})`);

const LOOPBACK = new Set(['127.0.0.1', '[::1]']);

/**
 * The base address: --api-url, else the account's own, else the environment's. The account is the
 * active one whichever key is used, so --api-key or SVC_API_KEY alone changes the key, not the
 * server. An API key travels over HTTPS only, except to this machine's loopback with
 * --allow-localhost, given now or stored with the account at login (then for its own address only).
 */
export function resolveTarget(flags: CredentialFlags, account: Account | undefined, config: StoredConfig): Target {
  const environment = parseEnvironment(flags.environment ?? account?.environment ?? 'prod');
  // The account's own server, unless the flags name another environment.
  const own = account && (flags.environment === undefined || environment === account.environment) ? account : undefined;
  const server = serverOf(environment, flags.apiUrl ?? own?.apiUrl, config);
  if (server.address === undefined) {
    throw usageError('The dev environment has no address yet: run svc auth login --environment dev --api-url <url> once');
  }
  const ownAddress = own ? serverOf(environment, own.apiUrl, config).address : undefined;
  const storedAllow = own?.allowLocalhost === true && ownAddress !== undefined && originOf(ownAddress) === originOf(server.address);
  return { environment: server.environment, baseUrl: checkAddress(server.address, flags.allowLocalhost === true || storedAllow) };
}

export function checkAddress(address: string, allowLocalhost: boolean): string {
  let url: URL;
  try {
    url = new URL(address);
  } catch {
    throw usageError(`--api-url ${address} is not a URL such as https://api.devicelifecycle.example`);
  }
  if (url.protocol === 'https:') return url.origin;
  if (url.protocol !== 'http:') throw usageError(`${address}: only https:// (or http://127.0.0.1 with --allow-localhost) is supported`);
  if (!LOOPBACK.has(url.hostname)) {
    throw usageError(`Refusing plain HTTP to ${url.origin}: API keys are sent only over HTTPS (plain HTTP only to 127.0.0.1, with --allow-localhost)`);
  }
  if (!allowLocalhost) {
    throw usageError(
      `Refusing plain HTTP to ${url.origin}: pass --allow-localhost to talk to a server on this machine (svc auth login … --allow-localhost stores it with the account)`,
    );
  }
  return url.origin;
}

export function requireCredential(credential: ResolvedCredential | undefined): ResolvedCredential {
  if (!credential) {
    throw new CliError(EXIT.auth, 'Not logged in: run svc auth login, pass --api-key or set SVC_API_KEY', 'authentication_required');
  }
  return credential;
}

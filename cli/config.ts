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
  environment: EnvironmentName;
  /** Overrides the environment's base address for this account (set by login --api-url). */
  apiUrl?: string;
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
export function configPath(env: NodeJS.ProcessEnv = process.env): string {
  const base =
    env.XDG_CONFIG_HOME || (process.platform === 'win32' && env.APPDATA ? env.APPDATA : join(homedir(), '.config'));
  return join(base, 'svc', 'config.json');
}

export function readConfig(path = configPath()): StoredConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { accounts: {} };
    throw error;
  }
  try {
    const parsed = JSON.parse(text) as StoredConfig;
    return { ...parsed, accounts: parsed.accounts ?? {} };
  } catch {
    throw usageError(`The config file ${path} is not valid JSON; fix or delete it`);
  }
}

/** Written to a temporary file and renamed, readable by its owner only (0600 in a 0700 directory). */
export function writeConfig(config: StoredConfig, path = configPath()): void {
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

/** The spec's order: --api-key, then SVC_API_KEY, then the active account. */
export function resolveCredential(flags: CredentialFlags, env: NodeJS.ProcessEnv, config: StoredConfig): ResolvedCredential | undefined {
  if (flags.apiKey) return { apiKey: flags.apiKey, source: 'flag' };
  if (env.SVC_API_KEY) return { apiKey: env.SVC_API_KEY, source: 'env' };
  const account = config.active === undefined ? undefined : config.accounts[config.active];
  if (account && config.active !== undefined) return { apiKey: account.apiKey, source: 'account', account: config.active };
  return undefined;
}

export function parseEnvironment(name: string): EnvironmentName {
  if (!(ENVIRONMENT_NAMES as string[]).includes(name)) {
    throw usageError(`Unknown environment "${name}": use one of ${ENVIRONMENT_NAMES.join(', ')}`);
  }
  return name as EnvironmentName;
}

export interface Target {
  environment: EnvironmentName;
  baseUrl: string;
}

const LOOPBACK = new Set(['127.0.0.1', '[::1]']);

/**
 * The base address: --api-url, else the account's own address, else the environment's. An API key
 * travels over HTTPS only, except to this machine's loopback with --allow-localhost.
 */
export function resolveTarget(flags: CredentialFlags, credential: ResolvedCredential | undefined, config: StoredConfig): Target {
  const account = credential?.source === 'account' && credential.account ? config.accounts[credential.account] : undefined;
  const environment = flags.environment ? parseEnvironment(flags.environment) : (account?.environment ?? 'prod');
  const fromAccount = !flags.environment || flags.environment === account?.environment ? account?.apiUrl : undefined;
  const named = environment === 'dev' ? config.devApiUrl : ENVIRONMENTS[environment];
  const address = flags.apiUrl ?? fromAccount ?? named;
  if (address === undefined) {
    throw usageError('The dev environment has no address yet: run svc auth login --environment dev --api-url <url> once');
  }
  return { environment, baseUrl: checkAddress(address, flags.allowLocalhost === true) };
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
    throw usageError(`Refusing plain HTTP to ${url.origin}: pass --allow-localhost to talk to a server on this machine`);
  }
  return url.origin;
}

export function requireCredential(credential: ResolvedCredential | undefined): ResolvedCredential {
  if (!credential) {
    throw new CliError(EXIT.auth, 'Not logged in: run svc auth login, pass --api-key or set SVC_API_KEY', 'authentication_required');
  }
  return credential;
}

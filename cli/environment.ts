/*
 * The environment variables svc reads, with what each does: docs/reference/configuration.md is
 * generated from this list, and test/docs/reference.test.ts fails when cli/ reads one not listed.
 */
import { DEFAULT_TIMEOUT_SECONDS } from './exit-codes.js';

export const CLI_ENVIRONMENT = [
  { name: 'SVC_API_KEY', default: 'unset', description: 'The v4 API key when `--api-key` is not given; else the active account of the config file is used.' },
  {
    name: 'SVC_TIMEOUT',
    default: String(DEFAULT_TIMEOUT_SECONDS),
    description: 'Seconds to wait for each answer of the API when `--timeout` is not given (fractions allowed); past it svc exits 124.',
  },
  { name: 'XDG_CONFIG_HOME', default: '~/.config', description: 'Where the config file of accounts is kept: `$XDG_CONFIG_HOME/svc/config.json` (mode 0600).' },
  { name: 'APPDATA', default: 'set by Windows', description: 'On Windows, where the config file is kept when `XDG_CONFIG_HOME` is unset: `%APPDATA%\\svc\\config.json`.' },
  { name: 'HOME', default: 'the user’s home', description: 'The home directory under which `.config` lies when `XDG_CONFIG_HOME` is unset (not on Windows).' },
  { name: 'COLUMNS', default: 'unset', description: 'The width tables fit when stdout is no terminal; unset, piped output is never cut.' },
  { name: 'NO_COLOR', default: 'unset', description: 'Set to anything: no colour, even on a terminal (https://no-color.org).' },
] as const;

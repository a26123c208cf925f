import { useColour, type CliIo } from './io.js';

/** The exit codes of `svc`, documented by `svc help exit-codes`; scripts and CI rely on them. */
export const EXIT = {
  ok: 0,
  /** The API answered with an error (or could not be reached); for `migrate audit`, findings. */
  failure: 1,
  usage: 2,
  auth: 4,
  conflict: 5,
  /** No answer within --timeout: the code timeout(1) uses, so scripts can retry on it alone. */
  timeout: 124,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** How long svc waits for an answer unless --timeout or SVC_TIMEOUT say otherwise (exit 124 after). */
export const DEFAULT_TIMEOUT_SECONDS = 30;

export const EXIT_CODES_HELP = `Exit codes of svc:

  0  success
  1  the API refused or failed the request (4xx other than those below, 5xx, a redirect,
     which svc never follows, or the API could not be reached); a destructive command's
     question answered no; for "svc migrate audit": findings (see --fail-on)
  2  usage error: unknown command or flag, a flag or input the operation's schema refuses
     (checked before any request is sent), plain HTTP without --allow-localhost, a
     destructive command without --yes when stdin is no terminal; for "svc migrate audit":
     bad input, such as an unknown v2 scope
  4  authentication required or refused: no credential, a legacy v2 key, an unknown,
     revoked or disabled key (401), or a credential that lacks the access (403)
  5  conflict (409): the request clashes with existing data, such as a duplicate team name
124  timeout: the API did not answer within --timeout seconds (else SVC_TIMEOUT, default
     ${DEFAULT_TIMEOUT_SECONDS}); the same code as timeout(1), so a script can retry on it alone

With --format json, failures print the error envelope {ok: false, error, meta} on stdout too.
`;

/** The exit code of an API error, by HTTP status. */
export function exitCodeForStatus(status: number): ExitCode {
  if (status === 401 || status === 403) return EXIT.auth;
  if (status === 409) return EXIT.conflict;
  return EXIT.failure;
}

/** A failure that ends the command with a given exit code; the message goes to stderr. */
export class CliError extends Error {
  constructor(
    readonly exitCode: ExitCode,
    message: string,
    readonly code = exitCode === EXIT.usage ? 'usage_error' : exitCode === EXIT.auth ? 'authentication_required' : 'error',
    readonly details?: unknown,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export const usageError = (message: string, details?: unknown) => new CliError(EXIT.usage, message, 'usage_error', details);

/**
 * The one way svc starts a message on stderr: `svc: error: ` for anything that fails the
 * command, `svc: warning: ` for what does not; the word red or yellow on a terminal.
 */
export function messageLine(kind: 'error' | 'warning', text: string, io: Pick<CliIo, 'stderr' | 'env'>): string {
  const colour = useColour(io.stderr, io.env) ? (kind === 'error' ? 31 : 33) : undefined;
  const word = colour === undefined ? kind : `\x1b[${colour}m${kind}\x1b[39m`;
  return `svc: ${word}: ${text}${text.endsWith('\n') ? '' : '\n'}`;
}

/** The exit codes of `svc`, documented by `svc help exit-codes`; scripts and CI rely on them. */
export const EXIT = {
  ok: 0,
  /** The API answered with an error (or could not be reached); for `migrate audit`, findings. */
  failure: 1,
  usage: 2,
  auth: 4,
  conflict: 5,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

export const EXIT_CODES_HELP = `Exit codes of svc:

  0  success
  1  the API refused or failed the request (4xx other than those below, 5xx, or the API
     could not be reached); for "svc migrate audit": findings (see --fail-on)
  2  usage error: unknown command or flag, a flag or input the operation's schema refuses
     (checked before any request is sent), plain HTTP without --allow-localhost; for
     "svc migrate audit": bad input, such as an unknown v2 scope
  4  authentication required or refused: no credential, a legacy v2 key, an unknown,
     revoked or disabled key (401), or a credential that lacks the access (403)
  5  conflict (409): the request clashes with existing data, such as a duplicate team name

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

import { API_KEY_PREFIX } from '../src/access/api-keys.js';
import { CliError, DEFAULT_TIMEOUT_SECONDS, EXIT, exitCodeForStatus, usageError } from './exit-codes.js';
import type { Target } from './config.js';
import type { CliIo } from './io.js';
import { packageVersion } from '../src/version.js';

/** The v4 envelope, success or failure, exactly as the API sent it. */
export type Envelope =
  | { ok: true; data: unknown; meta: Record<string, unknown> }
  | { ok: false; error: { code: string; message: string; details?: unknown }; meta: Record<string, unknown> };

/** The API answered with an error envelope; it is printed as received with --format json. */
export class ApiError extends CliError {
  constructor(
    readonly status: number,
    readonly envelope: Envelope & { ok: false },
  ) {
    super(exitCodeForStatus(status), envelope.error.message, envelope.error.code, envelope.error.details);
    this.name = 'ApiError';
  }
}

/** Refuses a legacy v2 key before it leaves the machine, with the API's own message. */
export async function refuseLegacyKey(apiKey: string): Promise<void> {
  if (apiKey.startsWith(API_KEY_PREFIX)) return;
  const { NOT_USER_BOUND_MESSAGE } = await import('../src/access/authenticate.js');
  throw new CliError(EXIT.auth, NOT_USER_BOUND_MESSAGE, 'api_key_not_user_bound');
}

export interface ApiRequest {
  method: 'GET' | 'POST' | 'PATCH';
  /** The path with its parameters filled in, such as /v4/teams/team_1. */
  path: string;
  query?: Record<string, string>;
  body?: unknown;
}

/** --timeout, else SVC_TIMEOUT, else the default: seconds, fractions allowed, more than 0. */
export function parseTimeout(flag: string | undefined, env: NodeJS.ProcessEnv): number {
  const text = flag ?? (env.SVC_TIMEOUT || undefined);
  if (text === undefined) return DEFAULT_TIMEOUT_SECONDS;
  const seconds = Number(text);
  if (text.trim() === '' || !Number.isFinite(seconds) || seconds <= 0) {
    throw usageError(`${flag !== undefined ? `--timeout ${text}` : `SVC_TIMEOUT=${text}`}: expected a number of seconds greater than 0`);
  }
  return seconds;
}

/** The API's address moved: svc names where to, and the user points --api-url there if they trust it. */
function redirectRefused(method: string, url: URL, response: Response): CliError {
  const location = response.headers.get('location');
  let to = 'no Location';
  if (location !== null) to = URL.canParse(location, url.href) ? new URL(location, url).href : location;
  return new CliError(
    EXIT.failure,
    `${method} ${url.href}: the API answered HTTP ${response.status}, redirecting to ${to}; svc does not follow redirects, so the API key is sent to --api-url only (point --api-url at the new address if you trust it)`,
    'redirect_refused',
    { status: response.status, location },
  );
}

const isTimeout = (error: unknown) => error instanceof Error && error.name === 'TimeoutError';

/**
 * One call to the v4 API with the run's fetch, answered in full within `timeoutSeconds` (headers
 * and body); resolves with the success envelope, throws ApiError or CliError otherwise.
 */
export async function callApi(
  fetch: CliIo['fetch'],
  target: Target,
  apiKey: string,
  request: ApiRequest,
  timeoutSeconds: number,
): Promise<Envelope & { ok: true }> {
  await refuseLegacyKey(apiKey);
  const url = new URL(request.path, target.baseUrl);
  for (const [name, value] of Object.entries(request.query ?? {})) url.searchParams.set(name, value);
  const timedOut = () =>
    new CliError(
      EXIT.timeout,
      `${request.method} ${url.href}: no answer within ${timeoutSeconds} s (wait longer with --timeout <seconds> or SVC_TIMEOUT)`,
      'timeout',
    );
  const signal = AbortSignal.timeout(timeoutSeconds * 1000);
  let response: Response;
  try {
    response = await fetch(url, {
      method: request.method,
      headers: {
        'x-api-key': apiKey,
        'user-agent': `svc/${packageVersion()}`,
        ...(request.body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: request.body === undefined ? undefined : JSON.stringify(request.body),
      // A redirect is refused, not followed: following it would send the key to whatever the Location names.
      redirect: 'manual',
      signal,
    });
  } catch (error) {
    if (isTimeout(error)) throw timedOut();
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    throw new CliError(EXIT.failure, `Cannot reach ${target.baseUrl}: ${cause?.code ?? cause?.message ?? (error as Error).message}`, 'unreachable');
  }
  if (response.status >= 300 && response.status < 400) {
    await response.body?.cancel();
    throw redirectRefused(request.method, url, response);
  }
  let text: string;
  try {
    text = await response.text();
  } catch (error) {
    if (isTimeout(error)) throw timedOut();
    throw new CliError(EXIT.failure, `${target.baseUrl} broke off its answer: ${(error as Error).message}`, 'unreachable');
  }
  let envelope: Envelope;
  try {
    envelope = JSON.parse(text) as Envelope;
  } catch {
    throw new CliError(EXIT.failure, `${target.baseUrl} answered HTTP ${response.status} without a JSON envelope`, 'bad_response');
  }
  if (!envelope.ok) throw new ApiError(response.status, envelope);
  return envelope;
}

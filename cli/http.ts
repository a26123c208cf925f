import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { API_KEY_PREFIX } from '../src/access/api-keys.js';
import { CliError, DEFAULT_TIMEOUT_SECONDS, EXIT, exitCodeForStatus, usageError } from './exit-codes.js';
import type { Target } from './config.js';
import type { CliIo } from './io.js';
import { packageVersion } from '../src/kit/version.js';

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

/** Attempts per call: the first and up to three retries, all within the one --timeout. */
const ATTEMPTS = 4;
const FIRST_BACKOFF_MS = 250;
/** The longest Retry-After svc honours; a longer one ends the retries. */
const MAX_RETRY_AFTER_MS = 5000;
/** Answers of a proxy or an instance that did not serve the request (a balancer's 502, a draining instance's 503). */
const RETRIED_STATUSES = new Set([502, 503]);

/** A failure another attempt may cure: the connection, or a 502/503 answer (its Retry-After in ms, if any). */
class Retryable extends Error {
  constructor(
    readonly failure: CliError | { status: number; text: string },
    readonly retryAfterMs?: number,
  ) {
    super('retryable');
  }
}

function retryAfterMs(response: Response): number | undefined {
  const seconds = Number(response.headers.get('retry-after') ?? Number.NaN);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : undefined;
}

/**
 * One call to the v4 API with the run's fetch, answered in full within `timeoutSeconds` (headers
 * and body); resolves with the success envelope, throws ApiError or CliError otherwise. A lost
 * connection or a 502/503 is retried with backoff within the timeout: a write carries one
 * Idempotency-Key over all its attempts, so the API applies it once however many reach it.
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
  const deadline = Date.now() + timeoutSeconds * 1000;
  const signal = AbortSignal.timeout(timeoutSeconds * 1000);
  const headers = {
    'x-api-key': apiKey,
    'user-agent': `svc/${packageVersion()}`,
    ...(request.body === undefined ? {} : { 'content-type': 'application/json' }),
    ...(request.method === 'GET' ? {} : { 'idempotency-key': randomUUID() }),
  };
  const attempt = async (): Promise<{ status: number; text: string }> => {
    let response: Response;
    try {
      response = await fetch(url, {
        method: request.method,
        headers,
        body: request.body === undefined ? undefined : JSON.stringify(request.body),
        // A redirect is refused, not followed: following it would send the key to whatever the Location names.
        redirect: 'manual',
        signal,
      });
    } catch (error) {
      if (isTimeout(error)) throw timedOut();
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      throw new Retryable(new CliError(EXIT.failure, `Cannot reach ${target.baseUrl}: ${cause?.code ?? cause?.message ?? (error as Error).message}`, 'unreachable'));
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
      throw new Retryable(new CliError(EXIT.failure, `${target.baseUrl} broke off its answer: ${(error as Error).message}`, 'unreachable'));
    }
    if (RETRIED_STATUSES.has(response.status)) throw new Retryable({ status: response.status, text }, retryAfterMs(response));
    return { status: response.status, text };
  };

  let answer: { status: number; text: string } | undefined;
  for (let n = 1; answer === undefined; n++) {
    try {
      answer = await attempt();
    } catch (error) {
      if (!(error instanceof Retryable)) throw error;
      const waitMs = error.retryAfterMs ?? FIRST_BACKOFF_MS * 2 ** (n - 1);
      const last = n === ATTEMPTS || waitMs > MAX_RETRY_AFTER_MS || Date.now() + waitMs >= deadline;
      if (last && error.failure instanceof CliError) {
        throw new CliError(error.failure.exitCode, n > 1 ? `${error.failure.message} (after ${n} attempts)` : error.failure.message, error.failure.code);
      }
      if (last) answer = error.failure as { status: number; text: string };
      else await sleep(waitMs, undefined, { signal }).catch(() => Promise.reject(timedOut()));
    }
  }
  let envelope: Envelope;
  try {
    envelope = JSON.parse(answer.text) as Envelope;
  } catch {
    throw new CliError(EXIT.failure, `${target.baseUrl} answered HTTP ${answer.status} without a JSON envelope`, 'bad_response');
  }
  if (!envelope.ok) throw new ApiError(answer.status, envelope);
  return envelope;
}

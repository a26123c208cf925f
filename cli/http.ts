import { API_KEY_PREFIX } from '../src/access/api-keys.js';
import { CliError, EXIT, exitCodeForStatus } from './exit-codes.js';
import type { Target } from './config.js';
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

/** One call to the v4 API; resolves with the success envelope, throws ApiError or CliError otherwise. */
export async function callApi(target: Target, apiKey: string, request: ApiRequest): Promise<Envelope & { ok: true }> {
  await refuseLegacyKey(apiKey);
  const url = new URL(request.path, target.baseUrl);
  for (const [name, value] of Object.entries(request.query ?? {})) url.searchParams.set(name, value);
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
    });
  } catch (error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    throw new CliError(EXIT.failure, `Cannot reach ${target.baseUrl}: ${cause?.code ?? cause?.message ?? (error as Error).message}`, 'unreachable');
  }
  const text = await response.text();
  let envelope: Envelope;
  try {
    envelope = JSON.parse(text) as Envelope;
  } catch {
    throw new CliError(EXIT.failure, `${target.baseUrl} answered HTTP ${response.status} without a JSON envelope`, 'bad_response');
  }
  if (!envelope.ok) throw new ApiError(response.status, envelope);
  return envelope;
}

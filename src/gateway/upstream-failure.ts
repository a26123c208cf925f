import type { GatewayDeps } from './deps.js';
import { AppError } from '../kit/errors.js';

/** A failed fetch to an upstream (the legacy v2 API, or the v4 core when the gateway runs apart) as the v2 error, counted. */
export function upstreamFailure(
  core: GatewayDeps,
  error: unknown,
  upstream: { kind: string; name: string; call: string; timeoutMs: number },
): AppError {
  const { kind, name, call, timeoutMs } = upstream;
  if (error instanceof Error && error.name === 'TimeoutError') {
    core.metrics.gateway.recordUpstreamError(`${kind}_timeout`);
    return new AppError(504, 'v2_upstream_timeout', `${name} did not answer ${call} within ${timeoutMs} ms`);
  }
  core.metrics.gateway.recordUpstreamError(`${kind}_unreachable`);
  return new AppError(502, 'v2_upstream_unavailable', `${name} could not be reached for ${call}; try again later`);
}

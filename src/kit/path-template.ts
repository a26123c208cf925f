/*
 * Route paths with `:name` parameters (`/v4/orders/:orderId/events`), as the operation table, the v2
 * maps and Fastify write them: their parameters, and the path filled from a request's values. One
 * reading of the syntax for the REST client of the CLI, the gateway and the generated documents.
 */

const PARAM = /:(\w+)/g;

/** The `:name` parameters of a path, in order. */
export const pathParams = (path: string): string[] => [...path.matchAll(PARAM)].map((match) => match[1]!);

/**
 * The path cut at its parameters: literal text at even indices, a parameter's name at odd ones. For a
 * path filled on every request, cut once (a regex replace per call showed in a v2 read's CPU profile).
 */
export const splitPath = (path: string): string[] => path.split(PARAM);

/** The path in OpenAPI's spelling: `{name}` for `:name`. */
export const openApiPath = (path: string): string => path.replace(PARAM, '{$1}');

/** One parameter's value as a path segment, percent-encoded; it throws, naming the parameter, on a value that is none. */
export type SegmentOf = (name: string, value: unknown) => string;

/** Text or a finite number, percent-encoded; nothing else is a segment. */
function encodedSegment(path: string): SegmentOf {
  return (name, value) => {
    if (typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value))) return encodeURIComponent(value);
    const problem = value === undefined || value === null ? 'is missing' : `must be text or a number, not ${Array.isArray(value) ? 'a list' : typeof value}`;
    throw new Error(`Path parameter ${name} of ${path} ${problem}`);
  };
}

/**
 * The path with each `:name` filled from `values` by `segmentOf` (by default encodedSegment), and the
 * values that are no parameter of the path: the query or the body of the call.
 */
export function fillPath(
  path: string,
  values: Readonly<Record<string, unknown>>,
  segmentOf: SegmentOf = encodedSegment(path),
): { path: string; rest: Record<string, unknown> } {
  const rest = { ...values };
  const filled = path.replace(PARAM, (_segment, name: string) => {
    // Own fields only: `:constructor` must not find Object's.
    const value = Object.hasOwn(rest, name) ? rest[name] : undefined;
    delete rest[name];
    return segmentOf(name, value);
  });
  return { path: filled, rest };
}

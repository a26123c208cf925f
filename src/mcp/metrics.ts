import type { Registry } from 'prom-client';
import { SeriesCounter } from '../kit/metric-series.js';

/** ok, or why a call did not run: an AppError class, a refused approval, a missing scope. */
export type ToolOutcome = 'ok' | 'denied' | 'invalid' | 'not_found' | 'conflict' | 'error' | 'declined' | 'insufficient_scope' | 'internal_error';

export interface McpMetrics {
  recordToolCall(tool: string, outcome: ToolOutcome): void;
}

const TOOL_CALLS = 'svc_mcp_tool_calls_total';

/** Labels are bounded: tool names come from the operation table (unknown names count as "unknown"). */
export function createMcpMetrics(registry: Registry): McpMetrics {
  // One core may serve several apps (tests); the counter is registered once per registry.
  const existing = registry.getSingleMetric(TOOL_CALLS) as unknown;
  // Counted on every tool call: plain numbers, as the HTTP layer's (src/kit/metric-series.ts).
  const calls =
    existing instanceof SeriesCounter
      ? (existing as SeriesCounter<'tool' | 'outcome'>)
      : new SeriesCounter<'tool' | 'outcome'>(TOOL_CALLS, 'MCP tools/call requests, by tool and outcome', ['tool', 'outcome'], registry);
  return {
    recordToolCall(tool, outcome) {
      calls.inc(`${outcome} ${tool}`, () => ({ tool, outcome }));
    },
  };
}

/** The outcome label of a failed call, from its HTTP status. */
export function outcomeOfStatus(status: number): ToolOutcome {
  if (status === 403) return 'denied';
  if (status === 400 || status === 422) return 'invalid';
  if (status === 404) return 'not_found';
  if (status === 409) return 'conflict';
  return status >= 500 ? 'internal_error' : 'error';
}

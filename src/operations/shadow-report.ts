import { z } from 'zod';
import type { Capability } from '../access/capabilities.js';
import { forbidden } from '../errors.js';
import type { Core } from '../core.js';
import type { ShadowReport } from '../gateway/shadow-check.js';
import { Timestamp } from './common.js';
import { defineOperation, onDemand, requireCapability, type OperationContext } from './operation.js';

/*
 * The shadow check's findings (src/gateway/shadow-check.ts), for `svc gateway shadow-report` and
 * automation. Admins only, with mcp:company:read: it describes the companies' integrations.
 */

const shadowChecks = onDemand(() => import('../gateway/shadow-check.js'));

const Counts = {
  compared: z.number().int().describe('Answers compared: equal plus different'),
  equal: z.number().int(),
  different: z.number().int(),
  legacySlow: z.number().int().describe('The legacy v2 API did not answer within SHADOW_TIMEOUT_MS'),
  legacyError: z.number().int().describe('The legacy v2 API was unreachable, failed (5xx) or answered no JSON'),
  dropped: z.number().int().describe('Samples skipped because SHADOW_MAX_IN_FLIGHT legacy calls were under way'),
};

const DifferenceKind = z.enum(['missing', 'added', 'changed']).describe('missing: only v2 has it; added: only the translation has it; changed: both, unequal');

export const ShadowReportSchema = z.object({
  enabled: z.boolean().describe('LEGACY_V2_UPSTREAM and a SHADOW_SAMPLE_RATE above 0 are set'),
  sampleRate: z.number(),
  since: Timestamp.describe('When this instance started counting (counts and examples are per instance)'),
  totals: z.object(Counts),
  routes: z.array(
    z.object({
      route: z.string().describe('The v2 route, "METHOD /path"'),
      ...Counts,
      differences: z.array(z.object({ path: z.string().describe('Field path, list elements as []'), kind: DifferenceKind, count: z.number().int() })),
    }),
  ),
  examples: z.array(
    z.object({
      at: Timestamp,
      route: z.string(),
      path: z.string().describe('The v2 path called, without its query'),
      legacyKeyId: z.string(),
      differences: z.array(
        z.object({
          path: z.string(),
          kind: DifferenceKind,
          legacy: z.string().optional().describe('The v2 value as JSON, shortened; secret-like fields masked'),
          translated: z.string().optional().describe('The translated value as JSON, shortened; secret-like fields masked'),
        }),
      ),
      moreDifferences: z.number().int(),
    }),
  ),
});

/** The legacy keys' shadow check describes a company's integrations, as the legacy-key operations do. */
const SHADOW_REPORT_CAPABILITY = 'mcp:company:read' satisfies Capability;

/**
 * The report for one caller: admins whose credential reads company data, their companies' legacy keys
 * only. Shared with the separate gateway, where the check runs and the caller comes from GET /v4/me.
 */
export async function shadowReportFor(
  core: Core,
  caller: { role: string; companyIds: readonly string[]; capabilities: ReadonlySet<string> },
): Promise<ShadowReport> {
  requireCapability(caller.capabilities, SHADOW_REPORT_CAPABILITY, 'get_shadow_report');
  if (caller.role !== 'admin') throw forbidden('admin_only', 'Only an admin may read the shadow check of their companies’ legacy keys');
  return (await shadowChecks()).shadowCheckOf(core).report(caller.companyIds);
}

export const shadowReportOperations = [
  defineOperation({
    name: 'get_shadow_report',
    cli: 'gateway shadow-report',
    title: 'Read the shadow check of the v2 translation',
    description:
      'Reads what the gateway’s shadow check found for the legacy v2 keys of the companies the caller administers (admins only, else 403): per v2 route, how many sampled GETs were compared with the legacy v2 API, how many were equal or different, and how often the legacy API was slow, failing or the sample dropped; the field paths that differed; and the last differing answers, with values shortened and secret-like fields masked. Counts are this instance’s since `since`; enabled is false unless LEGACY_V2_UPSTREAM and SHADOW_SAMPLE_RATE are set.',
    capability: SHADOW_REPORT_CAPABILITY,
    readOnly: true,
    method: 'GET',
    path: '/v4/admin/shadow-report',
    origin: 'extension',
    input: z.strictObject({}),
    output: ShadowReportSchema,
    handler: async ({ core, principal }: OperationContext<Core>) => shadowReportFor(core, principal),
  }),
];

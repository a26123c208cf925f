import { z } from 'zod';
import type { Caller } from '../../access/principal.js';
import type { MigrationDeps } from '../deps.js';
import type { ShadowCheckDeps, ShadowReport } from '../shadow-check.js';
import { Timestamp } from '../../operations/common.js';
import { MIGRATION_READ } from './legacy-keys.js';
import { defineOperation, onDemand, requireAccess, type OperationContext } from '../../operations/operation.js';

/*
 * The shadow check's findings (src/migration/shadow-check.ts), for `svc gateway shadow-report` and
 * automation. Read like the legacy keys (MIGRATION_READ): it describes the companies' integrations.
 */

const shadowChecks = onDemand(() => import('../shadow-check.js'));

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

/**
 * The report for one caller: human admins whose credential reads company data, their companies' legacy
 * keys only. Shared with the separate gateway, where the check runs and the caller comes from GET /v4/me.
 */
export async function shadowReportFor(core: ShadowCheckDeps, caller: Caller): Promise<ShadowReport> {
  requireAccess(caller, MIGRATION_READ, 'get_shadow_report');
  return (await shadowChecks()).shadowCheckOf(core).report(caller.companyIds);
}

export const shadowReportOperations = [
  defineOperation({
    name: 'get_shadow_report',
    cli: 'gateway shadow-report',
    title: 'Read the shadow check of the v2 translation',
    description:
      'Reads what the gateway’s shadow check found for the legacy v2 keys of the companies the caller administers (human admins only, else 403; an integration’s non-personal user too): per v2 route, how many sampled GETs were compared with the legacy v2 API, how many were equal or different, and how often the legacy API was slow, failing or the sample dropped; the field paths that differed; and the last differing answers, with values shortened and secret-like fields masked. Counts are this instance’s since `since`; enabled is false unless LEGACY_V2_UPSTREAM and SHADOW_SAMPLE_RATE are set.',
    ...MIGRATION_READ,
    readOnly: true,
    method: 'GET',
    path: '/v4/admin/shadow-report',
    origin: 'extension',
    input: z.strictObject({}),
    output: ShadowReportSchema,
    handler: async ({ core, principal }: OperationContext<MigrationDeps>) => shadowReportFor(core, principal),
  }),
];

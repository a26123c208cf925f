import type { AnyOperation } from '../operations/operation.js';
import { DOMAIN_OPERATIONS } from '../operations/domain-table.js';
import { legacyKeyOperations } from '../migration/operations/legacy-keys.js';
import { shadowReportOperations } from '../migration/operations/shadow-report.js';

/** The operation table: every REST route, MCP tool and CLI command is derived from this list. */
export const OPERATIONS: readonly AnyOperation[] = [...DOMAIN_OPERATIONS, ...legacyKeyOperations, ...shadowReportOperations];

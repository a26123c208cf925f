import type { AnyOperation } from './operation.js';
import { identityOperations } from './identity.js';
import { teamOperations } from './teams.js';
import { employeeOperations } from './employees.js';
import { inventoryOperations } from './inventory.js';
import { companyOperations } from './company.js';
import { orderWriteOperations } from './orders.js';
import { orderReadOperations } from './order-reads.js';
import { orderTrackingOperations } from './order-tracking.js';
import { legacyKeyOperations } from './legacy-keys.js';
import { shadowReportOperations } from './shadow-report.js';

/** The operation table: every REST route, MCP tool and CLI command is derived from this list. */
export const OPERATIONS: readonly AnyOperation[] = [
  ...identityOperations,
  ...orderReadOperations,
  ...orderWriteOperations,
  ...orderTrackingOperations,
  ...employeeOperations,
  ...teamOperations,
  ...inventoryOperations,
  ...companyOperations,
  ...legacyKeyOperations,
  ...shadowReportOperations,
];

const BY_NAME = new Map(OPERATIONS.map((op) => [op.name, op]));

/** Called per request by the gateway and MCP: a map, not a scan of the table. */
export function operationByName(name: string): AnyOperation | undefined {
  return BY_NAME.get(name);
}

import type { AnyOperation } from './operation.js';
import { identityOperations } from './identity.js';
import { teamOperations } from './teams.js';
import { employeeOperations } from './employees.js';
import { inventoryOperations } from './inventory.js';
import { companyOperations } from './company.js';
import { orderWriteOperations } from './orders.js';
import { orderReadOperations } from './order-reads.js';
import { orderEventOperations } from './order-events.js';
import { orderTrackingOperations } from './order-tracking.js';

/**
 * The operations on company data (identity, orders, employees, teams, inventory, addresses): the
 * spec's tools and their extensions. The v2 gateway translates into these, so none of them may
 * depend on the gateway; the migration's own operations join them in the full table
 * (src/app/operation-table.ts).
 */
export const DOMAIN_OPERATIONS: readonly AnyOperation[] = [
  ...identityOperations,
  ...orderReadOperations,
  ...orderEventOperations,
  ...orderWriteOperations,
  ...orderTrackingOperations,
  ...employeeOperations,
  ...teamOperations,
  ...inventoryOperations,
  ...companyOperations,
];

const BY_NAME = new Map(DOMAIN_OPERATIONS.map((op) => [op.name, op]));

/** Called per request by the gateway: a map, not a scan of the table. */
export function domainOperationByName(name: string): AnyOperation | undefined {
  return BY_NAME.get(name);
}

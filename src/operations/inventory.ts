import type { AnyOperation } from './operation.js';

// Filled in by the inventory work package.
export const inventoryOperations: AnyOperation[] = [];

import type { AnyOperation } from './operation.js';

// Filled in by the company work package.
export const companyOperations: AnyOperation[] = [];

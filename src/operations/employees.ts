import type { AnyOperation } from './operation.js';

// Filled in by the employees work package.
export const employeeOperations: AnyOperation[] = [];

import type { AnyOperation } from './operation.js';

// Being written.
export const orderReadOperations: AnyOperation[] = [];

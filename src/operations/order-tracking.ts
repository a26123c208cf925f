import type { AnyOperation } from './operation.js';

// Being written.
export const orderTrackingOperations: AnyOperation[] = [];

// Node 20 lacks fs.globSync, which the conformance CLI imports (it needs it only for its tier report).
import { register } from 'node:module';

const shim = `export * from 'node:fs';
import fs from 'node:fs';
export default fs;
export function globSync() { throw new Error('globSync is unavailable on Node 20'); }`;

const hooks = `
export async function resolve(specifier, context, next) {
  if ((specifier === 'fs' || specifier === 'node:fs') && context.parentURL?.includes('@modelcontextprotocol/conformance')) {
    return { url: 'data:text/javascript,' + encodeURIComponent(${JSON.stringify(shim)}), shortCircuit: true };
  }
  return next(specifier, context);
}`;

register('data:text/javascript,' + encodeURIComponent(hooks));

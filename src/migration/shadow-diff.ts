import type { CompareRules } from '../legacy/mappings.js';
import { isJsonObject } from '../kit/json-object.js';

/*
 * The comparison of the shadow check: a legacy v2 answer against the gateway's translation of the
 * same call, after normalisation. Key order never matters; lists the maps declare unordered are
 * matched by key (or by value); volatile values are compared for presence only; fields v4 added
 * are no difference when v2 lacks them. Paths are written as the maps declare them:
 * `deliveryAddress.city`, `[]` for each element of the bare list, `[].teamId`.
 */

export type DifferenceKind = 'missing' | 'added' | 'changed';

export interface Difference {
  path: string;
  /** missing: only v2 has it (the translation lost it); added: only the translation has it; changed: both, unequal. */
  kind: DifferenceKind;
  legacy?: unknown;
  translated?: unknown;
}

/** The path of the whole body, in reports. */
export const BODY_PATH = '(body)';

/** Enough to show what went wrong; a wholly different answer need not be listed in full. */
const MAX_DIFFERENCES = 200;

type Doc = Record<string, unknown>;

/** JSON with sorted keys: equal values, whatever their key order, give equal text. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (isJsonObject(value)) {
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson(value[key])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

const fieldPath = (parent: string, key: string) => (parent === '' || parent === BODY_PATH ? key : `${parent}.${key}`);
const elementsPath = (parent: string) => (parent === BODY_PATH ? '[]' : `${parent}[]`);

class Comparison {
  readonly differences: Difference[] = [];
  private readonly unordered: Map<string, string | undefined>;
  private readonly volatile: Set<string>;
  private readonly addedInV4: Set<string>;

  constructor(rules: CompareRules) {
    this.unordered = new Map(rules.unordered.map((u) => [u.elements, u.by]));
    this.volatile = new Set(rules.volatile);
    this.addedInV4 = new Set(rules.added_in_v4);
  }

  private note(difference: Difference): void {
    if (this.differences.length < MAX_DIFFERENCES) this.differences.push(difference);
  }

  value(legacy: unknown, translated: unknown, path: string): void {
    if (this.volatile.has(path)) return;
    if (Array.isArray(legacy) && Array.isArray(translated)) return this.list(legacy, translated, elementsPath(path));
    if (isJsonObject(legacy) && isJsonObject(translated)) return this.record(legacy, translated, path);
    if (canonicalJson(legacy) !== canonicalJson(translated)) this.note({ path, kind: 'changed', legacy, translated });
  }

  private record(legacy: Doc, translated: Doc, path: string): void {
    for (const key of new Set([...Object.keys(legacy), ...Object.keys(translated)])) {
      const child = fieldPath(path, key);
      if (!Object.hasOwn(translated, key)) this.note({ path: child, kind: 'missing', legacy: legacy[key] });
      else if (!Object.hasOwn(legacy, key)) {
        if (!this.addedInV4.has(child)) this.note({ path: child, kind: 'added', translated: translated[key] });
      } else this.value(legacy[key], translated[key], child);
    }
  }

  private list(legacy: unknown[], translated: unknown[], path: string): void {
    if (!this.unordered.has(path)) {
      for (let i = 0; i < Math.max(legacy.length, translated.length); i++) {
        if (i >= translated.length) this.note({ path, kind: 'missing', legacy: legacy[i] });
        else if (i >= legacy.length) this.note({ path, kind: 'added', translated: translated[i] });
        else this.value(legacy[i], translated[i], path);
      }
      return;
    }
    const by = this.unordered.get(path);
    // Elements without the key field are matched by their whole value.
    const keyOf = (element: unknown) => (by !== undefined && isJsonObject(element) && element[by] !== undefined ? `key ${canonicalJson(element[by])}` : canonicalJson(element));
    const pending = new Map<string, unknown[]>();
    for (const element of translated) {
      const key = keyOf(element);
      pending.set(key, [...(pending.get(key) ?? []), element]);
    }
    for (const element of legacy) {
      const match = pending.get(keyOf(element))?.shift();
      if (match === undefined) this.note({ path, kind: 'missing', legacy: element });
      else this.value(element, match, path);
    }
    for (const element of [...pending.values()].flat()) this.note({ path, kind: 'added', translated: element });
  }
}

/** Every difference between the legacy v2 body and the translated one, under the route's rules (at most MAX_DIFFERENCES). */
export function compareBodies(legacy: unknown, translated: unknown, rules: CompareRules): Difference[] {
  const comparison = new Comparison(rules);
  comparison.value(legacy, translated, BODY_PATH);
  return comparison.differences;
}

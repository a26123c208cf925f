/** Levenshtein distance: insertions, deletions and substitutions each cost one. */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min(previous[j]! + 1, current[j - 1]! + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length]!;
}

/** The candidate nearest to `target`, if any is within half its length (else the hint would mislead). */
export function closest(candidates: readonly string[], target: string): string | undefined {
  let best: { value: string; distance: number } | undefined;
  for (const value of candidates) {
    const distance = editDistance(value, target);
    if (!best || distance < best.distance) best = { value, distance };
  }
  return best && best.distance <= Math.ceil(target.length / 2) ? best.value : undefined;
}

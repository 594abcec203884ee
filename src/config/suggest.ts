/** "Did you mean": the known name closest to a mistyped one, when it is close enough to be a typo. */

/** Levenshtein distance (insertions, deletions and substitutions each cost 1), case-insensitive. */
export function editDistance(a: string, b: string): number {
  const left = a.toLowerCase();
  const right = b.toLowerCase();
  let previous = Array.from({ length: right.length + 1 }, (_, j) => j);
  for (let i = 1; i <= left.length; i++) {
    const current = [i];
    for (let j = 1; j <= right.length; j++) {
      const substitution = previous[j - 1]! + (left[i - 1] === right[j - 1] ? 0 : 1);
      current.push(Math.min(previous[j]! + 1, current[j - 1]! + 1, substitution));
    }
    previous = current;
  }
  return previous[right.length]!;
}

/** The closest candidate within a third of the name's length (at least 2 edits), or undefined. */
export function closest(name: string, candidates: Iterable<string>): string | undefined {
  const limit = Math.max(2, Math.floor(name.length / 3));
  let best: { candidate: string; distance: number } | undefined;
  for (const candidate of candidates) {
    const distance = editDistance(name, candidate);
    if (distance <= limit && (best === undefined || distance < best.distance)) best = { candidate, distance };
  }
  return best?.candidate;
}

/** ` (did you mean "x"?)` or nothing. */
export function didYouMean(name: string, candidates: Iterable<string>, quote = '"'): string {
  const match = closest(name, candidates);
  return match === undefined ? '' : ` (did you mean ${quote}${match}${quote}?)`;
}

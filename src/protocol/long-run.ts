/**
 * The scanner's search through a long run of a string (scan.ts `stringStop`), apart so that scan.ts stays
 * within its size: a run is long once the word loop has read SHORT_RUN_WORDS words of it without a stop.
 */
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Words the string loop reads by itself before a long run's search (below) pays for its two native calls. */
export const SHORT_RUN_WORDS = 64;

/**
 * From `from` (word-aligned, inside a string): the first quote, backslash or control character, or the
 * piece's length. The quote and the backslash are found by `indexOf` (memchr: ~10 times fewer
 * instructions a byte than the word loop, bench/PROFILING.md) and kept in `marks` for the strings and
 * escapes after, so the piece is searched for each at most once more per one found; the words before
 * the nearer one are only tested for a control character, four at a time.
 */
export function longRunStop(
  piece: Buffer,
  from: number,
  words: Int32Array<ArrayBufferLike>,
  wordsAt: number,
  marks: Int32Array,
): number {
  let quote = marks[0]!;
  if (quote < from) marks[0] = quote = nextIn(piece, QUOTE, from);
  let backslash = marks[1]!;
  if (backslash < from) marks[1] = backslash = nextIn(piece, BACKSLASH, from);
  const to = quote < backslash ? quote : backslash;
  const last = Math.min(words.length, (to - wordsAt) >> 2);
  let w = (from - wordsAt) >> 2;
  for (; w + 4 <= last; w += 4) {
    const a = words[w]!;
    const b = words[w + 1]!;
    const c = words[w + 2]!;
    const d = words[w + 3]!;
    const below =
      (((a - 0x20202020) | 0) & ~a) |
      (((b - 0x20202020) | 0) & ~b) |
      (((c - 0x20202020) | 0) & ~c) |
      (((d - 0x20202020) | 0) & ~d);
    if ((below & 0x80808080) !== 0) break;
  }
  for (let i = wordsAt + (w << 2); i < to; i++) if (piece[i]! < 0x20) return i;
  return to;
}

const nextIn = (piece: Buffer, byte: number, from: number): number => {
  const at = piece.indexOf(byte, from);
  return at === -1 ? piece.length : at;
};

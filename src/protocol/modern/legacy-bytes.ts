/**
 * A 2026-07-28 server's complete answer made the 2025 answer the translator would build from it, on its
 * bytes (issue 33): the Session's id put where the server's stands and `"resultType":"complete"` taken out,
 * both by cutting the pieces around them (views: no byte of the payload copied), and the scan moved to
 * match, so that the answer goes on as the pieces it was read in with a scan that fits them.
 */
import { Pieces, bytesIn } from '../pieces.js';
import { valueOf } from '../scan.js';
import type { Members, Scanned, ValueSpan } from '../scanned.js';

const QUOTE = 0x22;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const COMPLETE = Buffer.from('"complete"');
/**
 * How far from `resultType`'s value its key, its colon and the comma around it are looked for. Whitespace
 * can make it farther: such an answer is left to the parse.
 */
const NEAR = 128;
const NOTHING = Buffer.alloc(0);

/** Bytes `start` to `end` of the text, replaced by `insert`. */
interface Edit {
  start: number;
  end: number;
  insert: Buffer;
}

/**
 * The answer `raw` (a success response, scanned as `scanned`) with `id` (a JSON value's bytes) for its id
 * and without its result's `resultType`, with its scan; undefined when its resultType is not "complete"
 * (the translator's to handle) or stands where this does not look.
 */
export function legacyAnswerBytes(
  raw: Pieces,
  scanned: Scanned,
  id: Buffer,
): { line: Pieces; scanned: Scanned } | undefined {
  const idSpan = scanned.top.id!;
  const edits: Edit[] = [{ start: idSpan.start, end: idSpan.end, insert: id }];
  const resultType = scanned.result.resultType;
  if (resultType !== undefined) {
    // Taking out the last of two would leave the other for a reader.
    if (scanned.innerRepeated || !isComplete(raw, resultType)) return undefined;
    const cut = memberCut(raw, resultType, scanned.top.result!);
    if (cut === undefined) return undefined;
    edits.push(cut);
    edits.sort((a, b) => a.start - b.start);
  }
  return { line: spliced(raw, edits), scanned: moved(scanned, edits) };
}

function isComplete(raw: Pieces, span: ValueSpan): boolean {
  if (span.first !== QUOTE) return false;
  if (span.end - span.start === COMPLETE.length && raw.slice(span.start, span.end).equals(COMPLETE))
    return true;
  return valueOf(raw, span) === 'complete';
}

/**
 * The bytes that go with the member whose value is `value` in the object `object`: from the comma before
 * its key to its value's end, or, when it is the first member, from its key to the comma after it.
 */
function memberCut(raw: Pieces, value: ValueSpan, object: ValueSpan): Edit | undefined {
  const from = Math.max(object.start, value.start - NEAR);
  const before = bytesIn(raw, from, value.start);
  let i = skipBack(before, before.length - 1);
  if (before[i] !== COLON) return undefined;
  i = skipBack(before, i - 1);
  if (before[i] !== QUOTE) return undefined;
  // The key is "resultType", whatever its escapes: none of its bytes is a quote.
  const open = before.lastIndexOf(QUOTE, i - 1);
  if (open < 0) return undefined;
  i = skipBack(before, open - 1);
  if (before[i] === COMMA) return { start: from + i, end: value.end, insert: NOTHING };
  if (before[i] !== OPEN_BRACE) return undefined;
  const after = bytesIn(raw, value.end, Math.min(object.end, value.end + NEAR));
  let j = 0;
  while (j < after.length && isWhitespace(after[j]!)) j++;
  if (after[j] === COMMA) return { start: from + open, end: value.end + j + 1, insert: NOTHING };
  if (after[j] === CLOSE_BRACE) return { start: from + open, end: value.end, insert: NOTHING };
  return undefined;
}

function skipBack(bytes: Buffer, from: number): number {
  let i = from;
  while (i >= 0 && isWhitespace(bytes[i]!)) i--;
  return i;
}

const isWhitespace = (byte: number): boolean =>
  byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;

/** The text with the edits (in order, apart) made: views of the pieces around them, and what they insert. */
function spliced(raw: Pieces, edits: readonly Edit[]): Pieces {
  const parts: Buffer[] = [];
  let index = 0;
  let partAt = 0;
  const keep = (start: number, end: number): void => {
    let at = start;
    while (at < end) {
      let part = raw.parts[index]!;
      while (partAt + part.length <= at) {
        partAt += part.length;
        part = raw.parts[++index]!;
      }
      const to = Math.min(end, partAt + part.length);
      parts.push(part.subarray(at - partAt, to - partAt));
      at = to;
    }
  };
  let cursor = 0;
  let length = raw.length;
  for (const edit of edits) {
    keep(cursor, edit.start);
    if (edit.insert.length > 0) parts.push(edit.insert);
    cursor = edit.end;
    length += edit.insert.length - (edit.end - edit.start);
  }
  keep(cursor, raw.length);
  return new Pieces(parts, length);
}

/** The scan of the edited text: every span where it now stands; `resultType` gone. */
function moved(scanned: Scanned, edits: readonly Edit[]): Scanned {
  const at = (offset: number): number => {
    let shifted = offset;
    for (const edit of edits) {
      if (edit.end <= offset) shifted += edit.insert.length - (edit.end - edit.start);
    }
    return shifted;
  };
  const move = <K extends string>(members: Members<K>): Members<K> => {
    const out: Members<string> = {};
    for (const [key, span] of Object.entries(members) as [string, ValueSpan][]) {
      out[key] = { first: span.first, start: at(span.start), end: at(span.end) };
    }
    return out as Members<K>;
  };
  const { resultType: _gone, ...result } = scanned.result;
  return {
    ...scanned,
    top: move(scanned.top),
    params: move(scanned.params),
    result: move(result),
    error: move(scanned.error),
  };
}

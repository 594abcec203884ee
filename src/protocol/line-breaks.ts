/**
 * A JSON text read whole from an HTTP body (an upstream's answer, a client's POST), or from an SSE event of
 * several data lines (joined with LF), may be pretty-printed. Forwarded as its bytes, a raw CR or LF would
 * split its line for a stdio peer and its event for an SSE one; in a valid text such a byte can only be
 * whitespace between tokens, so it is replaced by a space, which means the same.
 */
import { Pieces, type Bytes } from './pieces.js';

const LF = 0x0a;
const CR = 0x0d;
const SPACE = 0x20;

function hasLineBreak(part: Buffer): boolean {
  return part.indexOf(LF) !== -1 || part.indexOf(CR) !== -1;
}

export function hasLineBreaks(raw: Bytes): boolean {
  return raw instanceof Pieces ? raw.parts.some(hasLineBreak) : hasLineBreak(raw);
}

/** A copy with each CR and LF a space: the bytes given may be shared, and are never written to. */
function flattened(part: Buffer): Buffer {
  if (!hasLineBreak(part)) return part;
  const copy = Buffer.from(part);
  for (let at = copy.indexOf(LF); at !== -1; at = copy.indexOf(LF, at + 1)) copy[at] = SPACE;
  for (let at = copy.indexOf(CR); at !== -1; at = copy.indexOf(CR, at + 1)) copy[at] = SPACE;
  return copy;
}

/**
 * The text on one line, for a text known to be VALID JSON (in an invalid one a line break may sit in a
 * string, and a space would make it valid). Pieces stay pieces: only those with a line break are copied.
 * Offsets are kept, so a scan of the text still holds for the result. Without a line break: `raw` itself.
 */
export function onOneLine(raw: Buffer): Buffer;
export function onOneLine(raw: Pieces): Pieces;
export function onOneLine(raw: Bytes): Bytes;
export function onOneLine(raw: Bytes): Bytes {
  if (!(raw instanceof Pieces)) return flattened(raw);
  return raw.parts.some(hasLineBreak) ? new Pieces(raw.parts.map(flattened), raw.length) : raw;
}

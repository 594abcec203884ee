/**
 * From the bytes of one message to a value, and the few facts that can be read off the bytes without
 * parsing them at all.
 */
import { ErrorCode, ProtocolError } from './errors.js';
import type { RequestId } from './messages.js';

export function parseFrame(raw: Buffer, from: string): unknown {
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    throw new ProtocolError(ErrorCode.ParseError, `Parse error: ${from} sent a line that is not valid JSON`);
  }
}

const ID_VALUE = String.raw`(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|"(?:[^"\\]|\\.)*")`;
const ID_AT_START = new RegExp(String.raw`^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*${ID_VALUE}`);
/**
 * A top-level "id" as the last member. In valid JSON a `"id": value }` that ends the text can only be a
 * member of the outermost object: a nested one would be followed by more closing brackets, and a quote
 * inside a string is escaped.
 */
const ID_AT_END = new RegExp(String.raw`,\s*"id"\s*:\s*${ID_VALUE}\s*\}\s*$`);
const RESULT_FIRST = /^\s*\{\s*"result"\s*:\s*\{/;
const EDGE_BYTES = 256;

function parseId(text: string | undefined): RequestId | null {
  if (text === undefined) return null;
  try {
    return JSON.parse(text) as RequestId;
  } catch {
    return null;
  }
}

/** Best-effort id of a message too large to parse, from its first and last bytes; null when unsure. */
export function idOfOversized(head: string, tail: string): RequestId | null {
  return parseId((ID_AT_START.exec(head) ?? ID_AT_END.exec(tail))?.[1]);
}

/**
 * Best-effort id of a response that is not valid JSON (cut short, or corrupted), from its first and last
 * bytes; null when unsure. Text with a "method" member anywhere may be a request or a notification: an id
 * read off it could name one of the reader's own requests by accident, so none is read.
 */
export function idOfBrokenAnswer(raw: Buffer): RequestId | null {
  const text = raw.toString('utf8');
  if (/"method"\s*:/.test(text)) return null;
  return idOfOversized(text.slice(0, EDGE_BYTES), text.slice(-EDGE_BYTES));
}

/**
 * The id of a success response laid out as the MCP SDK writes them (`{"result":{…},"jsonrpc":"2.0","id":…}`),
 * read off its first and last bytes; null for anything else. Lets a large result be forwarded without
 * decoding or parsing it.
 */
export function idOfResultFrame(raw: Buffer): RequestId | null {
  if (!RESULT_FIRST.test(raw.toString('latin1', 0, Math.min(raw.length, 32)))) return null;
  return parseId(ID_AT_END.exec(raw.toString('utf8', Math.max(0, raw.length - EDGE_BYTES)))?.[1]);
}

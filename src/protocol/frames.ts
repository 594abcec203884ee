/**
 * From the bytes of one message to a value, and the few facts that can be read off the bytes without
 * parsing them at all.
 */
import { ErrorCode, ProtocolError } from './errors.js';
import { setMember, type RequestId } from './messages.js';
import { aliasOf } from './exact-ids.js';
import { nestingDepth, topLevelMembers } from './nesting.js';

/**
 * How deep arrays and objects may nest in a message, on either side. Far beyond any real MCP message,
 * far below what makes JSON.stringify (recursive) overflow the stack when taskgate re-serializes one.
 */
export const MAX_NESTING = 512;

/**
 * A message nested deeper than MAX_NESTING. It is never parsed whole (a hostile one takes seconds and
 * gigabytes to parse); `value` holds its top-level members, with arrays and objects left empty, which is
 * enough to see what it was and whom to answer.
 */
export class TooDeepError extends ProtocolError {
  constructor(
    from: string,
    readonly value: Record<string, unknown>,
  ) {
    super(
      ErrorCode.InvalidRequest,
      `Invalid request: ${from} sent a message nested deeper than ${MAX_NESTING} levels (the limit of taskgate)`,
    );
    this.name = 'TooDeepError';
  }
}

/**
 * The value of one message. Nesting is judged before syntax: a message deeper than the limit is refused
 * as such, whether or not the rest of it is JSON.
 */
export function parseFrame(raw: Buffer, from: string): unknown {
  // Nesting to depth d takes 2d bytes at least: most messages are too short to need looking at.
  if (raw.length > 2 * MAX_NESTING) {
    const depth = nestingDepth(raw);
    if (depth > MAX_NESTING) throw new TooDeepError(from, shallowValue(raw));
    // Unbalanced: not JSON, and JSON.parse could build a great deal before it found out.
    if (depth === -1) throw parseError(from);
  }
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    throw parseError(from);
  }
}

const parseError = (from: string): ProtocolError =>
  new ProtocolError(ErrorCode.ParseError, `Parse error: ${from} sent a line that is not valid JSON`);

function shallowValue(raw: Buffer): Record<string, unknown> {
  const value: Record<string, unknown> = {};
  for (const [key, text] of topLevelMembers(raw)) {
    try {
      setMember(value, key, JSON.parse(text));
    } catch {
      // not a JSON value: as if absent
    }
  }
  return value;
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
/** How much of each end of a message too large to parse is kept, to tell its id and its kind. */
export const EDGE_BYTES = 256;

function parseId(text: string | undefined): RequestId | null {
  if (text === undefined) return null;
  const alias = aliasOf(text);
  if (alias !== undefined) return alias;
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
 * The id of what looks like a success response laid out as the MCP SDK writes them
 * (`{"result":{…},"jsonrpc":"2.0","id":…}`), read off its first and last bytes; null for anything else.
 * A guess, to route a large answer before it is parsed: it says nothing of whether the rest is JSON.
 */
export function idOfResultFrame(raw: Buffer): RequestId | null {
  if (!RESULT_FIRST.test(raw.toString('latin1', 0, Math.min(raw.length, 32)))) return null;
  return parseId(ID_AT_END.exec(raw.toString('utf8', Math.max(0, raw.length - EDGE_BYTES)))?.[1]);
}

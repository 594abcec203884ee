/**
 * A plain call's 2026-07-28 answer made from the upstream's bytes: the result as it came, with
 * `resultType` and the server's identity put in at its start and the client's id in the envelope. Equal
 * as a JSON value to `successResponse(id, toModernResult('tools/call', result, …))`, without copying the
 * result and serializing it again, a step the 2025 path does not take: it forwards the upstream's bytes
 * (issue 28).
 */
import { digitsOf } from '../exact-ids.js';
import type { JsonObject, RequestId } from '../messages.js';
import { endOfString } from '../nesting.js';
import type { SmallAnswer } from '../small-answer.js';
import { SERVER_INFO_META, type Implementation } from './meta.js';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;
const SPACE = 0x20;
const TAB = 0x09;
const LF = 0x0a;
const CR = 0x0d;

const HEAD_OPEN = '{"jsonrpc":"2.0","id":';
const HEAD_RESULT = ',"result":{';

/**
 * The members toModernResult adds to a result that has neither `resultType` nor `_meta`, as JSON text
 * without braces, and its length in UTF-8; made once per upstream.
 */
export interface AddedMembers {
  readonly text: string;
  readonly bytes: number;
}

export function addedMembers(serverInfo: Implementation | undefined): AddedMembers {
  const complete = '"resultType":"complete"';
  const text =
    serverInfo === undefined
      ? complete
      : `${complete},"_meta":${JSON.stringify({ [SERVER_INFO_META]: serverInfo })}`;
  return { text, bytes: Buffer.byteLength(text) };
}

/**
 * The answer to a tools/call as its bytes, or undefined when the result needs more than members added at
 * its start (it has a `resultType` or a `_meta` of its own) or the bytes are not plain enough to use as
 * they are (see resultObject). `raw` is the response `result` was read from.
 */
export function toolResultBytes(
  raw: Buffer,
  id: RequestId,
  result: JsonObject,
  added: AddedMembers,
): Buffer | undefined {
  if ('resultType' in result || '_meta' in result) return undefined;
  const span = resultObject(raw);
  return span === undefined ? undefined : answerOf(raw, span.open, span.close, id, added);
}

/**
 * The same made from what smallAnswer read of the response, without reading it again: undefined when the
 * result has a `resultType` or a `_meta`, or a line break stands in the bytes (see resultObject).
 */
export function smallAnswerBytes(
  raw: Buffer,
  answer: SmallAnswer,
  id: RequestId,
  added: AddedMembers,
): Buffer | undefined {
  if (answer.resultType !== undefined || answer.meta !== undefined || answer.lineBreak) return undefined;
  return answerOf(raw, answer.result.start, answer.result.end - 1, id, added);
}

/** The answer of `id` whose result's `{` and `}` stand at `open` and `close` in `raw`. */
function answerOf(raw: Buffer, open: number, close: number, id: RequestId, added: AddedMembers): Buffer {
  let next = open + 1;
  while (raw[next] === SPACE || raw[next] === TAB) next++;
  const empty = raw[next] === CLOSE_BRACE;
  const digits = digitsOf(id);
  const idText = digits ?? JSON.stringify(id);
  const head = `${HEAD_OPEN}${idText}${HEAD_RESULT}${added.text}${empty ? '' : ','}`;
  // Summed, not measured (Buffer.byteLength was ~2 k instructions of a ~10 k answer, PROFILING.md):
  // a number's text is ASCII, and so is every constant piece.
  const idBytes = digits !== undefined || typeof id === 'number' ? idText.length : Buffer.byteLength(idText);
  const headBytes = HEAD_OPEN.length + idBytes + HEAD_RESULT.length + added.bytes + (empty ? 0 : 1);
  // The result's members and its `}` as they came, then the response's `}`.
  const out = Buffer.allocUnsafe(headBytes + close - open + 1);
  out.write(head, 0);
  raw.copy(out, headBytes, open + 1, close + 1);
  out[out.length - 1] = CLOSE_BRACE;
  return out;
}

/**
 * Where the value of the top-level `result` member stands when it is an object: its `{` and its `}`.
 * The last such member, as JSON.parse takes duplicates. Undefined when there is none, when a top-level key
 * has an escape (`"r\u0065sult"` would be one JSON.parse reads as `result`), or when the bytes hold a line
 * break (an SSE `data:` line cannot; inside a JSON string one is always escaped).
 */
function resultObject(raw: Buffer): { open: number; close: number } | undefined {
  let depth = 0;
  let keyNext = false;
  let inResult = false;
  let open = -1;
  let close = -1;
  for (let i = 0; i < raw.length; i++) {
    const byte = raw[i];
    if (byte === QUOTE) {
      const end = endOfString(raw, i);
      if (end === -1) return undefined;
      if (depth === 1 && keyNext) {
        keyNext = false;
        for (let at = i + 1; at < end; at++) if (raw[at] === BACKSLASH) return undefined;
        inResult = end - i === 7 && raw.toString('latin1', i + 1, end) === 'result';
        if (inResult) open = close = -1;
      }
      i = end;
    } else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
      if (depth === 0) keyNext = byte === OPEN_BRACE;
      else if (depth === 1 && inResult && byte === OPEN_BRACE) open = i;
      depth++;
    } else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) {
      depth--;
      if (depth === 1 && inResult && open !== -1) close = i;
    } else if (byte === COMMA) {
      if (depth === 1) {
        keyNext = true;
        inResult = false;
      }
    } else if (byte === LF || byte === CR) {
      return undefined;
    }
  }
  return open === -1 || close === -1 ? undefined : { open, close };
}

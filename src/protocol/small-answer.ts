/**
 * The envelope of a small success response, read off its bytes by one pass that builds nothing for the
 * payload (issue 33). Below SCAN_FROM_BYTES an upstream's answer was parsed only to be forwarded as its
 * bytes, and both JSON.parse (~10 k instructions for an 85-byte answer) and scanJson (its Scanned and
 * spans, ~15 k) cost more than the rest of the forwarding: here keys are compared in place, an integer
 * id's value is read off its digits, and the grammar and nesting are checked as scanJson checks them.
 *
 * It reads only what an answer needs: a text with a top-level `method` or `error`, or one that is not an
 * object, is never a success response, and is left at once to the usual read.
 */
import { idOf, type Envelope } from './envelope.js';
import { MAX_NESTING } from './frames.js';
import { isId } from './messages.js';
import { HEX, SIMPLE_ESCAPE, valueOf } from './scan.js';
import type { ScanFailure, ValueSpan } from './scanned.js';

// The grammar's bytes are declared here, as in scan.ts and nesting.ts, not imported from one module: read
// as imported bindings in this loop they made a 76-byte answer's read 35 % slower (186 → 254 ns, session 18).
const SPACE = 0x20;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;
const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;
const LOWER_E = 0x65;
const UPPER_E = 0x45;
const LOWER_U = 0x75;

/** Before a value (whitespace passed); after one (at the byte that ends it); before a key (whitespace passed). */
const AT_VALUE = 0;
const AT_AFTER_VALUE = 1;
const AT_KEY = 2;

/** The top-level keys read: the others are passed over, `method` and `error` end the read. */
const OTHER = 0;
const JSONRPC = 1;
const ID = 2;
const RESULT = 3;
const NOT_AN_ANSWER = 4;
/** The members of `result` read (`OTHER`: any other). */
const META = 1;
const TASK = 2;
const IS_ERROR = 3;
const RESULT_TYPE = 4;

const TRUE = Buffer.from('true');
const FALSE = Buffer.from('false');
const NULL = Buffer.from('null');
const JSONRPC_2 = Buffer.from('"2.0"');
const KEY_JSONRPC = Buffer.from('jsonrpc');
const KEY_RESULT = Buffer.from('result');
const KEY_METHOD = Buffer.from('method');
const KEY_ERROR = Buffer.from('error');
const KEY_META = Buffer.from('_meta');
const KEY_TASK = Buffer.from('task');
const KEY_IS_ERROR = Buffer.from('isError');
const KEY_RESULT_TYPE = Buffer.from('resultType');
/** The keys read, for one written with escapes (decoded). */
const TOP_KEYS = new Map([
  ['jsonrpc', JSONRPC],
  ['id', ID],
  ['result', RESULT],
  ['method', NOT_AN_ANSWER],
  ['error', NOT_AN_ANSWER],
]);
const RESULT_KEYS = new Map([
  ['_meta', META],
  ['task', TASK],
  ['isError', IS_ERROR],
  ['resultType', RESULT_TYPE],
]);

/** The open containers' first bytes, by depth: one for all reads (a read runs to its end synchronously). */
const containers = new Uint8Array(MAX_NESTING + 1);
/** The string `endOfString` last passed had an escape. */
let escaped = false;
/** Whitespace `afterWhitespace` passed since the read began held a line break. */
let lineBreak = false;

/**
 * What the read learns of a success response: its envelope, and where its `result` object stands (the
 * 2026-07-28 bridge makes its answer of those bytes: result-bytes.ts).
 */
export interface SmallAnswer extends Envelope {
  /** The `result` object, its braces included (the last one, as JSON.parse takes duplicates). */
  result: ValueSpan;
  /** `result.resultType`, when there. */
  resultType?: ValueSpan;
  /** A line break stands between two of its tokens (inside a string one is always escaped). */
  lineBreak?: true;
}

/**
 * A success response's envelope (what envelopeOf says of it) and where its result stands, 'invalid' or
 * 'too-deep' for a text scanJson refuses so, or undefined for any other: valid or not, it is no success
 * response taskgate can take as it is (test/unit/small-answer.test.ts).
 */
export function smallAnswer(raw: Buffer): SmallAnswer | ScanFailure | undefined {
  const n = raw.length;
  lineBreak = false;
  let i = afterWhitespace(raw, 0, n);
  if (i === n || raw[i] !== OPEN_BRACE) return undefined;
  let at = AT_VALUE;
  let depth = 0;
  // The member being read at depth 1 (its key, where it starts) and, inside the result, at depth 2.
  let topKey = OTHER;
  let topStart = 0;
  let innerKey = OTHER;
  let innerStart = 0;
  let inResult = false;
  // What is kept: the last of each, as JSON.parse keeps the last of duplicate keys.
  let ids = 0;
  let id: ValueSpan | undefined;
  let idEscaped = false;
  let jsonrpc: ValueSpan | undefined;
  let result: ValueSpan | undefined;
  let meta: ValueSpan | undefined;
  let task: ValueSpan | undefined;
  let isError: ValueSpan | undefined;
  let resultType: ValueSpan | undefined;
  for (;;) {
    if (at === AT_VALUE) {
      if (i === n) return 'invalid';
      const byte = raw[i]!;
      if (depth === 1) {
        topStart = i;
        inResult = topKey === RESULT && byte === OPEN_BRACE;
        if (topKey === RESULT) {
          // A later `result` replaces the earlier one whole, its members too.
          meta = task = isError = resultType = undefined;
        }
      } else if (depth === 2 && inResult) {
        innerStart = i;
      }
      if (byte === QUOTE) {
        escaped = false;
        i = endOfString(raw, i, n);
        if (i === -1) return 'invalid';
        at = AT_AFTER_VALUE;
      } else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
        if (depth === MAX_NESTING) return 'too-deep';
        containers[++depth] = byte;
        i = afterWhitespace(raw, i + 1, n);
        if (i < n && raw[i] === (byte === OPEN_BRACE ? CLOSE_BRACE : CLOSE_BRACKET)) {
          depth--;
          i++;
          at = AT_AFTER_VALUE;
        } else {
          at = byte === OPEN_BRACE ? AT_KEY : AT_VALUE;
        }
        continue;
      } else if (byte === MINUS || (byte >= ZERO && byte <= NINE)) {
        i = endOfNumber(raw, i, n);
        if (i === -1) return 'invalid';
        at = AT_AFTER_VALUE;
      } else {
        const literal = byte === 0x74 ? TRUE : byte === 0x66 ? FALSE : byte === 0x6e ? NULL : undefined;
        if (literal === undefined || !holds(raw, i, literal)) return 'invalid';
        i += literal.length;
        at = AT_AFTER_VALUE;
      }
    }
    if (at === AT_AFTER_VALUE) {
      // A value ended at i: kept if it is a member read.
      if (depth === 1) {
        if (topKey === ID) {
          id = { first: raw[topStart]!, start: topStart, end: i };
          idEscaped = escaped;
        } else if (topKey === JSONRPC) {
          jsonrpc = { first: raw[topStart]!, start: topStart, end: i };
        } else if (topKey === RESULT) {
          result = { first: raw[topStart]!, start: topStart, end: i };
        }
      } else if (depth === 2 && inResult && innerKey !== OTHER) {
        const span = { first: raw[innerStart]!, start: innerStart, end: i };
        if (innerKey === META) meta = span;
        else if (innerKey === TASK) task = span;
        else if (innerKey === IS_ERROR) isError = span;
        else resultType = span;
      }
      i = afterWhitespace(raw, i, n);
      if (depth === 0) break;
      if (i === n) return 'invalid';
      const byte = raw[i]!;
      const container = containers[depth]!;
      if (byte === COMMA) {
        i = afterWhitespace(raw, i + 1, n);
        at = container === OPEN_BRACE ? AT_KEY : AT_VALUE;
      } else if (byte === (container === OPEN_BRACE ? CLOSE_BRACE : CLOSE_BRACKET)) {
        depth--;
        i++;
      } else {
        return 'invalid';
      }
      continue;
    }
    // AT_KEY
    if (i === n || raw[i] !== QUOTE) return 'invalid';
    const start = i;
    escaped = false;
    i = endOfString(raw, i, n);
    if (i === -1) return 'invalid';
    if (depth === 1) {
      topKey = topKeyAt(raw, start, i);
      if (topKey === NOT_AN_ANSWER) return undefined;
      if (topKey === ID) ids++;
    } else if (depth === 2 && inResult) {
      innerKey = resultKeyAt(raw, start, i);
    }
    i = afterWhitespace(raw, i, n);
    if (i === n || raw[i] !== COLON) return 'invalid';
    i = afterWhitespace(raw, i + 1, n);
    at = AT_VALUE;
  }
  if (i !== n) return 'invalid';
  if (id === undefined || result?.first !== OPEN_BRACE || !isJsonRpc2(raw, jsonrpc)) return undefined;
  const value =
    id.first === QUOTE && !idEscaped ? raw.toString('utf8', id.start + 1, id.end - 1) : idAt(raw, id);
  if (!isId(value)) return undefined;
  const answer: SmallAnswer = { kind: 'response', id: value, idSpan: id, result };
  if (ids > 1) answer.idRepeated = true;
  if (meta !== undefined) answer.meta = meta;
  if (task !== undefined) answer.task = task;
  if (isError !== undefined) answer.isError = isError;
  if (resultType !== undefined) answer.resultType = resultType;
  if (lineBreak) answer.lineBreak = true;
  return answer;
}

function afterWhitespace(raw: Buffer, i: number, n: number): number {
  // Every byte above the space is no whitespace: most bytes are told with one test, and no table read.
  while (i < n) {
    const byte = raw[i]!;
    if (byte > SPACE) break;
    if (byte !== SPACE) {
      if (byte === 0x0a || byte === 0x0d) lineBreak = true;
      else if (byte !== 0x09) break;
    }
    i++;
  }
  return i;
}

/** The index after the string whose opening quote is at `i`, or -1 when it is not valid JSON. */
function endOfString(raw: Buffer, i: number, n: number): number {
  i++;
  while (i < n) {
    const byte = raw[i]!;
    // Lower-case letters and the bytes of UTF-8 sequences, first: one test.
    if (byte > BACKSLASH) {
      i++;
      continue;
    }
    if (byte === QUOTE) return i + 1;
    if (byte < SPACE) return -1;
    if (byte !== BACKSLASH) {
      i++;
      continue;
    }
    escaped = true;
    if (i + 1 === n) return -1;
    const next = raw[i + 1]!;
    if (SIMPLE_ESCAPE[next] === 1) {
      i += 2;
    } else if (
      next === LOWER_U &&
      i + 5 < n &&
      HEX[raw[i + 2]!] === 1 &&
      HEX[raw[i + 3]!] === 1 &&
      HEX[raw[i + 4]!] === 1 &&
      HEX[raw[i + 5]!] === 1
    ) {
      i += 6; // lone surrogates included: JSON.parse takes them
    } else {
      return -1;
    }
  }
  return -1;
}

const isDigit = (byte: number): boolean => byte >= ZERO && byte <= NINE;

/** The index after the number that starts at `i`, or -1 when it is not one. */
function endOfNumber(raw: Buffer, i: number, n: number): number {
  if (raw[i] === MINUS) i++;
  if (i === n || !isDigit(raw[i]!)) return -1;
  if (raw[i++] !== ZERO) while (i < n && isDigit(raw[i]!)) i++;
  if (i < n && raw[i] === DOT) {
    if (++i === n || !isDigit(raw[i]!)) return -1;
    while (i < n && isDigit(raw[i]!)) i++;
  }
  if (i < n && (raw[i] === LOWER_E || raw[i] === UPPER_E)) {
    if (++i < n && (raw[i] === PLUS || raw[i] === MINUS)) i++;
    if (i === n || !isDigit(raw[i]!)) return -1;
    while (i < n && isDigit(raw[i]!)) i++;
  }
  return i;
}

/** `raw` holds the bytes of `text` at `at`. */
function holds(raw: Buffer, at: number, text: Buffer): boolean {
  if (at + text.length > raw.length) return false;
  for (let k = 0; k < text.length; k++) if (raw[at + k] !== text[k]) return false;
  return true;
}

/** Which top-level key the key from `start` to `end` (its quotes included) is. */
function topKeyAt(raw: Buffer, start: number, end: number): number {
  if (escaped) return escapedKey(raw, start, end, TOP_KEYS);
  const at = start + 1;
  switch (end - at - 1) {
    case 2:
      return raw[at] === 0x69 && raw[at + 1] === 0x64 ? ID : OTHER;
    case 5:
      return holds(raw, at, KEY_ERROR) ? NOT_AN_ANSWER : OTHER;
    case 6:
      return holds(raw, at, KEY_RESULT) ? RESULT : holds(raw, at, KEY_METHOD) ? NOT_AN_ANSWER : OTHER;
    case 7:
      return holds(raw, at, KEY_JSONRPC) ? JSONRPC : OTHER;
  }
  return OTHER;
}

/** Which member of `result` read the key from `start` to `end` (its quotes included) is. */
function resultKeyAt(raw: Buffer, start: number, end: number): number {
  if (escaped) return escapedKey(raw, start, end, RESULT_KEYS);
  const at = start + 1;
  switch (end - at - 1) {
    case 4:
      return holds(raw, at, KEY_TASK) ? TASK : OTHER;
    case 5:
      return holds(raw, at, KEY_META) ? META : OTHER;
    case 7:
      return holds(raw, at, KEY_IS_ERROR) ? IS_ERROR : OTHER;
    case 10:
      return holds(raw, at, KEY_RESULT_TYPE) ? RESULT_TYPE : OTHER;
  }
  return OTHER;
}

function escapedKey(raw: Buffer, start: number, end: number, keys: Map<string, number>): number {
  return keys.get(JSON.parse(raw.toString('utf8', start, end)) as string) ?? OTHER;
}

function isJsonRpc2(raw: Buffer, span: ValueSpan | undefined): boolean {
  if (span?.first !== QUOTE) return false;
  // Five bytes hold "2.0" only as those bytes: an escape takes six.
  if (span.end - span.start === JSONRPC_2.length) return holds(raw, span.start, JSONRPC_2);
  return valueOf(raw, span) === '2.0';
}

/** The id's value, read off the digits of an integer of at most 15 (any other: as envelopeOf reads it). */
function idAt(raw: Buffer, span: ValueSpan): unknown {
  let i = span.start;
  const negative = raw[i] === MINUS;
  if (negative) i++;
  if (span.end - i > 15) return idOf(raw, span);
  let value = 0;
  for (; i < span.end; i++) {
    const byte = raw[i]!;
    if (!isDigit(byte)) return idOf(raw, span);
    value = value * 10 + (byte - ZERO);
  }
  return negative ? -value : value;
}

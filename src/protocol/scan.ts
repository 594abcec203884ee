/**
 * One validating pass over the bytes of a JSON text (issue 33): the whole grammar, as JSON.parse judges
 * the UTF-8 decoding of the same bytes, and nesting up to MAX_NESTING, with no object or string built for
 * the payload. What it keeps is where the members a message is routed on stand: the top-level members,
 * and the direct members of the top-level `params`, `result` and `error` objects.
 *
 * UTF-8 is not checked, on purpose: `Buffer.toString('utf8')` turns every invalid sequence into U+FFFD and
 * never swallows an ASCII byte, so invalid UTF-8 inside a string is valid JSON to JSON.parse, and any byte
 * of 0x80 or more outside a string is invalid either way (no JSON token has one).
 */
import { MAX_NESTING } from './frames.js';

/** Where one member's value stands: `first` is its first byte (`"`, `{`, `[`, `t`, `f`, `n` or a number's). */
export interface ValueSpan {
  first: number;
  start: number;
  end: number;
}

/** The members of a message the routing code reads; a duplicate key is as JSON.parse takes it: the last. */
export const TOP_KEYS = ['jsonrpc', 'id', 'method', 'params', 'result', 'error'] as const;
export const INNER_KEYS = {
  params: ['_meta'],
  result: ['_meta', 'task', 'isError'],
  error: ['code', 'message'],
} as const;

type TopKey = (typeof TOP_KEYS)[number];
type Inner = keyof typeof INNER_KEYS;
export type Members<K extends string> = Partial<Record<K, ValueSpan>>;

export interface Scanned {
  /** The first byte of the text's value (`{` for anything that can be a message). */
  first: number;
  top: Members<TopKey>;
  /** A top-level key other than jsonrpc, id, method and params (one a request must not have). */
  otherMember: boolean;
  /** More than one top-level `id` (JSON.parse takes the last; `top.id` is that one). */
  idRepeated: boolean;
  params: Members<'_meta'>;
  result: Members<'_meta' | 'task' | 'isError'>;
  error: Members<'code' | 'message'>;
}

/** `invalid`: JSON.parse would throw. `too-deep`: valid up to where it nests deeper than MAX_NESTING. */
export type ScanFailure = 'invalid' | 'too-deep';

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

/** The bytes that may follow a backslash, other than `u`. */
const SIMPLE_ESCAPE = new Uint8Array(256);
for (const char of '"\\/bfnrt') SIMPLE_ESCAPE[char.charCodeAt(0)] = 1;
const HEX = new Uint8Array(256);
for (const char of '0123456789abcdefABCDEF') HEX[char.charCodeAt(0)] = 1;
const LITERALS: Record<number, Buffer> = {
  0x74: Buffer.from('true'),
  0x66: Buffer.from('false'),
  0x6e: Buffer.from('null'),
};

/** A key longer than this, escapes and all, cannot be one of the keys above (at most 7 characters × 6 bytes). */
const LONGEST_KEY_BYTES = 64;

/**
 * The text as words of 4 bytes, for the string loop: one test per word finds whether any of its bytes
 * is a quote, a backslash or a control character (the classic "has zero byte" / "has byte less than").
 */
const NO_WORDS = new Int32Array(0);
let words: Int32Array<ArrayBufferLike> = NO_WORDS;
/** Byte index of words[0] in the text being scanned. */
let wordsAt = 0;

export function scanJson(raw: Buffer): Scanned | ScanFailure {
  const aligned = (4 - (raw.byteOffset & 3)) & 3;
  wordsAt = aligned;
  words =
    raw.length - aligned >= 4
      ? new Int32Array(raw.buffer, raw.byteOffset + aligned, (raw.length - aligned) >> 2)
      : NO_WORDS;
  try {
    return scan(raw);
  } finally {
    // Not to hold the text's memory past the scan.
    words = NO_WORDS;
  }
}

const containers = new Uint8Array(MAX_NESTING + 1);

function scan(raw: Buffer): Scanned | ScanFailure {
  const n = raw.length;
  let i = skipSpace(raw, 0);
  const found: Scanned = {
    first: raw[i] ?? 0,
    top: {},
    otherMember: false,
    idRepeated: false,
    params: {},
    result: {},
    error: {},
  };
  let depth = 0;
  /** The key whose value is being read at depth 1 and 2 (undefined: one not kept). */
  let topKey: TopKey | undefined;
  let innerKey: string | undefined;
  /** Which top-level object the container at depth 2 is (undefined: none kept). */
  let inner: Inner | undefined;
  let topStart = 0;
  let innerStart = 0;

  /** Reads the key and colon at i in the object at `depth`; -1 when they are not there. */
  const readKey = (at: number): number => {
    if (raw[at] !== QUOTE) return -1;
    const end = endOfString(raw, at);
    if (end === -1) return -1;
    if (depth === 1) {
      const key = keyOf(raw, at, end, TOP_KEYS);
      topKey = key;
      if (key !== 'jsonrpc' && key !== 'id' && key !== 'method' && key !== 'params') found.otherMember = true;
      if (key === 'id' && found.top.id !== undefined) found.idRepeated = true;
      // A later duplicate replaces the earlier one whole, its members too.
      if (key === 'params' || key === 'result' || key === 'error') found[key] = {};
    } else if (depth === 2 && inner !== undefined) {
      innerKey = keyOf(raw, at, end, INNER_KEYS[inner]);
    }
    let next = skipSpace(raw, end);
    if (raw[next] !== COLON) return -1;
    next = skipSpace(raw, next + 1);
    if (depth === 1) topStart = next;
    else if (depth === 2) innerStart = next;
    return next;
  };

  for (;;) {
    // A value starts at i.
    const byte = raw[i];
    if (byte === QUOTE) {
      i = endOfString(raw, i);
    } else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
      if (depth === MAX_NESTING) return 'too-deep';
      if (depth === 1) {
        inner =
          byte === OPEN_BRACE && (topKey === 'params' || topKey === 'result' || topKey === 'error')
            ? topKey
            : undefined;
      }
      containers[++depth] = byte;
      i = skipSpace(raw, i + 1);
      const close = byte === OPEN_BRACE ? CLOSE_BRACE : CLOSE_BRACKET;
      if (raw[i] === close) {
        i++;
        depth--;
      } else {
        if (byte === OPEN_BRACE && (i = readKey(i)) === -1) return 'invalid';
        continue;
      }
    } else if (byte !== undefined && LITERALS[byte] !== undefined) {
      i = endOfLiteral(raw, i, LITERALS[byte]!);
    } else {
      i = endOfNumber(raw, i);
    }
    if (i === -1) return 'invalid';
    // A value ended at i, in the container at `depth`; then as many containers as close here.
    for (;;) {
      if (depth === 1 && topKey !== undefined) {
        found.top[topKey] = { first: raw[topStart]!, start: topStart, end: i };
      } else if (depth === 2 && inner !== undefined && innerKey !== undefined) {
        (found[inner] as Members<string>)[innerKey] = { first: raw[innerStart]!, start: innerStart, end: i };
      }
      if (depth === 0) return skipSpace(raw, i) === n ? found : 'invalid';
      i = skipSpace(raw, i);
      const next = raw[i];
      const container = containers[depth];
      if (next === COMMA) {
        i = skipSpace(raw, i + 1);
        if (container === OPEN_BRACE && (i = readKey(i)) === -1) return 'invalid';
        break;
      }
      if (next !== (container === OPEN_BRACE ? CLOSE_BRACE : CLOSE_BRACKET)) return 'invalid';
      i++;
      depth--;
    }
  }
}

function skipSpace(raw: Buffer, at: number): number {
  let i = at;
  for (;;) {
    const byte = raw[i];
    if (byte !== 0x20 && byte !== 0x0a && byte !== 0x0d && byte !== 0x09) return i;
    i++;
  }
}

/** The index after the quote that ends the string opened at `at`, or -1 when it is not a valid string. */
function endOfString(raw: Buffer, at: number): number {
  let i = at + 1;
  for (;;) {
    i = skipPlain(raw, i);
    const byte = raw[i];
    if (byte === QUOTE) return i + 1;
    if (byte !== BACKSLASH) return -1; // a control character, or the end of the text
    const escaped = raw[i + 1]!;
    if (SIMPLE_ESCAPE[escaped] === 1) {
      i += 2;
    } else if (
      escaped === 0x75 &&
      HEX[raw[i + 2]!] === 1 &&
      HEX[raw[i + 3]!] === 1 &&
      HEX[raw[i + 4]!] === 1 &&
      HEX[raw[i + 5]!] === 1
    ) {
      // Lone surrogates included: JSON.parse takes them.
      i += 6;
    } else {
      return -1;
    }
  }
}

/** The first index from `at` whose byte is a quote, a backslash or below 0x20 (or the length). */
function skipPlain(raw: Buffer, at: number): number {
  const n = raw.length;
  let i = at;
  while (i < n && (i < wordsAt || ((i - wordsAt) & 3) !== 0)) {
    const byte = raw[i]!;
    if (byte === QUOTE || byte === BACKSLASH || byte < 0x20) return i;
    i++;
  }
  const last = words.length;
  let w = (i - wordsAt) >> 2;
  while (w < last) {
    const word = words[w]!;
    const quote = word ^ 0x22222222;
    const backslash = word ^ 0x5c5c5c5c;
    const special =
      (((word - 0x20202020) | 0) & ~word) |
      (((quote - 0x01010101) | 0) & ~quote) |
      (((backslash - 0x01010101) | 0) & ~backslash);
    if ((special & 0x80808080) !== 0) break;
    w++;
  }
  i = Math.max(i, wordsAt + w * 4);
  while (i < n) {
    const byte = raw[i]!;
    if (byte === QUOTE || byte === BACKSLASH || byte < 0x20) return i;
    i++;
  }
  return n;
}

function endOfLiteral(raw: Buffer, at: number, literal: Buffer): number {
  for (let k = 1; k < literal.length; k++) if (raw[at + k] !== literal[k]) return -1;
  return at + literal.length;
}

/** The index after the number at `at`, or -1 when there is none there. */
function endOfNumber(raw: Buffer, at: number): number {
  let i = at;
  if (raw[i] === MINUS) i++;
  if (raw[i] === ZERO) i++;
  else if (isDigit(raw[i])) while (isDigit(raw[++i]));
  else return -1;
  if (raw[i] === DOT) {
    if (!isDigit(raw[++i])) return -1;
    while (isDigit(raw[++i]));
  }
  if (raw[i] === 0x65 || raw[i] === 0x45) {
    i++;
    if (raw[i] === PLUS || raw[i] === MINUS) i++;
    if (!isDigit(raw[i])) return -1;
    while (isDigit(raw[++i]));
  }
  return i;
}

const isDigit = (byte: number | undefined): boolean => byte !== undefined && byte >= ZERO && byte <= NINE;

/** Which of `keys` the (valid) string from `start` to `end`, quotes included, is, if any. */
function keyOf<K extends string>(raw: Buffer, start: number, end: number, keys: readonly K[]): K | undefined {
  if (end - start > LONGEST_KEY_BYTES) return undefined;
  let text = raw.toString('latin1', start + 1, end - 1);
  if (text.includes('\\')) text = JSON.parse(raw.toString('utf8', start, end)) as string;
  return keys.find((key) => key === text);
}

/** The value of a member, parsed: for the envelope's small members only (ids, methods, codes). */
export function valueOf(raw: Buffer, span: ValueSpan): unknown {
  return JSON.parse(raw.toString('utf8', span.start, span.end));
}

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
import { Pieces, bytesIn, type Bytes } from './pieces.js';

/**
 * From this size on, a message is scanned before it is parsed, so that one taskgate passes on unchanged
 * goes as its bytes, never decoded: below it, JSON.parse costs no more than the scan (bench/scan.js).
 */
export const SCAN_FROM_BYTES = 1024;

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
  // resultType: a 2026-07-28 answer's, which the translator takes out of the bytes (legacy-bytes.ts).
  result: ['_meta', 'task', 'isError', 'resultType'],
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
  /** A member kept of `params`, `result` or `error` stands more than once in it (the spans are the last's). */
  innerRepeated: boolean;
  params: Members<'_meta'>;
  result: Members<'_meta' | 'task' | 'isError' | 'resultType'>;
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
const LOWER_E = 0x65;
const UPPER_E = 0x45;
const LOWER_U = 0x75;

/** The bytes that may follow a backslash, other than `u`. */
const SIMPLE_ESCAPE = new Uint8Array(256);
for (const char of '"\\/bfnrt') SIMPLE_ESCAPE[char.charCodeAt(0)] = 1;
const HEX = new Uint8Array(256);
for (const char of '0123456789abcdefABCDEF') HEX[char.charCodeAt(0)] = 1;
const WHITESPACE = new Uint8Array(256);
for (const byte of [0x20, 0x0a, 0x0d, 0x09]) WHITESPACE[byte] = 1;
const LITERALS: Record<number, Buffer> = {
  0x74: Buffer.from('true'),
  0x66: Buffer.from('false'),
  0x6e: Buffer.from('null'),
};

/** A key longer than this, escapes and all, cannot be one of the keys above (at most 7 characters × 6 bytes). */
const LONGEST_KEY_BYTES = 64;

/**
 * Where the scan stands between two bytes; a piece may end in any of them. The number states past its
 * first byte are named by what may come next.
 */
const enum At {
  /** Before a value: whitespace, then its first byte. */
  Value,
  /** After `{`: whitespace, then `}` or a key. */
  ObjectOpen,
  /** After `[`: whitespace, then `]` or a value. */
  ArrayOpen,
  /** After a `,` in an object: whitespace, then a key. */
  Key,
  /** After a key: whitespace, then `:`. */
  Colon,
  /** After a value: whitespace, then `,` or the container's close (at depth 0: only whitespace). */
  AfterValue,
  String,
  /** After a backslash in a string. */
  Escape,
  /** In the hex digits of a `\u` escape (`pending` to come). */
  Unicode,
  /** In `true`, `false` or `null` (`pending`: the index of the byte to come). */
  Literal,
  /** After a leading `-`: a digit. */
  Minus,
  /** After a leading `0` (the number may end here). */
  Zero,
  Integer,
  /** After `.`: a digit. */
  Dot,
  Fraction,
  /** After `e`: a sign or a digit. */
  Exponent,
  /** After the exponent's sign: a digit. */
  ExponentSign,
  ExponentDigits,
  Failed,
}

/**
 * The text as words of 4 bytes, for the string loop: one test per word finds whether any of its bytes
 * is a quote, a backslash or a control character (the classic "has zero byte" / "has byte less than").
 * Set for the piece being scanned, for the length of one `push`.
 */
const NO_WORDS = new Int32Array(0);
let words: Int32Array<ArrayBufferLike> = NO_WORDS;
/** Byte index of words[0] in the piece being scanned. */
let wordsAt = 0;

/**
 * One validating pass over a JSON text handed in pieces, as they arrive: `push` each piece in order, then
 * `end`. It keeps its state between pieces (where in the grammar, the open containers, the key being
 * read), so that the pieces need never be joined; spans are offsets in the whole text. The verdict and
 * the spans do not depend on where the text was cut (test/unit/scan.test.ts).
 */
export class JsonScanner {
  private at = At.Value;
  /** Offset in the text of the piece being scanned. */
  private offset = 0;
  private failure: ScanFailure | undefined;
  private depth = 0;
  /** The open containers' first bytes, by depth; grown as deep as the text goes. */
  private containers = new Uint8Array(16);
  /** For `Unicode` and `Literal` (see there). */
  private pending = 0;
  private literal: Buffer = LITERALS[0x74]!;
  /** The string being read is a key (not a value). */
  private inKey = false;
  /** Where the key being read starts (its quote), and its bytes from earlier pieces (up to LONGEST_KEY_BYTES + 1). */
  private keyStart = 0;
  private keyCarried: Buffer | undefined;
  /** The key whose value is being read at depth 1 and 2 (undefined: one not kept). */
  private topKey: TopKey | undefined;
  private innerKey: string | undefined;
  /** Which top-level object the container at depth 2 is (undefined: none kept). */
  private inner: Inner | undefined;
  private topStart = 0;
  private topFirst = 0;
  private innerStart = 0;
  private innerFirst = 0;
  private readonly found: Scanned = {
    first: 0,
    top: {},
    otherMember: false,
    idRepeated: false,
    innerRepeated: false,
    params: {},
    result: {},
    error: {},
  };

  /** Scans the next piece of the text. */
  push(piece: Buffer): void {
    if (this.at === At.Failed) return;
    const aligned = (4 - (piece.byteOffset & 3)) & 3;
    wordsAt = aligned;
    words =
      piece.length - aligned >= 4
        ? new Int32Array(piece.buffer, piece.byteOffset + aligned, (piece.length - aligned) >> 2)
        : NO_WORDS;
    try {
      this.scan(piece);
    } finally {
      // Not to hold the piece's memory past the scan.
      words = NO_WORDS;
    }
    if (this.inKey && this.failure === undefined && this.keepsKeys()) this.carryKey(piece);
    this.offset += piece.length;
  }

  /** The verdict on the text pushed: no more comes. */
  end(): Scanned | ScanFailure {
    const at = this.at;
    // A number may end with the text.
    if (at === At.Zero || at === At.Integer || at === At.Fraction || at === At.ExponentDigits) {
      this.valueEnded(this.offset);
    }
    if (this.at === At.Failed) return this.failure!;
    return this.at === At.AfterValue && this.depth === 0 ? this.found : 'invalid';
  }

  private fail(failure: ScanFailure): void {
    this.at = At.Failed;
    this.failure = failure;
  }

  private scan(piece: Buffer): void {
    const n = piece.length;
    let i = 0;
    while (i < n) {
      switch (this.at) {
        case At.Value: {
          while (i < n && WHITESPACE[piece[i]!] === 1) i++;
          if (i === n) return;
          i = this.valueStarts(piece, i);
          break;
        }
        case At.ObjectOpen:
        case At.Key: {
          while (i < n && WHITESPACE[piece[i]!] === 1) i++;
          if (i === n) return;
          const byte = piece[i]!;
          if (byte === QUOTE) {
            this.inKey = true;
            this.keyStart = this.offset + i;
            this.keyCarried = undefined;
            this.at = At.String;
            i++;
          } else if (byte === CLOSE_BRACE && this.at === At.ObjectOpen) {
            this.depth--;
            i++;
            this.valueEnded(this.offset + i);
          } else {
            return this.fail('invalid');
          }
          break;
        }
        case At.ArrayOpen: {
          while (i < n && WHITESPACE[piece[i]!] === 1) i++;
          if (i === n) return;
          if (piece[i] === CLOSE_BRACKET) {
            this.depth--;
            i++;
            this.valueEnded(this.offset + i);
          } else {
            this.at = At.Value;
          }
          break;
        }
        case At.Colon: {
          while (i < n && WHITESPACE[piece[i]!] === 1) i++;
          if (i === n) return;
          if (piece[i] !== COLON) return this.fail('invalid');
          this.at = At.Value;
          i++;
          break;
        }
        case At.AfterValue: {
          while (i < n && WHITESPACE[piece[i]!] === 1) i++;
          if (i === n) return;
          const container = this.containers[this.depth];
          const byte = piece[i]!;
          if (this.depth === 0) return this.fail('invalid');
          if (byte === COMMA) {
            this.at = container === OPEN_BRACE ? At.Key : At.Value;
            i++;
          } else if (byte === (container === OPEN_BRACE ? CLOSE_BRACE : CLOSE_BRACKET)) {
            this.depth--;
            i++;
            this.valueEnded(this.offset + i);
          } else {
            return this.fail('invalid');
          }
          break;
        }
        case At.String: {
          i = this.string(piece, i);
          break;
        }
        case At.Escape: {
          const byte = piece[i++]!;
          if (SIMPLE_ESCAPE[byte] === 1) {
            this.at = At.String;
          } else if (byte === LOWER_U) {
            this.at = At.Unicode;
            this.pending = 4;
          } else {
            return this.fail('invalid');
          }
          break;
        }
        case At.Unicode: {
          if (HEX[piece[i++]!] !== 1) return this.fail('invalid');
          if (--this.pending === 0) this.at = At.String;
          break;
        }
        case At.Literal: {
          const literal = this.literal;
          while (i < n && this.pending < literal.length) {
            if (piece[i++] !== literal[this.pending++]) return this.fail('invalid');
          }
          if (this.pending === literal.length) this.valueEnded(this.offset + i);
          break;
        }
        case At.Minus: {
          const byte = piece[i]!;
          if (byte === ZERO) this.at = At.Zero;
          else if (isDigit(byte)) this.at = At.Integer;
          else return this.fail('invalid');
          i++;
          break;
        }
        case At.Zero:
        case At.Integer:
        case At.Fraction: {
          if (this.at !== At.Zero) while (i < n && isDigit(piece[i]!)) i++;
          if (i === n) return;
          const byte = piece[i]!;
          if (byte === DOT && this.at !== At.Fraction) {
            this.at = At.Dot;
            i++;
          } else if (byte === LOWER_E || byte === UPPER_E) {
            this.at = At.Exponent;
            i++;
          } else {
            this.valueEnded(this.offset + i);
          }
          break;
        }
        case At.Dot:
        case At.ExponentSign: {
          if (!isDigit(piece[i++]!)) return this.fail('invalid');
          this.at = this.at === At.Dot ? At.Fraction : At.ExponentDigits;
          break;
        }
        case At.Exponent: {
          const byte = piece[i++]!;
          if (byte === PLUS || byte === MINUS) this.at = At.ExponentSign;
          else if (isDigit(byte)) this.at = At.ExponentDigits;
          else return this.fail('invalid');
          break;
        }
        case At.ExponentDigits: {
          while (i < n && isDigit(piece[i]!)) i++;
          if (i === n) return;
          this.valueEnded(this.offset + i);
          break;
        }
        case At.Failed:
          return;
      }
    }
  }

  /**
   * Inside a string from i: the index after what was taken of it, up to its closing quote or the end of
   * the piece. An escape the piece cuts is left to `Escape`.
   */
  private string(piece: Buffer, from: number): number {
    const n = piece.length;
    const i = stringStop(piece, from);
    if (i === n) return n;
    if (piece[i] === QUOTE) {
      if (this.inKey) this.keyEnded(piece, i + 1);
      else this.valueEnded(this.offset + i + 1);
      return i + 1;
    }
    if (piece[i] === BACKSLASH && i + 5 >= n) {
      this.at = At.Escape;
      return i + 1;
    }
    this.fail('invalid'); // a control character or a bad escape
    return n;
  }

  /** A value starts at i (not whitespace); the index after what was taken of it. */
  private valueStarts(piece: Buffer, i: number): number {
    const byte = piece[i]!;
    const depth = this.depth;
    if (depth === 0) {
      this.found.first = byte;
    } else if (depth === 1) {
      this.topStart = this.offset + i;
      this.topFirst = byte;
    } else if (depth === 2) {
      this.innerStart = this.offset + i;
      this.innerFirst = byte;
    }
    if (byte === QUOTE) {
      this.inKey = false;
      this.at = At.String;
    } else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
      if (depth === MAX_NESTING) {
        this.fail('too-deep');
        return piece.length;
      }
      if (depth === 1) {
        const key = this.topKey;
        this.inner =
          byte === OPEN_BRACE && (key === 'params' || key === 'result' || key === 'error') ? key : undefined;
      }
      if (++this.depth === this.containers.length) this.deepen();
      this.containers[this.depth] = byte;
      this.at = byte === OPEN_BRACE ? At.ObjectOpen : At.ArrayOpen;
    } else if (LITERALS[byte] !== undefined) {
      this.literal = LITERALS[byte]!;
      this.pending = 1;
      this.at = At.Literal;
    } else if (byte === MINUS) {
      this.at = At.Minus;
    } else if (byte === ZERO) {
      this.at = At.Zero;
    } else if (isDigit(byte)) {
      this.at = At.Integer;
    } else {
      this.fail('invalid');
      return piece.length;
    }
    return i + 1;
  }

  private deepen(): void {
    const deeper = new Uint8Array(Math.min(this.containers.length * 2, MAX_NESTING + 1));
    deeper.set(this.containers);
    this.containers = deeper;
  }

  /** A value ended at `end` (an offset in the text), in the container at `depth`. */
  private valueEnded(end: number): void {
    const depth = this.depth;
    if (depth === 1 && this.topKey !== undefined) {
      this.found.top[this.topKey] = { first: this.topFirst, start: this.topStart, end };
    } else if (depth === 2 && this.inner !== undefined && this.innerKey !== undefined) {
      (this.found[this.inner] as Members<string>)[this.innerKey] = {
        first: this.innerFirst,
        start: this.innerStart,
        end,
      };
    }
    this.at = At.AfterValue;
  }

  /** The keys of the object being read are ones kept: the top level's, and those of `params`, `result`, `error`. */
  private keepsKeys(): boolean {
    return this.depth === 1 || (this.depth === 2 && this.inner !== undefined);
  }

  /** The key that ends at i (after its closing quote) in this piece, in the object at `depth`. */
  private keyEnded(piece: Buffer, i: number): void {
    this.inKey = false;
    this.at = At.Colon;
    if (!this.keepsKeys()) return;
    const depth = this.depth;
    const key =
      this.keyCarried === undefined
        ? piece.subarray(this.keyStart - this.offset, i)
        : Buffer.concat([this.keyCarried, piece.subarray(0, Math.min(i, LONGEST_KEY_BYTES + 1))]);
    if (depth === 1) {
      const top = keyOf(key, TOP_KEYS);
      const found = this.found;
      this.topKey = top;
      if (top !== 'jsonrpc' && top !== 'id' && top !== 'method' && top !== 'params') found.otherMember = true;
      if (top === 'id' && found.top.id !== undefined) found.idRepeated = true;
      // A later duplicate replaces the earlier one whole, its members too.
      if (top === 'params' || top === 'result' || top === 'error') found[top] = {};
    } else {
      const inner = keyOf(key, INNER_KEYS[this.inner!]);
      if (inner !== undefined && (this.found[this.inner!] as Members<string>)[inner] !== undefined) {
        this.found.innerRepeated = true;
      }
      this.innerKey = inner;
    }
  }

  /** The piece ends inside a key: what of it is here is kept, as far as it could still be one we read. */
  private carryKey(piece: Buffer): void {
    const carried = this.keyCarried;
    if (carried !== undefined && carried.length > LONGEST_KEY_BYTES) return;
    const from = Math.max(this.keyStart - this.offset, 0);
    const here = piece.subarray(from, from + LONGEST_KEY_BYTES + 1);
    this.keyCarried = carried === undefined ? here : Buffer.concat([carried, here]);
  }
}

/** The scan of a whole text, in one Buffer or in pieces. */
export function scanJson(raw: Bytes): Scanned | ScanFailure {
  const scanner = new JsonScanner();
  if (raw instanceof Pieces) for (const part of raw.parts) scanner.push(part);
  else scanner.push(raw);
  return scanner.end();
}

/**
 * From `from` inside a string, past every escape whole in the piece: the index of its closing quote, of a
 * control character, of a bad escape or one the piece cuts (a backslash), or the piece's length.
 */
function stringStop(piece: Buffer, from: number): number {
  const n = piece.length;
  let i = from;
  for (;;) {
    i = skipPlain(piece, i);
    if (i === n || piece[i] !== BACKSLASH || i + 5 >= n) return i;
    const escaped = piece[i + 1]!;
    if (SIMPLE_ESCAPE[escaped] === 1) {
      i += 2;
    } else if (
      escaped === LOWER_U &&
      HEX[piece[i + 2]!] === 1 &&
      HEX[piece[i + 3]!] === 1 &&
      HEX[piece[i + 4]!] === 1 &&
      HEX[piece[i + 5]!] === 1
    ) {
      // Lone surrogates included: JSON.parse takes them.
      i += 6;
    } else {
      return i;
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

const isDigit = (byte: number): boolean => byte >= ZERO && byte <= NINE;

/** Which of `keys` the (valid) string `key`, quotes included, is, if any. */
function keyOf<K extends string>(key: Buffer, keys: readonly K[]): K | undefined {
  if (key.length > LONGEST_KEY_BYTES) return undefined;
  let text = key.toString('latin1', 1, key.length - 1);
  if (text.includes('\\')) text = JSON.parse(key.toString('utf8')) as string;
  return keys.find((candidate) => candidate === text);
}

/** The value of a member, parsed: for the envelope's small members only (ids, methods, codes). */
export function valueOf(raw: Bytes, span: ValueSpan): unknown {
  return JSON.parse(bytesIn(raw, span.start, span.end).toString('utf8'));
}

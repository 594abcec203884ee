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
import { endianness } from 'node:os';
import { MAX_NESTING } from './frames.js';
import { SHORT_RUN_WORDS, longRunStop } from './long-run.js';
import { Pieces, bytesIn, type Bytes } from './pieces.js';
import {
  INNER_KEYS,
  TOP_KEYS,
  type Inner,
  type Members,
  type ScanFailure,
  type Scanned,
  type TopKey,
  type ValueSpan,
} from './scanned.js';

/**
 * From this size on, a message is scanned before it is parsed, so that one taskgate passes on unchanged
 * goes as its bytes, never decoded: below it, JSON.parse costs no more than the scan (bench/scan.js).
 */
export const SCAN_FROM_BYTES = 1024;

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
export const SIMPLE_ESCAPE = new Uint8Array(256);
for (const char of '"\\/bfnrt') SIMPLE_ESCAPE[char.charCodeAt(0)] = 1;
export const HEX = new Uint8Array(256);
for (const char of '0123456789abcdefABCDEF') HEX[char.charCodeAt(0)] = 1;
const WHITESPACE = new Uint8Array(256);
for (const byte of [0x20, 0x0a, 0x0d, 0x09]) WHITESPACE[byte] = 1;
const TRUE = Buffer.from('true');
const FALSE = Buffer.from('false');
const NULL = Buffer.from('null');
const literalOf = (byte: number): Buffer | undefined =>
  byte === 0x74 ? TRUE : byte === 0x66 ? FALSE : byte === 0x6e ? NULL : undefined;

/** A key longer than this, escapes and all, cannot be one we keep: the longest, every character `\uXXXX`. */
const LONGEST_KEY_BYTES =
  2 + 6 * Math.max(...[...TOP_KEYS, ...Object.values(INNER_KEYS).flat()].map((key) => key.length));

/*
 * Where the scan stands between two bytes; a piece may end in any of them. The number states past its
 * first byte are named by what may come next. Plain constants, not a `const enum`: the build (`tsc
 * --noCheck`) cannot inline an enum's members, and the scan's every test of its state read them off an object.
 */
/** Before a value: whitespace, then its first byte. */
const AT_VALUE = 0;
/** After `{`: whitespace, then `}` or a key. */
const AT_OBJECT_OPEN = 1;
/** After `[`: whitespace, then `]` or a value. */
const AT_ARRAY_OPEN = 2;
/** After a `,` in an object: whitespace, then a key. */
const AT_KEY = 3;
/** After a key: whitespace, then `:`. */
const AT_COLON = 4;
/** After a value: whitespace, then `,` or the container's close (at depth 0: only whitespace). */
const AT_AFTER_VALUE = 5;
const AT_STRING = 6;
/** After a backslash in a string. */
const AT_ESCAPE = 7;
/** In the hex digits of a `\u` escape (`pending` to come). */
const AT_UNICODE = 8;
/** In `true`, `false` or `null` (`pending`: the index of the byte to come). */
const AT_LITERAL = 9;
/** After a leading `-`: a digit. */
const AT_MINUS = 10;
/** After a leading `0` (the number may end here). */
const AT_ZERO = 11;
const AT_INTEGER = 12;
/** After `.`: a digit. */
const AT_DOT = 13;
const AT_FRACTION = 14;
/** After `e`: a sign or a digit. */
const AT_EXPONENT = 15;
/** After the exponent's sign: a digit. */
const AT_EXPONENT_SIGN = 16;
const AT_EXPONENT_DIGITS = 17;
const AT_FAILED = 18;

/**
 * The string loop reads the text as words of 4 bytes where it can (`stringStop`); it finds the first
 * special byte of a word from the word's flags, which holds on a little-endian machine only.
 */
const NO_WORDS = new Int32Array(0);
const BY_WORDS = endianness() === 'LE';

/**
 * One validating pass over a JSON text handed in pieces, as they arrive: `push` each piece in order, then
 * `end`. It keeps its state between pieces (where in the grammar, the open containers, the key being
 * read), so that the pieces need never be joined; spans are offsets in the whole text. The verdict and
 * the spans do not depend on where the text was cut (test/unit/scan.test.ts).
 */
export class JsonScanner {
  private at = AT_VALUE;
  /** Offset in the text of the piece being scanned. */
  private offset = 0;
  private failure: ScanFailure | undefined;
  private depth = 0;
  /** The open containers' first bytes, by depth; grown as deep as the text goes. */
  private containers = new Uint8Array(16);
  /** For `AT_UNICODE` and `AT_LITERAL` (see there). */
  private pending = 0;
  private literal: Buffer = TRUE;
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
  /** Where the piece's next quote and backslash stand, once a long string has looked (see `longRunStop`). */
  private readonly marks = new Int32Array(2);
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
    if (this.at === AT_FAILED) return;
    this.marks[0] = this.marks[1] = -1;
    const aligned = (4 - (piece.byteOffset & 3)) & 3;
    const words =
      BY_WORDS && piece.length - aligned >= 4
        ? new Int32Array(piece.buffer, piece.byteOffset + aligned, (piece.length - aligned) >> 2)
        : NO_WORDS;
    this.scan(piece, words, aligned);
    if (this.inKey && this.at !== AT_FAILED && this.keepsKeys(this.depth)) this.carryKey(piece);
    this.offset += piece.length;
  }

  /** The verdict on the text pushed: no more comes. */
  end(): Scanned | ScanFailure {
    const at = this.at;
    // A number may end with the text.
    if (at === AT_ZERO || at === AT_INTEGER || at === AT_FRACTION || at === AT_EXPONENT_DIGITS) {
      this.at = AT_AFTER_VALUE;
      if (this.depth <= 2) this.valueEnded(this.offset, this.depth);
    }
    if (this.at === AT_FAILED) return this.failure!;
    return this.at === AT_AFTER_VALUE && this.depth === 0 ? this.found : 'invalid';
  }

  /** The state to go on with after a failure. */
  private fail(failure: ScanFailure): number {
    this.failure = failure;
    return AT_FAILED;
  }

  /**
   * The grammar over one piece (`words`: its whole aligned words, the first at byte `wordsAt`). The state
   * the loop tests at every token is in locals, written back when the piece ends; the bookkeeping of the
   * kept members is called only at depth 2 or less.
   */
  private scan(piece: Buffer, words: Int32Array<ArrayBufferLike>, wordsAt: number): void {
    const n = piece.length;
    const offset = this.offset;
    let at = this.at;
    let depth = this.depth;
    let containers = this.containers;
    let i = 0;
    scan: while (i < n) {
      // The commonest states first: the switch tests its cases in turn.
      switch (at) {
        case AT_STRING: {
          i = stringStop(piece, i, words, wordsAt, this.marks);
          if (i === n) break scan;
          const byte = piece[i]!;
          if (byte === QUOTE) {
            i++;
            if (this.inKey) {
              this.inKey = false;
              at = AT_COLON;
              if (this.keepsKeys(depth)) this.keyEnded(piece, i, depth);
            } else {
              at = AT_AFTER_VALUE;
              if (depth <= 2) this.valueEnded(offset + i, depth);
            }
          } else if (byte === BACKSLASH && i + 5 >= n) {
            at = AT_ESCAPE;
            i++;
          } else {
            at = this.fail('invalid'); // a control character or a bad escape
            break scan;
          }
          break;
        }
        case AT_AFTER_VALUE: {
          while (i < n && WHITESPACE[piece[i]!] === 1) i++;
          if (i === n) break scan;
          const byte = piece[i]!;
          const container = containers[depth];
          if (depth !== 0 && byte === COMMA) {
            at = container === OPEN_BRACE ? AT_KEY : AT_VALUE;
            i++;
          } else if (depth !== 0 && byte === (container === OPEN_BRACE ? CLOSE_BRACE : CLOSE_BRACKET)) {
            depth--;
            i++;
            if (depth <= 2) this.valueEnded(offset + i, depth);
          } else {
            at = this.fail('invalid');
            break scan;
          }
          break;
        }
        case AT_COLON:
        case AT_VALUE: {
          while (i < n && WHITESPACE[piece[i]!] === 1) i++;
          if (i === n) break scan;
          if (at === AT_COLON) {
            if (piece[i] !== COLON) {
              at = this.fail('invalid');
              break scan;
            }
            at = AT_VALUE;
            i++;
            break;
          }
          const byte = piece[i]!;
          if (depth <= 2) this.valueStarts(byte, offset + i, depth);
          i++;
          if (byte === QUOTE) {
            this.inKey = false;
            at = AT_STRING;
          } else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
            if (depth === MAX_NESTING) {
              at = this.fail('too-deep');
              break scan;
            }
            if (++depth === containers.length) containers = this.deepen();
            containers[depth] = byte;
            at = byte === OPEN_BRACE ? AT_OBJECT_OPEN : AT_ARRAY_OPEN;
          } else if (isDigit(byte)) {
            at = byte === ZERO ? AT_ZERO : AT_INTEGER;
          } else if (byte === MINUS) {
            at = AT_MINUS;
          } else {
            const literal = literalOf(byte);
            if (literal === undefined) {
              at = this.fail('invalid');
              break scan;
            }
            this.literal = literal;
            this.pending = 1;
            at = AT_LITERAL;
          }
          break;
        }
        case AT_OBJECT_OPEN:
        case AT_KEY: {
          while (i < n && WHITESPACE[piece[i]!] === 1) i++;
          if (i === n) break scan;
          const byte = piece[i]!;
          if (byte === QUOTE) {
            this.inKey = true;
            this.keyStart = offset + i;
            this.keyCarried = undefined;
            at = AT_STRING;
            i++;
          } else if (byte === CLOSE_BRACE && at === AT_OBJECT_OPEN) {
            depth--;
            i++;
            at = AT_AFTER_VALUE;
            if (depth <= 2) this.valueEnded(offset + i, depth);
          } else {
            at = this.fail('invalid');
            break scan;
          }
          break;
        }
        case AT_ZERO:
        case AT_INTEGER:
        case AT_FRACTION:
        case AT_EXPONENT_DIGITS: {
          if (at !== AT_ZERO) while (i < n && isDigit(piece[i]!)) i++;
          if (i === n) break scan;
          const byte = piece[i]!;
          if (byte === DOT && (at === AT_ZERO || at === AT_INTEGER)) {
            at = AT_DOT;
            i++;
          } else if ((byte === LOWER_E || byte === UPPER_E) && at !== AT_EXPONENT_DIGITS) {
            at = AT_EXPONENT;
            i++;
          } else {
            at = AT_AFTER_VALUE;
            if (depth <= 2) this.valueEnded(offset + i, depth);
          }
          break;
        }
        case AT_LITERAL: {
          const literal = this.literal;
          let pending = this.pending;
          while (i < n && pending < literal.length) {
            if (piece[i++] !== literal[pending++]) {
              at = this.fail('invalid');
              break scan;
            }
          }
          this.pending = pending;
          if (pending === literal.length) {
            at = AT_AFTER_VALUE;
            if (depth <= 2) this.valueEnded(offset + i, depth);
          }
          break;
        }
        case AT_ARRAY_OPEN: {
          while (i < n && WHITESPACE[piece[i]!] === 1) i++;
          if (i === n) break scan;
          if (piece[i] === CLOSE_BRACKET) {
            depth--;
            i++;
            at = AT_AFTER_VALUE;
            if (depth <= 2) this.valueEnded(offset + i, depth);
          } else {
            at = AT_VALUE;
          }
          break;
        }
        case AT_MINUS: {
          const byte = piece[i++]!;
          if (!isDigit(byte)) {
            at = this.fail('invalid');
            break scan;
          }
          at = byte === ZERO ? AT_ZERO : AT_INTEGER;
          break;
        }
        case AT_DOT:
        case AT_EXPONENT_SIGN: {
          if (!isDigit(piece[i++]!)) {
            at = this.fail('invalid');
            break scan;
          }
          at = at === AT_DOT ? AT_FRACTION : AT_EXPONENT_DIGITS;
          break;
        }
        case AT_EXPONENT: {
          const byte = piece[i++]!;
          if (byte === PLUS || byte === MINUS) at = AT_EXPONENT_SIGN;
          else if (isDigit(byte)) at = AT_EXPONENT_DIGITS;
          else {
            at = this.fail('invalid');
            break scan;
          }
          break;
        }
        case AT_ESCAPE: {
          const byte = piece[i++]!;
          if (SIMPLE_ESCAPE[byte] === 1) {
            at = AT_STRING;
          } else if (byte === LOWER_U) {
            at = AT_UNICODE;
            this.pending = 4;
          } else {
            at = this.fail('invalid');
            break scan;
          }
          break;
        }
        case AT_UNICODE: {
          if (HEX[piece[i++]!] !== 1) {
            at = this.fail('invalid');
            break scan;
          }
          if (--this.pending === 0) at = AT_STRING;
          break;
        }
      }
    }
    this.at = at;
    this.depth = depth;
  }

  /** A value starts at `start` (an offset in the text) with `byte`, in the container at `depth` (2 or less). */
  private valueStarts(byte: number, start: number, depth: number): void {
    if (depth === 0) {
      this.found.first = byte;
    } else if (depth === 1) {
      this.topStart = start;
      this.topFirst = byte;
      const key = this.topKey;
      this.inner =
        byte === OPEN_BRACE && (key === 'params' || key === 'result' || key === 'error') ? key : undefined;
    } else {
      this.innerStart = start;
      this.innerFirst = byte;
    }
  }

  /** The open containers, made room for one more. */
  private deepen(): Uint8Array<ArrayBuffer> {
    const deeper = new Uint8Array(Math.min(this.containers.length * 2, MAX_NESTING + 1));
    deeper.set(this.containers);
    return (this.containers = deeper);
  }

  /** A value ended at `end` (an offset in the text), in the container at `depth` (2 or less). */
  private valueEnded(end: number, depth: number): void {
    if (depth === 1 && this.topKey !== undefined) {
      this.found.top[this.topKey] = { first: this.topFirst, start: this.topStart, end };
    } else if (depth === 2 && this.inner !== undefined && this.innerKey !== undefined) {
      (this.found[this.inner] as Members<string>)[this.innerKey] = {
        first: this.innerFirst,
        start: this.innerStart,
        end,
      };
    }
  }

  /** The keys of the object at `depth` are ones kept: the top level's, and those of `params`, `result`, `error`. */
  private keepsKeys(depth: number): boolean {
    return depth === 1 || (depth === 2 && this.inner !== undefined);
  }

  /** The key that ends at i (after its closing quote) in this piece, in the object at `depth`, one kept. */
  private keyEnded(piece: Buffer, i: number, depth: number): void {
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
 *
 * Within `words` (the piece's whole aligned words, the first at byte `wordsAt`) it goes a word at a time:
 * the next byte to look at is the word's first flagged one from where the scan stands, an escape passed
 * in the same word. A flag above a special byte may be false (the subtraction's borrow runs on), so the
 * byte is read to tell. The few bytes outside the words are looked at one by one. A run longer than
 * SHORT_RUN_WORDS goes on in `longRunStop`.
 */
function stringStop(
  piece: Buffer,
  from: number,
  words: Int32Array<ArrayBufferLike>,
  wordsAt: number,
  marks: Int32Array,
): number {
  const n = piece.length;
  const last = words.length;
  let i = from;
  for (;;) {
    let w = (i - wordsAt) >> 2;
    if (i >= wordsAt && w < last) {
      let flags = flagsOf(words[w]!) & (0x80808080 << (((i - wordsAt) & 3) << 3));
      if (flags === 0) {
        const short = w + SHORT_RUN_WORDS < last ? w + SHORT_RUN_WORDS : last;
        while (++w < short) if ((flags = flagsOf(words[w]!)) !== 0) break;
      }
      if (flags !== 0) i = wordsAt + (w << 2) + firstFlagged(flags);
      else if (w < last) i = longRunStop(piece, wordsAt + (w << 2), words, wordsAt, marks);
      else i = wordsAt + (last << 2);
    }
    if (i >= n) return n;
    const byte = piece[i]!;
    if (byte === BACKSLASH) {
      if (i + 5 >= n) return i;
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
    } else if (byte === QUOTE || byte < 0x20) {
      return i;
    } else {
      i++; // a false flag, or a byte outside the words
    }
  }
}

/**
 * 0x80 in each byte of `word` (four bytes of the text) that is a quote, a backslash or below 0x20, and
 * maybe in bytes above one that is (the classic "has zero byte" / "has byte less than" tests).
 */
function flagsOf(word: number): number {
  const quote = word ^ 0x22222222;
  const backslash = word ^ 0x5c5c5c5c;
  return (
    ((((word - 0x20202020) | 0) & ~word) |
      (((quote - 0x01010101) | 0) & ~quote) |
      (((backslash - 0x01010101) | 0) & ~backslash)) &
    0x80808080
  );
}

/** The index in its word (little-endian) of the lowest byte `flags` marks. */
function firstFlagged(flags: number): number {
  const low = flags >>> 7;
  return (31 - Math.clz32(low & -low)) >> 3;
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

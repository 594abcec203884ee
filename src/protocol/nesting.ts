/**
 * Facts read off the bytes of a JSON text without parsing it: how deep it nests, and the text of its
 * top-level members. A tight loop over the bytes that jumps over strings (with a native search for the
 * closing quote), so that a message can be judged before JSON.parse builds anything from it.
 */
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;

/** Index of the quote that ends the string opened at `start`, or -1 when it never ends. */
export function endOfString(raw: Buffer, start: number): number {
  let end = raw.indexOf(QUOTE, start + 1);
  while (end !== -1 && isEscaped(raw, end)) end = raw.indexOf(QUOTE, end + 1);
  return end;
}

/** A quote is escaped when an odd number of backslashes precede it. */
function isEscaped(raw: Buffer, at: number): boolean {
  let backslashes = 0;
  while (raw[at - 1 - backslashes] === BACKSLASH) backslashes++;
  return backslashes % 2 === 1;
}

/**
 * The deepest nesting of arrays and objects in a JSON text (0 for a scalar), or -1 when its brackets do
 * not balance or a string never ends (then it is not JSON at all).
 */
export function nestingDepth(raw: Buffer): number {
  let depth = 0;
  let deepest = 0;
  for (let i = 0; i < raw.length; i++) {
    const byte = raw[i];
    if (byte === QUOTE) {
      i = endOfString(raw, i);
      if (i === -1) return -1;
    } else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
      if (++depth > deepest) deepest = depth;
    } else if ((byte === CLOSE_BRACE || byte === CLOSE_BRACKET) && --depth < 0) {
      return -1;
    }
  }
  return depth === 0 ? deepest : -1;
}

/** Where the value of one member stands in the bytes, and whether it is an array or object. */
export interface MemberSpan {
  start: number;
  end: number;
  nested?: '[]' | '{}';
}

/** The members of the top-level object of a JSON text, each with where its value stands; empty for a non-object. */
export function topLevelSpans(raw: Buffer): Map<string, MemberSpan> {
  const members = new Map<string, MemberSpan>();
  const first = raw.toString('latin1', 0, 64).trimStart();
  if (!first.startsWith('{')) return members;
  let depth = 0;
  let key: string | undefined;
  let valueStart = -1;
  let nested: '[]' | '{}' | undefined;
  const take = (end: number): void => {
    if (key !== undefined && valueStart !== -1) {
      members.set(key, { start: valueStart, end, ...(nested && { nested }) });
    }
    key = undefined;
    valueStart = -1;
    nested = undefined;
  };
  for (let i = 0; i < raw.length; i++) {
    const byte = raw[i];
    if (byte === QUOTE) {
      const end = endOfString(raw, i);
      if (end === -1) break;
      if (depth === 1 && key === undefined) key = decodeKey(raw.toString('utf8', i, end + 1));
      i = end;
    } else if (byte === COLON && depth === 1 && valueStart === -1) {
      valueStart = i + 1;
    } else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
      if (depth === 1) nested = byte === OPEN_BRACE ? '{}' : '[]';
      depth++;
    } else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) {
      if (depth === 1) take(i);
      depth--;
    } else if (byte === COMMA && depth === 1) {
      take(i);
    }
  }
  return members;
}

/**
 * The members of the top-level object of a JSON text, each with the text of its value as it stands in
 * the bytes; an array or object value is given as `[]` or `{}` instead, so that no member is large or
 * deep. Empty when the text is not an object. For messages that must not be parsed whole (too deep) and
 * for the exact digits of a number JSON.parse would round.
 */
export function topLevelMembers(raw: Buffer): Map<string, string> {
  const members = new Map<string, string>();
  for (const [key, { start, end, nested }] of topLevelSpans(raw)) {
    members.set(key, nested ?? raw.toString('utf8', start, end).trim());
  }
  return members;
}

function decodeKey(text: string): string {
  try {
    return String(JSON.parse(text));
  } catch {
    return text;
  }
}

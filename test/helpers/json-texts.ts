/**
 * JSON texts for the property tests of the scans (scan.test.ts, small-answer.test.ts): texts near the
 * grammar, edits of valid ones, bytes that are not UTF-8, and messages with their envelope's members in
 * any order, duplicated, escaped or of the wrong type.
 */
import fc from 'fast-check';

export /** What JSON.parse says of the bytes as taskgate decodes them. */
function parses(raw: Buffer): boolean {
  try {
    JSON.parse(raw.toString('utf8'));
    return true;
  } catch {
    return false;
  }
}

// Texts made of JSON's own pieces, so that random edits and joins often stay near the grammar.
export const piece = fc.constantFrom(
  '{',
  '}',
  '[',
  ']',
  ',',
  ':',
  '"',
  '\\',
  ' ',
  '\t',
  '\n',
  '\r',
  '0',
  '-',
  '1',
  '.',
  'e',
  'E',
  '+',
  'true',
  'false',
  'null',
  'tru',
  '"a"',
  '"\\u00e9"',
  '"\\ud800"',
  '"\\udc00\\ud800"',
  '\\u',
  '\\x',
  '\u0001',
  '\u001f',
  '\u007f',
  'é',
  '日',
  '\uFEFF',
  '\uD800',
  '9007199254740993',
  '1e400',
);
export const nearJson = fc.array(piece, { maxLength: 40 }).map((pieces) => pieces.join(''));

/** An edit of a valid text: one of its bytes replaced, removed or doubled, or a piece put in. */
export const edited = editsOf(fc.json());

/** Edits of the texts `texts` makes. */
export function editsOf(texts: fc.Arbitrary<string>): fc.Arbitrary<Buffer> {
  return fc
    .tuple(texts, fc.nat(), fc.constantFrom('replace', 'remove', 'double', 'insert'), piece)
    .map(([text, at, how, put]) => {
      const bytes = Buffer.from(text);
      const i = at % (bytes.length + 1);
      const before = bytes.subarray(0, i);
      const after = bytes.subarray(i);
      if (how === 'insert') return Buffer.concat([before, Buffer.from(put), after]);
      if (how === 'remove') return Buffer.concat([before, after.subarray(1)]);
      if (how === 'double') return Buffer.concat([before, after.subarray(0, 1), after]);
      return Buffer.concat([before, Buffer.from(put).subarray(0, 1), after.subarray(1)]);
    });
}

/** Bytes that are not UTF-8 (and some that are): lone continuation bytes, cut sequences, surrogates. */
export const badUtf8 = fc.constantFrom(
  [0x80],
  [0xbf],
  [0xc0, 0x80],
  [0xc3],
  [0xe2, 0x82],
  [0xed, 0xa0, 0x80],
  [0xf4, 0x90, 0x80, 0x80],
  [0xff],
  [0xfe],
  [0xe2, 0x22],
  [0xf0, 0x9f, 0x98, 0x80],
  [0xc3, 0xa9],
);

export const ws = fc.constantFrom('', ' ', '\n', '\t ', '\r\n');
export const key = fc.constantFrom(
  'jsonrpc',
  'id',
  'method',
  'params',
  'result',
  'error',
  'x',
  '\\u0069d',
  'meth\\u006fd',
  '__proto__',
);
export const scalar = fc.oneof(
  fc.constantFrom('"2.0"', '"2.1"', '"\\u0032.0"', 'null', 'true', 'false', '{}', '[]', '"ping"'),
  fc.constantFrom('1', '-0', '0', '1.0', '1.5', '1e2', '1e400', '-1e-400', '9007199254740991'),
  fc.constantFrom('9007199254740993', '-12345678901234567890', '9007199254740993.0', '1'.repeat(400)),
  fc.integer().map(String),
  fc.string().map((s) => JSON.stringify(s)),
);
export const innerKey = fc.constantFrom('_meta', 'task', 'isError', 'code', 'message', 'progressToken', 'y');
/** An object whose direct members are the ones the envelope keeps, any of them duplicated. */
export const innerObject = fc
  .array(fc.tuple(innerKey, fc.oneof(scalar, fc.json()), ws), { maxLength: 5 })
  .map((members) => `{${members.map(([k, v, s]) => `${s}"${k}"${s}:${s}${v}`).join(',')}}`);
/** Messages and near-messages: the envelope's members in any order, duplicated, escaped, or wrong. */
export const message = fc
  .array(fc.tuple(key, fc.oneof(scalar, innerObject, fc.json()), ws), { maxLength: 7 })
  .map((members) => Buffer.from(`{${members.map(([k, v, s]) => `${s}"${k}"${s}:${s}${v}`).join(',')}}`));
export const likelyMessage = fc
  .tuple(
    fc.oneof(fc.integer().map(String), fc.constantFrom('9007199254740993', '"a"')),
    fc.constantFrom('method', 'result', 'error'),
    innerObject,
    fc.array(fc.tuple(key, fc.oneof(scalar, innerObject)), { maxLength: 2 }),
  )
  .map(([id, what, inner, more]) => {
    const head =
      what === 'method'
        ? `"method":"tools/call","params":${inner}`
        : what === 'result'
          ? `"result":${inner}`
          : `"error":{"code":-1,"message":"m"}`;
    const extra = more.map(([k, v]) => `,"${k}":${v}`).join('');
    return Buffer.from(`{"jsonrpc":"2.0","id":${id},${head}${extra}}`);
  });

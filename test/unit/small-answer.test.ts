import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { envelopeOf } from '../../src/protocol/envelope.js';
import { MAX_NESTING } from '../../src/protocol/frames.js';
import type { JsonObject } from '../../src/protocol/messages.js';
import { readMessage } from '../../src/protocol/read-message.js';
import { scanJson, valueOf } from '../../src/protocol/scan.js';
import type { ValueSpan } from '../../src/protocol/scanned.js';
import { smallAnswer } from '../../src/protocol/small-answer.js';
import {
  badUtf8,
  editsOf,
  key,
  likelyMessage,
  message,
  nearJson,
  parses,
  scalar,
  ws,
} from '../helpers/json-texts.js';

const spanValue = (raw: Buffer, span: ValueSpan | undefined): unknown =>
  span === undefined ? undefined : valueOf(raw, span);

/**
 * smallAnswer against JSON.parse and the usual read: the envelope of a success response exactly when
 * the usual read takes the text as one (and envelopeOf's, spans and all); a refusal only of a text
 * JSON.parse refuses, or scanJson refuses as too deep; nothing for any other.
 */
function expectSameAnswer(raw: Buffer): void {
  const label = raw.toString('latin1');
  const answer = smallAnswer(raw);
  const read = readMessage(raw, 'x');
  const isAnswer = read.ok && read.message.kind === 'response' && 'result' in read.message.msg;
  if (typeof answer === 'string') {
    expect(scanJson(raw), label).toBe(answer);
    if (answer === 'invalid') expect(parses(raw), label).toBe(false);
    expect(isAnswer, label).toBe(false);
    return;
  }
  if (!isAnswer) {
    expect(answer, label).toBeUndefined();
    return;
  }
  const { result: resultSpan, resultType, lineBreak, ...envelope } = answer!;
  expect(envelope, label).toEqual(envelopeOf(raw));
  expect(answer!.id, label).toEqual((read.message.msg as { id: unknown }).id);
  const value = JSON.parse(raw.toString('utf8')) as JsonObject;
  const result = value.result as JsonObject;
  expect(spanValue(raw, answer!.idSpan), label).toEqual(value.id);
  expect(spanValue(raw, resultSpan), label).toEqual(result);
  expect(spanValue(raw, answer!.meta), label).toEqual(result._meta);
  expect(spanValue(raw, answer!.task), label).toEqual(result.task);
  expect(spanValue(raw, answer!.isError), label).toEqual(result.isError);
  expect(spanValue(raw, resultType), label).toEqual(result.resultType);
  // In valid JSON a line break can only be whitespace: inside a string it is escaped.
  expect(lineBreak ?? false, label).toBe(raw.includes(0x0a) || raw.includes(0x0d));
}

/** Ids an answer may carry, and ones it may not: huge, negative zero, fractions, escapes, lone surrogates. */
const id = fc.oneof(
  scalar,
  fc.constantFrom('9007199254740992', '-9007199254740993', '999999999999999', '1000000000000000'),
  fc.constantFrom('"\\ud800"', '"a\\"b"', '"\\u0041"', '"é"', '"\u{1F600}"', '0.5e1', '-0.0', '1E+2'),
  fc.nat().map(String),
);
const resultKey = fc.constantFrom(
  '_meta',
  'task',
  'isError',
  'resultType',
  '\\u0074ask',
  'is\\u0045rror',
  'result\\u0054ype',
  'content',
  'x',
);
const member = (keys: fc.Arbitrary<string>, values: fc.Arbitrary<string>): fc.Arbitrary<string> =>
  fc.tuple(keys, values, ws, ws).map(([k, v, a, b]) => `${a}"${k}"${b}:${a}${v}${b}`);
const resultObject = fc
  .array(member(resultKey, fc.oneof(scalar, fc.json())), { maxLength: 4 })
  .map((members) => `{${members.join(',')}}`);
/** Success responses and near ones: members in any order, duplicated, escaped, of the wrong type, with BOM and whitespace. */
const answer = fc
  .tuple(
    fc.array(
      fc.oneof(
        member(fc.constant('jsonrpc'), fc.constantFrom('"2.0"', '"\\u0032.0"', '"2.1"', '2', '"2.0 "')),
        member(fc.constantFrom('id', '\\u0069d'), id),
        member(fc.constant('result'), fc.oneof(resultObject, scalar)),
        member(key, fc.oneof(scalar, resultObject)),
      ),
      { maxLength: 6 },
    ),
    fc.constantFrom('', ' ', '\uFEFF', '\r\n\t'),
    ws,
  )
  .map(([members, before, after]) => `${before}{${members.join(',')}}${after}`);
/** Mostly valid answers: the three members an answer needs, then others. */
const likelyAnswer = fc
  .tuple(
    id,
    resultObject,
    fc.array(member(key, fc.oneof(scalar, resultObject)), { maxLength: 2 }),
    fc.boolean(),
  )
  .map(([theId, result, more, idLast]) => {
    const members = [`"jsonrpc":"2.0"`, `"result":${result}`, ...more];
    members.splice(idLast ? members.length : 0, 0, `"id":${theId}`);
    return `{${members.join(',')}}`;
  });

describe('issue 33: smallAnswer agrees with JSON.parse on validity and the envelope', () => {
  it('for answers and near-answers: members in any order, duplicated, escaped, of the wrong type', () => {
    fc.assert(
      fc.property(answer, (text) => expectSameAnswer(Buffer.from(text))),
      { numRuns: 5000 },
    );
    fc.assert(
      fc.property(likelyAnswer, (text) => expectSameAnswer(Buffer.from(text))),
      { numRuns: 5000 },
    );
  });

  it('for edited answers: a byte replaced, removed or doubled, a piece of JSON put in', () => {
    fc.assert(fc.property(editsOf(fc.oneof(answer, likelyAnswer)), expectSameAnswer), { numRuns: 10_000 });
  });

  it('for invalid UTF-8 in and out of strings', () => {
    fc.assert(
      fc.property(likelyAnswer, fc.nat(), badUtf8, (text, at, bad) => {
        const bytes = Buffer.from(text);
        const i = at % (bytes.length + 1);
        expectSameAnswer(Buffer.concat([bytes.subarray(0, i), Buffer.from(bad), bytes.subarray(i)]));
      }),
      { numRuns: 3000 },
    );
  });

  it('for arbitrary bytes, texts near JSON, arbitrary JSON and messages of every kind', () => {
    const texts = fc.oneof(
      fc.uint8Array({ maxLength: 64 }).map((bytes) => Buffer.from(bytes)),
      fc.string({ unit: 'binary' }).map((text) => Buffer.from(text)),
      nearJson.map((text) => Buffer.from(text)),
      fc.json().map((text) => Buffer.from(text)),
      message,
      likelyMessage,
    );
    fc.assert(fc.property(texts, expectSameAnswer), { numRuns: 5000 });
  });

  it('for every JSON value as a result, pretty-printed or not', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), fc.boolean(), (result, pretty) =>
        expectSameAnswer(
          Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 7, result }, null, pretty ? 2 : undefined)),
        ),
      ),
      { numRuns: 2000 },
    );
  });

  it('reads ids as JSON.parse and the exact ids do: beyond 2^53 exactly, -0, fractions and 1e400 refused', () => {
    const of = (theId: string): unknown => {
      const envelope = smallAnswer(Buffer.from(`{"jsonrpc":"2.0","id":${theId},"result":{}}`));
      return typeof envelope === 'object' ? envelope.id : envelope;
    };
    expect(String(of('9007199254740993'))).toMatch(/:9007199254740993$/);
    expect(String(of('-12345678901234567890'))).toMatch(/:-12345678901234567890$/);
    expect(Object.is(of('-0'), -0)).toBe(true);
    expect(of('999999999999999')).toBe(999_999_999_999_999);
    expect(of('1.0')).toBe(1);
    expect(of('1e2')).toBe(100);
    for (const refused of ['1e400', '1.5', '9007199254740993.0', 'null', '{}', '[1]', 'true']) {
      expect(of(refused), refused).toBeUndefined();
    }
    expect(of('"\\ud800"')).toBe('\ud800');
    expect(of('"a\\"b"')).toBe('a"b');
  });

  it(`takes ${MAX_NESTING} levels and refuses one more as too deep, as scanJson does`, () => {
    for (const [open, close] of [
      ['[', ']'],
      ['{"a":', '}'],
    ] as const) {
      // The message and its result are two levels: k more make k + 2.
      const nested = (k: number, closed = true): Buffer =>
        Buffer.from(
          `{"jsonrpc":"2.0","id":1,"result":{"x":${open.repeat(k)}1${closed ? close.repeat(k) + '}}' : ''}`,
        );
      expect(smallAnswer(nested(MAX_NESTING - 2))).toMatchObject({ kind: 'response', id: 1 });
      expect(smallAnswer(nested(MAX_NESTING - 1))).toBe('too-deep');
      expect(smallAnswer(nested(MAX_NESTING - 1, false))).toBe('too-deep');
      for (let k = MAX_NESTING - 3; k <= MAX_NESTING + 1; k++) {
        expectSameAnswer(nested(k));
        expectSameAnswer(nested(k, false));
      }
    }
  });
});

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  envelopeOf,
  piecesWithIdAt,
  scanWithIdAt,
  withIdAt,
  type Envelope,
} from '../../src/protocol/envelope.js';
import { MAX_NESTING } from '../../src/protocol/frames.js';
import { Pieces } from '../../src/protocol/pieces.js';
import { readMessage } from '../../src/protocol/read-message.js';
import { SHORT_RUN_WORDS } from '../../src/protocol/long-run.js';
import { scanJson, valueOf } from '../../src/protocol/scan.js';
import { INNER_KEYS, type ValueSpan } from '../../src/protocol/scanned.js';
import type { JsonObject } from '../../src/protocol/messages.js';
import { badUtf8, edited, key, likelyMessage, message, nearJson, parses } from '../helpers/json-texts.js';

const RUNS = { numRuns: 2000 };

/** The scan's verdict, against JSON.parse's: the same, with depth the only other reason to refuse. */
function expectSameVerdict(raw: Buffer): void {
  const scanned = scanJson(raw);
  if (typeof scanned !== 'string') expect(parses(raw), raw.toString('latin1')).toBe(true);
  else if (scanned === 'invalid') expect(parses(raw), raw.toString('latin1')).toBe(false);
  else expect(readMessage(raw, 'x').ok).toBe(false);
}

/** What the envelope must be: as the message read the usual way (JSON.parse, exact ids, classify) says. */
function expectedEnvelope(raw: Buffer): Omit<Envelope, 'idSpan' | 'meta' | 'task' | 'isError'> | undefined {
  const read = readMessage(raw, 'x');
  if (!read.ok) return undefined;
  const { kind, msg } = read.message;
  return {
    kind: kind === 'response' ? ('result' in msg ? 'response' : 'error') : kind,
    ...('id' in msg && { id: msg.id }),
    ...('method' in msg && { method: msg.method }),
  };
}

const spanValue = (raw: Buffer, span: ValueSpan | undefined): unknown =>
  span === undefined ? undefined : valueOf(raw, span);

function expectSameEnvelope(raw: Buffer): void {
  const envelope = envelopeOf(raw);
  const expected = expectedEnvelope(raw);
  if (expected === undefined) {
    expect(envelope, raw.toString('latin1')).toBeUndefined();
    return;
  }
  expect(envelope, raw.toString('latin1')).toBeDefined();
  const { idSpan, meta, task, isError, idRepeated, ...facts } = envelope!;
  // Each top-level id is one of these texts (nested ones may be too: the count is an upper bound).
  const ids = raw.toString('latin1').match(/"(id|\\u0069d)"\s*:/g)?.length ?? 0;
  if (idRepeated === true) expect(ids).toBeGreaterThan(1);
  if (ids < 2) expect(idRepeated).toBeUndefined();
  expect(facts).toEqual(expected);
  const value = JSON.parse(raw.toString('utf8')) as JsonObject;
  // The spans stand where the members are: parsed, each is what JSON.parse made of it.
  if ('id' in value) expect(spanValue(raw, idSpan)).toEqual(value.id);
  else expect(idSpan).toBeUndefined();
  const holder = (
    { response: value.result, error: undefined, request: value.params, notification: value.params } as const
  )[expected.kind] as JsonObject | undefined;
  expect(spanValue(raw, meta)).toEqual(holder?._meta);
  const result = expected.kind === 'response' ? (value.result as JsonObject) : undefined;
  expect(spanValue(raw, task)).toEqual(result?.task);
  expect(spanValue(raw, isError)).toEqual(result?.isError);
}

describe('issue 33: scanJson agrees with JSON.parse on what is JSON', () => {
  it('takes every JSON text JSON.stringify makes', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(typeof scanJson(Buffer.from(JSON.stringify(value)))).toBe('object');
        expect(typeof scanJson(Buffer.from(JSON.stringify(value, null, 2)))).toBe('object');
      }),
      RUNS,
    );
  });

  it('judges arbitrary strings, texts near JSON, and edited JSON as JSON.parse does', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: 'binary' }), fc.json(), nearJson), (text) =>
        expectSameVerdict(Buffer.from(text)),
      ),
      { numRuns: 5000 },
    );
    fc.assert(fc.property(edited, expectSameVerdict), { numRuns: 5000 });
  });

  it('judges arbitrary bytes, and invalid UTF-8 in and out of strings, as JSON.parse of their decoding does', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => expectSameVerdict(Buffer.from(bytes))),
      RUNS,
    );
    fc.assert(
      fc.property(fc.json(), fc.nat(), badUtf8, (text, at, bad) => {
        const bytes = Buffer.from(text);
        const i = at % (bytes.length + 1);
        expectSameVerdict(Buffer.concat([bytes.subarray(0, i), Buffer.from(bad), bytes.subarray(i)]));
      }),
      { numRuns: 5000 },
    );
    expect(typeof scanJson(Buffer.from([0x22, 0xed, 0xa0, 0x80, 0xff, 0xe2, 0x22]))).toBe('object');
    expect(scanJson(Buffer.from([0x5b, 0xc3, 0xa9, 0x5d]))).toBe('invalid');
  });

  it('takes lone surrogates in escapes, as JSON.parse does, and refuses broken escapes', () => {
    for (const text of ['"\\ud800"', '"\\udfff\\ud800"', '["\\uD83D", "\\uDE00x"]']) {
      expect(typeof scanJson(Buffer.from(text))).toBe('object');
      expect(parses(Buffer.from(text))).toBe(true);
    }
    for (const text of ['"\\u12"', '"\\u12G4"', '"\\x41"', '"\\', '"\\u"', '"a\u0000"']) {
      expect(scanJson(Buffer.from(text))).toBe('invalid');
    }
  });

  it('takes huge numbers and refuses what is not a number', () => {
    for (const text of ['1e400', '-1e-400', '1'.repeat(10_000), '-0', '0.0e+0']) {
      expect(typeof scanJson(Buffer.from(text))).toBe('object');
    }
    for (const text of ['01', '1.', '.1', '+1', '1e', '-', '0x10', 'NaN', 'Infinity']) {
      expect(scanJson(Buffer.from(text))).toBe('invalid');
    }
  });

  it('judges strings at every alignment, with the special byte at every place in a word', () => {
    const pool = Buffer.alloc(64, 0x61);
    for (let offset = 0; offset < 8; offset++) {
      for (let length = 2; length < 40; length++) {
        for (let at = 1; at < length - 1; at++) {
          for (const special of [0x22, 0x5c, 0x01, 0x1f, 0x20, 0x7f, 0x80, 0xff]) {
            pool.fill(0x61);
            const raw = pool.subarray(offset, offset + length);
            raw[0] = 0x22;
            raw[length - 1] = 0x22;
            raw[at] = special;
            expectSameVerdict(raw);
          }
        }
      }
    }
  });
});

describe('issue 33: scanJson and nesting', () => {
  const deep = (depth: number, open: string, close: string, inside = '1'): string =>
    open.repeat(depth) + inside + close.repeat(depth);

  it(`takes ${MAX_NESTING} levels and refuses one more, as too deep, however deep`, () => {
    expect(typeof scanJson(Buffer.from(deep(MAX_NESTING, '[', ']')))).toBe('object');
    expect(typeof scanJson(Buffer.from(deep(MAX_NESTING, '{"a":', '}')))).toBe('object');
    expect(scanJson(Buffer.from(deep(MAX_NESTING + 1, '[', ']')))).toBe('too-deep');
    expect(scanJson(Buffer.from(deep(MAX_NESTING + 1, '{"a":', '}')))).toBe('too-deep');
    expect(scanJson(Buffer.from('['.repeat(1_000_000)))).toBe('too-deep');
  });

  it('never takes a message the usual read refuses as too deep', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: MAX_NESTING - 3, max: MAX_NESTING + 3 }),
        fc.boolean(),
        (depth, objects) => {
          const raw = Buffer.from(
            `{"jsonrpc":"2.0","id":1,"result":${deep(depth - 1, objects ? '{"a":' : '[', objects ? '}' : ']')}}`,
          );
          expectSameVerdict(raw);
          expectSameEnvelope(raw);
        },
      ),
    );
  });
});

describe('issue 33: envelopeOf agrees with the usual read on the envelope', () => {
  it('for arbitrary JSON, and arbitrary objects', () => {
    fc.assert(
      fc.property(fc.json(), (text) => expectSameEnvelope(Buffer.from(text))),
      RUNS,
    );
    fc.assert(
      fc.property(fc.dictionary(key, fc.jsonValue()), (value) =>
        expectSameEnvelope(Buffer.from(JSON.stringify(value))),
      ),
      RUNS,
    );
  });

  it('for messages and near-messages: members in any order, duplicated, escaped, of the wrong type', () => {
    fc.assert(fc.property(message, expectSameEnvelope), { numRuns: 10_000 });
    fc.assert(fc.property(likelyMessage, expectSameEnvelope), { numRuns: 5000 });
  });

  it('reads an id beyond 2^53 exactly, and a duplicate key as JSON.parse does: the last one', () => {
    const big = envelopeOf(Buffer.from('{"jsonrpc":"2.0","id":9007199254740993,"result":{}}'));
    expect(big?.id).toEqual(
      expectedEnvelope(Buffer.from('{"jsonrpc":"2.0","id":9007199254740993,"result":{}}'))?.id,
    );
    expect(String(big?.id)).toMatch(/:9007199254740993$/);
    const twice = Buffer.from(
      '{"jsonrpc":"2.0","id":1,"result":{"_meta":{}},"id":2,"result":{"content":[]}}',
    );
    expect(envelopeOf(twice)).toEqual({
      kind: 'response',
      id: 2,
      idSpan: { first: 0x32, start: 51, end: 52 },
      idRepeated: true,
    });
    expect(twice.toString('latin1', 51, 52)).toBe('2');
  });
});

/** The bytes cut at the given points (taken modulo their length), as the pieces a pipe might deliver. */
function cut(raw: Buffer, points: number[]): Pieces {
  const at = [...new Set(points.map((point) => point % (raw.length + 1)))].sort((a, b) => a - b);
  const parts = [0, ...at].map((start, k) => raw.subarray(start, at[k] ?? raw.length));
  return new Pieces(
    parts.filter((part) => part.length > 0),
    raw.length,
  );
}

/** Scanned in pieces, the text gives what the whole-buffer scan gives, verdict, spans and envelope. */
function expectSameInPieces(raw: Buffer, points: number[]): void {
  const pieces = cut(raw, points);
  const whole = scanJson(raw);
  expect(scanJson(pieces), `${raw.toString('latin1')} cut at ${points.join(',')}`).toEqual(whole);
  if (typeof whole === 'string') expect(parses(raw) && whole === 'invalid').toBe(false);
  else expect(parses(raw)).toBe(true);
  expect(envelopeOf(pieces)).toEqual(envelopeOf(raw));
}

const points = fc.array(fc.nat(), { maxLength: 8 });

describe('issue 33: a text scanned in pieces, as it arrives, is judged as it is whole', () => {
  it('for arbitrary texts, bytes, near-JSON and edited JSON, cut anywhere', () => {
    const texts = fc.oneof(
      fc.string({ unit: 'binary' }).map((text) => Buffer.from(text)),
      fc.json().map((text) => Buffer.from(text)),
      nearJson.map((text) => Buffer.from(text)),
      fc.uint8Array({ maxLength: 64 }).map((bytes) => Buffer.from(bytes)),
      edited,
    );
    fc.assert(fc.property(texts, points, expectSameInPieces), { numRuns: 5000 });
  });

  it('for messages and near-messages, cut anywhere and cut at every byte', () => {
    fc.assert(fc.property(fc.oneof(message, likelyMessage), points, expectSameInPieces), { numRuns: 3000 });
    fc.assert(
      fc.property(likelyMessage, (raw) => expectSameInPieces(raw, [...raw.keys()])),
      { numRuns: 300 },
    );
  });

  it('for keys and escapes cut at every byte, and a key longer than any kept', () => {
    const texts = [
      '{"jsonrpc":"2.0","\\u0069d":7,"result":{"is\\u0045rror":true,"_meta":{"a":"\\ud83d\\ude00"}}}',
      `{"jsonrpc":"2.0","id":"x","${'k'.repeat(200)}":1,"result":{"${'\\u0041'.repeat(30)}":2}}`,
      '{"jsonrpc":"2.0","id":-12.5e+3,"method":"a","params":{"_meta":{"progressToken":1e400}}}',
      ' [true , false,null, 0, -0.0E-0 ] ',
    ];
    for (const text of texts) {
      const raw = Buffer.from(text);
      expectSameInPieces(raw, [...raw.keys()]);
      for (let at = 0; at <= raw.length; at++) expectSameInPieces(raw, [at]);
    }
  });

  it('keeps each kept member whose key is written all in escapes, as JSON.parse reads it', () => {
    const escaped = (key: string): string =>
      [...key].map((char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`).join('');
    for (const [where, keys] of Object.entries(INNER_KEYS)) {
      for (const key of keys) {
        const owner = where === 'params' ? '"method":"m","params"' : `"id":1,"${where}"`;
        const text = `{"jsonrpc":"2.0",${owner}:{"${escaped(key)}":7}}`;
        expect((JSON.parse(text) as Record<string, Record<string, unknown>>)[where]![key]).toBe(7);
        const scanned = scanJson(Buffer.from(text));
        if (typeof scanned === 'string') throw new Error(`${text} refused: ${scanned}`);
        const members = scanned[where as keyof typeof INNER_KEYS] as Record<string, ValueSpan | undefined>;
        expect(members[key], text).toBeDefined();
        expect(text.slice(members[key]!.start, members[key]!.end), text).toBe('7');
      }
    }
  });

  it('for long strings, a special byte anywhere past the word loop, in one string or the next', () => {
    // A run longer than SHORT_RUN_WORDS words is searched by long-run.ts, with what it found kept for
    // the strings and escapes after it in the same piece, and forgotten at the next piece.
    const run = SHORT_RUN_WORDS * 4;
    for (const length of [run + 40, 3 * run]) {
      for (let offset = 0; offset < 4; offset++) {
        for (let at = run - 8; at < length; at += 13) {
          for (const special of [0x22, 0x5c, 0x01, 0x1f, 0x09, 0x7f, 0xff]) {
            const text = Buffer.alloc(offset + 2 * length + 8, 0x61);
            const raw = text.subarray(offset);
            raw[0] = 0x5b; // ["…", "…"]: marks kept from the first string may be read in the second
            raw[1] = 0x22;
            raw[length - 30] = 0x5c; // an escape (\n) before the special byte
            raw[length - 29] = 0x6e;
            raw[length] = 0x22;
            raw[length + 1] = 0x2c;
            raw[length + 2] = 0x22;
            raw[raw.length - 2] = 0x22;
            raw[raw.length - 1] = 0x5d;
            raw[at] = special;
            raw[length + at] = special;
            expectSameVerdict(raw);
            expectSameInPieces(raw, [at + 1]);
            expectSameInPieces(raw, [length + 2, length + at - 3]);
          }
        }
      }
    }
  });

  it('refuses as too deep in pieces what it refuses whole', () => {
    const raw = Buffer.from(`{"result":${'['.repeat(MAX_NESTING)}]}`);
    expect(scanJson(cut(raw, [3, 20, 400]))).toBe('too-deep');
  });
});

describe('issue 33: an id written over in pieces', () => {
  it('gives the bytes withIdAt gives whole, wherever the pieces are cut and whatever the id length', () => {
    fc.assert(
      fc.property(
        likelyMessage,
        points,
        fc.constantFrom('7', '"abc"', '12345678901234567890123'),
        (raw, at, id) => {
          const envelope = envelopeOf(raw);
          if (envelope?.idSpan === undefined) return;
          const expected = withIdAt(Buffer.from(raw), envelope.idSpan, Buffer.from(id));
          const written = piecesWithIdAt(cut(Buffer.from(raw), at), envelope.idSpan, Buffer.from(id));
          expect(written.join()).toEqual(expected);
          expect(written.length).toBe(expected.length);
        },
      ),
      RUNS,
    );
  });

  it('gives the scan of the new text without a second scan: spans after a longer id moved, none after a shorter', () => {
    fc.assert(
      fc.property(
        likelyMessage,
        points,
        fc.constantFrom('7', '"abc"', '12345678901234567890123', '"taskgate-\u00e9"'),
        (raw, at, id) => {
          const scanned = scanJson(raw);
          if (typeof scanned === 'string' || scanned.top.id === undefined) return;
          const bytes = Buffer.from(id);
          const written = piecesWithIdAt(cut(Buffer.from(raw), at), scanned.top.id, bytes);
          expect(scanWithIdAt(scanned, scanned.top.id, bytes)).toEqual(scanJson(written));
        },
      ),
      RUNS,
    );
  });
});

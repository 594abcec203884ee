import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { idOfOversized } from '../../src/protocol/frames.js';
import { scanJson } from '../../src/protocol/scan.js';
import type { Scanned } from '../../src/protocol/scanned.js';
import { LineFramer, looksLikeResponse } from '../../src/transport/framing.js';

const MiB = 1024 * 1024;
const KEEP = 4096;

interface Oversized {
  byteLength: number;
  head: string;
  tail: string;
}

function framer(maxMessageBytes: number) {
  const lines: string[] = [];
  const oversized: Oversized[] = [];
  const framing = new LineFramer(maxMessageBytes, {
    line: (bytes) => lines.push(bytes.toString('utf8')),
    oversized: (byteLength, head, tail) => oversized.push({ byteLength, head, tail }),
  });
  const push = (chunk: string | Buffer): void =>
    framing.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return { push, lines, oversized };
}

/** A request of exactly `bytes` bytes (bytes >= 80), padded inside params. */
function request(bytes: number, order: 'id-first' | 'id-last' = 'id-first', id: number | string = 7): string {
  const build = (pad: string): string =>
    order === 'id-first'
      ? JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'x', pad } })
      : JSON.stringify({ jsonrpc: '2.0', method: 'tools/call', params: { name: 'x', pad }, id });
  const text = build('p'.repeat(bytes - Buffer.byteLength(build(''))));
  if (Buffer.byteLength(text) !== bytes) throw new Error('bad padding');
  return text;
}

function pushInChunks(push: (chunk: Buffer) => void, bytes: Buffer, size: number): void {
  for (let i = 0; i < bytes.length; i += size) push(bytes.subarray(i, i + size));
}

/** Bytes of ArrayBuffers (Buffers) still reachable: full collections, with a turn between for the sweeper. */
async function liveArrayBufferBytes(): Promise<number> {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  gc();
  await new Promise((resolve) => setImmediate(resolve));
  gc();
  return process.memoryUsage().arrayBuffers;
}

describe('LineFramer', () => {
  it('delivers a message pushed one byte at a time, multi-byte characters split between chunks', () => {
    const { push, lines } = framer(MiB);
    const message = JSON.stringify({ jsonrpc: '2.0', method: 'x', params: { text: 'café €5 😀 日本' } });
    const bytes = Buffer.from(`${message}\n`);
    for (let i = 0; i < bytes.length - 1; i++) push(bytes.subarray(i, i + 1));
    expect(lines).toEqual([]);
    push(bytes.subarray(bytes.length - 1));
    expect(lines).toEqual([message]);
  });

  it.each([1, 2, 3])('delivers a 4-byte character split after its byte %d', (split) => {
    const { push, lines } = framer(MiB);
    const emoji = Buffer.from('😀');
    push(Buffer.concat([Buffer.from('{"a":"'), emoji.subarray(0, split)]));
    push(Buffer.concat([emoji.subarray(split), Buffer.from('"}\n')]));
    expect(lines).toEqual(['{"a":"😀"}']);
  });

  it('delivers many messages from one chunk, in order', () => {
    const { push, lines } = framer(MiB);
    const messages = Array.from({ length: 100 }, (_, i) =>
      JSON.stringify({ jsonrpc: '2.0', id: i, method: 'ping' }),
    );
    push(messages.map((message) => `${message}\n`).join(''));
    expect(lines).toEqual(messages);
  });

  it('delivers messages that straddle chunk boundaries', () => {
    const { push, lines } = framer(MiB);
    push('{"a":1}\n{"b"');
    push(':2}\n{"c":3}\n{"d"');
    expect(lines).toEqual(['{"a":1}', '{"b":2}', '{"c":3}']);
    push(':4}\n');
    expect(lines).toEqual(['{"a":1}', '{"b":2}', '{"c":3}', '{"d":4}']);
  });

  it('strips the CR of CRLF line endings, also when the LF comes in the next chunk', () => {
    const { push, lines } = framer(MiB);
    push('{"a":1}\r\n{"b":2}\r');
    push('\n');
    expect(lines).toEqual(['{"a":1}', '{"b":2}']);
  });

  it('skips blank and whitespace-only lines', () => {
    const { push, lines } = framer(MiB);
    push('\n\n\r\n   \n\t\r\n{"a":1}\n\n');
    expect(lines).toEqual(['{"a":1}']);
  });

  it('holds an unfinished line until its newline arrives', () => {
    const { push, lines } = framer(MiB);
    push('{"a":');
    push('1}');
    expect(lines).toEqual([]);
    push('\n');
    expect(lines).toEqual(['{"a":1}']);
  });

  it('accepts a line of exactly maxMessageBytes bytes and reports one byte more, counting bytes not characters', () => {
    const { push, lines, oversized } = framer(100);
    const fits = `{"t":"${'é'.repeat(46)}"}`;
    expect(Buffer.byteLength(fits)).toBe(100);
    push(`${fits}\n`);
    expect(lines).toEqual([fits]);
    push(`{"t":"${'é'.repeat(46)}x"}\n`);
    expect(lines).toHaveLength(1);
    expect(oversized.map((report) => report.byteLength)).toEqual([101]);
  });

  it('reports an oversized line with its byte length, its first and last bytes, and carries on', () => {
    const { push, lines, oversized } = framer(1024);
    const big = request(10_000, 'id-first', 7);
    const next = '{"jsonrpc":"2.0","id":8,"method":"ping"}';
    pushInChunks(push, Buffer.from(`${big}\n${next}\n`), 100);
    expect(lines).toEqual([next]);
    expect(oversized).toHaveLength(1);
    const [{ byteLength, head, tail }] = oversized as [Oversized];
    expect(byteLength).toBe(10_000);
    expect(big.startsWith(head)).toBe(true);
    expect(big.endsWith(tail)).toBe(true);
    expect(head.length).toBeGreaterThanOrEqual(256);
    expect(tail.length).toBeGreaterThanOrEqual(256);
    expect(Buffer.byteLength(head)).toBeLessThanOrEqual(KEEP);
    expect(Buffer.byteLength(tail)).toBeLessThanOrEqual(KEEP);
    expect(idOfOversized(head, tail)).toBe(7);
  });

  it('reports each of several oversized lines separately', () => {
    const { push, lines, oversized } = framer(1024);
    const text = [request(2_000), '{"ok":1}', request(3_000), request(5_000), '{"ok":2}'].join('\n');
    pushInChunks(push, Buffer.from(`${text}\n`), 512);
    expect(lines).toEqual(['{"ok":1}', '{"ok":2}']);
    expect(oversized.map((report) => report.byteLength)).toEqual([2_000, 3_000, 5_000]);
  });

  it('does not keep the bytes of an oversized line: 50 MiB in 1 MiB chunks, then a normal line', async () => {
    const { push, lines, oversized } = framer(MiB);
    const before = await liveArrayBufferBytes();
    const start = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"pad":"';
    push(start);
    for (let i = 0; i < 50; i++) push(Buffer.alloc(MiB, 0x61));
    expect((await liveArrayBufferBytes()) - before).toBeLessThan(8 * MiB);
    push('"}}\n{"jsonrpc":"2.0","id":2,"method":"ping"}\n');
    expect(oversized).toHaveLength(1);
    expect(oversized[0]!.byteLength).toBe(start.length + 50 * MiB + '"}}'.length);
    expect(lines).toEqual(['{"jsonrpc":"2.0","id":2,"method":"ping"}']);
  });

  // KNOWN BUG (src/transport/framing.ts, append): the head is taken from the pieces pending *before* the
  // piece that crosses the limit, so a line that arrives in one chunk has an empty head, and the leading
  // id of the message is lost. Remove `.fails` once fixed.
  it('reports the first bytes of an oversized line that arrives in one chunk', () => {
    const { push, oversized } = framer(1024);
    const big = request(10_000, 'id-first', 7);
    push(`${big}\n`);
    expect(oversized[0]!.head).toBe(big.slice(0, KEEP));
    expect(idOfOversized(oversized[0]!.head, oversized[0]!.tail)).toBe(7);
  });

  // KNOWN BUG (src/transport/framing.ts, append): likewise the tail starts with the crossing piece, so
  // when a small last piece crosses the limit the tail holds only that piece and the trailing id is lost.
  it('reports the last bytes of an oversized line whose last byte crosses the limit', () => {
    const { push, oversized } = framer(1024);
    const big = request(1025, 'id-last', 'req-9');
    push(big.slice(0, -1));
    push(`${big.slice(-1)}\n`);
    expect(oversized[0]!.tail).toBe(big);
    expect(idOfOversized(oversized[0]!.head, oversized[0]!.tail)).toBe('req-9');
  });

  // KNOWN BUG (src/transport/framing.ts, append): `Buffer.concat(pending).subarray(0, 4096)` is a view
  // that pins the whole concatenation (up to maxMessageBytes, 32 MiB by default) until the oversized line
  // ends, although only 4 KiB of it are used. Copy the head instead. Remove `.fails` once fixed.
  it('keeps only a few KiB while an oversized line streams in, whatever maxMessageBytes is', async () => {
    const { push } = framer(16 * MiB);
    const before = await liveArrayBufferBytes();
    for (let i = 0; i < 50; i++) push(Buffer.alloc(MiB, 0x61));
    expect((await liveArrayBufferBytes()) - before).toBeLessThan(2 * MiB);
  });
});

describe('LineFramer, for a sink that takes pieces (issue 33)', () => {
  function piecewise(maxMessageBytes: number) {
    const lines: Buffer[] = [];
    const pieces: { parts: Buffer[]; length: number; scanned: Scanned }[] = [];
    const framing = new LineFramer(maxMessageBytes, {
      line: (bytes) => lines.push(bytes),
      oversized: () => undefined,
      pieces: (line, scanned) => pieces.push({ parts: line.parts, length: line.length, scanned }),
    });
    return { push: (chunk: Buffer) => framing.push(chunk), lines, pieces };
  }
  const big = Buffer.from(`{"jsonrpc":"2.0","id":3,"result":{"text":"${'x\\u00e9 '.repeat(2000)}"}}`);

  it('hands a line that came in several chunks on as those chunks, scanned, without its CR', () => {
    for (const ending of ['\n', '\r\n']) {
      const { push, lines, pieces } = piecewise(MiB);
      const whole = Buffer.concat([
        big,
        Buffer.from(ending),
        Buffer.from('{"jsonrpc":"2.0","method":"m"}\n'),
      ]);
      // The CR, when there is one, alone in the last chunk of the line.
      const cuts = [0, 1000, 5000, big.length, whole.length];
      const chunks = cuts.slice(1).map((end, k) => whole.subarray(cuts[k], end));
      for (const chunk of chunks) push(chunk);
      expect(pieces).toHaveLength(1);
      const [line] = pieces;
      expect(Buffer.concat(line!.parts).equals(big)).toBe(true);
      expect(line!.length).toBe(big.length);
      // Views of the chunks pushed, not copies.
      for (const part of line!.parts) expect(part.buffer).toBe(whole.buffer);
      expect(line!.scanned).toEqual(scanJson(big));
      // A line whole in one chunk goes the usual way.
      expect(lines.map(String)).toEqual(['{"jsonrpc":"2.0","method":"m"}']);
    }
  });

  it('hands a line the scan refuses, or one under 1 KiB, joined to `line`, and skips a blank one', () => {
    const { push, lines, pieces } = piecewise(MiB);
    const broken = Buffer.from(big);
    broken[3000] = 0x01;
    pushInChunks(push, Buffer.concat([broken, Buffer.from('\n')]), 4096);
    pushInChunks(push, Buffer.from('{"jsonrpc":"2.0","method":"m"}\n'), 7);
    pushInChunks(push, Buffer.from(`${' '.repeat(5000)}\r\n`), 1000);
    expect(pieces).toEqual([]);
    expect(lines.map((line) => line.length)).toEqual([broken.length, 30]);
    expect(lines[0]!.equals(broken)).toBe(true);
  });
});

describe('idOfOversized', () => {
  it.each([
    ['a leading number id', '{"id":42,"method":"tools/call","params":{', 42],
    ['a leading id after jsonrpc', '{"jsonrpc":"2.0","id":42,"method":"x"', 42],
    ['a leading string id', '{"jsonrpc":"2.0","id":"abc-1","method":"x"', 'abc-1'],
    ['a leading string id with escapes', '{"id":"a\\"b\\\\c","method":"x"', 'a"b\\c'],
    ['a negative or fractional id', '{"id":-1.5,"method":"x"', -1.5],
    ['whitespace around the tokens', ' { "jsonrpc" : "2.0" , "id" : 3 , "method":"x"', 3],
  ])('finds %s in the head', (_, head, id) => {
    expect(idOfOversized(head, '"}}')).toBe(id);
  });

  it.each([
    ['a trailing number id', '"pad":"xxxx"},"id":5}', 5],
    ['a trailing string id', '"pad":"xxxx"},"id":"r-5"}', 'r-5'],
    ['a trailing id with whitespace', '"pad":"xxxx"} , "id" : 5 }\r', 5],
  ])('finds %s in the tail when the head has none', (_, tail, id) => {
    expect(idOfOversized('{"jsonrpc":"2.0","method":"tools/call","params":{"pad":"xx', tail)).toBe(id);
  });

  it('prefers the leading id', () => {
    expect(idOfOversized('{"id":1,"method":"x"', '},"id":2}')).toBe(1);
  });

  it('returns null for a nested trailing "id"', () => {
    const message = '{"jsonrpc":"2.0","method":"x","params":{"id":5}}';
    expect(idOfOversized(message, message)).toBeNull();
    const deeper = '{"jsonrpc":"2.0","method":"x","params":{"a":1,"id":5}}';
    expect(idOfOversized(deeper, deeper)).toBeNull();
  });

  it('returns null for an "id" that is not the first member', () => {
    expect(idOfOversized('{"jsonrpc":"2.0","method":"x","params":{"id":5,"pad":"', 'xx"}}')).toBeNull();
  });

  it.each([
    ['no id at all', '{"jsonrpc":"2.0","method":"notifications/x","params":{"pad":"', 'xx"}}'],
    ['a null id', '{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"', 'xx"}}'],
    ['a boolean id', '{"id":true,"method":"x"', 'xx"}}'],
    ['an object id', '{"id":{"n":1},"method":"x"', 'xx"}}'],
    ['empty text', '', ''],
  ])('returns null for %s', (_, head, tail) => {
    expect(idOfOversized(head, tail)).toBeNull();
  });

  // KNOWN BUG (src/protocol/frames.ts, ID_VALUE): a number with an exponent is cut at the "e", so the
  // error reply for {"id":1e3,...} is addressed to id 1, a different request. Remove `.fails` once fixed.
  it('reads a leading id with an exponent whole, or not at all', () => {
    expect([1000, null]).toContain(idOfOversized('{"jsonrpc":"2.0","id":1e3,"method":"x"', 'xx"}}'));
  });
});

describe('looksLikeResponse', () => {
  it.each([
    ['a result first', '{"result":{"content":[{"text":"aaaa', ',"jsonrpc":"2.0","id":3}', true],
    ['a result after the id', '{"jsonrpc":"2.0","id":3,"result":{"a', 'aaa"}}', true],
    ['an error', '{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"aaa', 'aaa"}}', true],
    ['a request', '{"jsonrpc":"2.0","id":3,"method":"x","params":{"a', 'aaa"}}', false],
    ['params first, the method last', '{"params":{"result":{"a', 'a"}},"method":"x","id":3}', false],
    ['a nested "result" only', '{"params":{"result":1,"a', 'aaa"}}', false],
    ['a key inside a string', '{"x":"\\",\\"result\\":1,"a', 'a"}', false],
    ['not an object', '["result",{"a', 'a"}]', false],
  ])('%s: %s', (_, head, tail, expected) => {
    expect(looksLikeResponse(head, tail)).toBe(expected);
  });
});

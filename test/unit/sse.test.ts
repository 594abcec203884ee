/** The event-stream parser, against the WHATWG "event stream interpretation" rules MCP's SSE relies on. */
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { idOfOversized } from '../../src/protocol/frames.js';
import { JsonScanner, SCAN_FROM_BYTES, scanJson } from '../../src/protocol/scan.js';
import { SseParser, type ScannedEvent } from '../../src/transport/sse.js';

interface Seen {
  events: { data: string; type: string; id: string | undefined }[];
  retries: number[];
  oversized: { bytes: number; head: string; tail: string }[];
}

/** What a sink saw; `scanned` gets the events handed to it scanned, when given (their data is in `events` too). */
function parse(chunks: (string | Buffer)[], maxEventBytes = 1024, scanned?: ScannedEvent[]): Seen {
  const seen: Seen = { events: [], retries: [], oversized: [] };
  const parser = new SseParser(maxEventBytes, {
    event: ({ data, type, id }) => seen.events.push({ data: data.toString('utf8'), type, id }),
    ...(scanned && {
      scanned: (event: ScannedEvent) => {
        scanned.push(event);
        seen.events.push({ data: event.data.join().toString('utf8'), type: event.type, id: event.id });
      },
    }),
    retry: (ms) => seen.retries.push(ms),
    oversized: (bytes, head, tail) => seen.oversized.push({ bytes, head, tail }),
  });
  for (const chunk of chunks) parser.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
  parser.end();
  return seen;
}

const BOM = Buffer.from([0xef, 0xbb, 0xbf]);

/** `text` cut at the given offsets (taken modulo its length, sorted). */
function cut(text: Buffer, at: number[]): Buffer[] {
  const offsets = [...new Set(at.map((offset) => offset % (text.length + 1)))].sort((a, b) => a - b);
  return [...offsets, text.length].map((end, i) => text.subarray(i === 0 ? 0 : offsets[i - 1], end));
}

describe('SseParser', () => {
  it('reads the events the MCP SDK writes: event type, id, one data line', () => {
    const { events } = parse(['event: message\nid: s|2\ndata: {"jsonrpc":"2.0","id":1,"result":{}}\n\n']);
    expect(events).toEqual([{ data: '{"jsonrpc":"2.0","id":1,"result":{}}', type: 'message', id: 's|2' }]);
  });

  it('dispatches a priming event (an id, empty data) so that its id can be resumed from', () => {
    const { events } = parse(['id: s|1\ndata: \n\n', 'data: {"a":1}\n\n']);
    expect(events).toEqual([
      { data: '', type: '', id: 's|1' },
      { data: '{"a":1}', type: '', id: undefined },
    ]);
  });

  it('accepts LF, CRLF and CR line ends, even when a CRLF is split across chunks', () => {
    const { events } = parse(['data: a\r\n\r\ndata: b\r', '\n\r\n', 'data: c\r\rdata: d\n\n']);
    expect(events.map((event) => event.data)).toEqual(['a', 'b', 'c', 'd']);
  });

  it('joins data lines with a line feed, whatever ends them: an empty one and one with no space too', () => {
    const { events } = parse(['data: a\ndata:\r\ndata:b\rdata: c\n\n', 'data:\ndata:\n\n']);
    expect(events.map((event) => event.data)).toEqual(['a\n\nb\nc', '\n']);
  });

  it('keeps the line feed of a JSON string cut across data lines: not JSON, unlike with a space there', () => {
    const { events } = parse(['data: {"text":"one\r\ndata: two"}\r\n\r\n']);
    expect(events[0]!.data).toBe('{"text":"one\ntwo"}');
    expect(() => JSON.parse(events[0]!.data) as unknown).toThrow();
  });

  it('puts a valid JSON text of several data lines on one line, the same JSON', () => {
    const message = { jsonrpc: '2.0', id: 1, result: { text: 'a\nb', list: [1, 2] } };
    for (const end of ['\n', '\r\n', '\r']) {
      const lines = JSON.stringify(message, null, 2).split('\n');
      const { events } = parse([lines.map((line) => `data:${line}${end}`).join('') + end]);
      expect(events[0]!.data).not.toMatch(/[\r\n]/);
      expect(JSON.parse(events[0]!.data)).toEqual(message);
    }
  });

  it('does so for a big event too, handed on scanned or not', () => {
    const message = { jsonrpc: '2.0', id: 2, result: { text: 'x\n'.repeat(20_000) } };
    const lines = JSON.stringify(message, null, 2).split('\n');
    const stream = Buffer.from(`${lines.map((line) => `data: ${line}\r\n`).join('')}\r\n`);
    const chunks = cut(stream, [10, 100, 5_000, 30_000]);
    const scanned: ScannedEvent[] = [];
    for (const seen of [parse(chunks, 1 << 20, scanned), parse(chunks, 1 << 20)]) {
      expect(seen.events).toHaveLength(1);
      expect(seen.events[0]!.data).not.toMatch(/[\r\n]/);
      expect(JSON.parse(seen.events[0]!.data)).toEqual(message);
    }
    expect(scanned).toHaveLength(1);
    expect(scanned[0]!.scanned).toEqual(scanJson(scanned[0]!.data.join()));
  });

  it('refuses a big event whose JSON string is cut across data lines: its scan says invalid', () => {
    const text = `{"jsonrpc":"2.0","id":3,"result":{"text":"${'y'.repeat(3_000)}`;
    const stream = Buffer.from(`data: ${text}\ndata: ${'z'.repeat(3_000)}"}}\n\n`);
    const scanned: ScannedEvent[] = [];
    const seen = parse(cut(stream, [2_000, 4_000]), 1 << 20, scanned);
    expect(seen.events[0]!.data).toBe(`${text}\n${'z'.repeat(3_000)}"}}`);
    expect(scanned[0]!.scanned).toBe('invalid');
  });

  it("joins an oversized event's data lines with a line feed in the edges it keeps", () => {
    const seen = parse([`data: {"id":5,\ndata: "text":"${'x'.repeat(2_000)}"}\n\n`], 1024);
    expect(seen.oversized).toHaveLength(1);
    expect(seen.oversized[0]!.head.startsWith('{"id":5,\n"text":"x')).toBe(true);
    expect(seen.oversized[0]!.bytes).toBe(`{"id":5,\n"text":"${'x'.repeat(2_000)}"}`.length);
  });

  it('reassembles an event split anywhere, byte by byte', () => {
    const text = 'event: message\nid: 7\ndata: {"text":"héllo"}\n\n';
    const bytes = Buffer.from(text);
    const chunks = [...bytes].map((byte) => Buffer.from([byte]));
    expect(parse(chunks).events).toEqual([{ data: '{"text":"héllo"}', type: 'message', id: '7' }]);
  });

  it('ignores one byte order mark at the start of the stream, wherever the chunks cut it', () => {
    const stream = Buffer.concat([BOM, Buffer.from('event: message\ndata: {"a":1}\n\n')]);
    for (let at = 0; at <= 4; at++) {
      const { events } = parse([stream.subarray(0, at), stream.subarray(at)]);
      expect(events).toEqual([{ data: '{"a":1}', type: 'message', id: undefined }]);
    }
    const byteByByte = parse([...stream].map((byte) => Buffer.from([byte])));
    expect(byteByByte.events).toEqual([{ data: '{"a":1}', type: 'message', id: undefined }]);
  });

  it('ignores only the first byte order mark, and keeps bytes that only began like one', () => {
    const twice = parse([Buffer.concat([BOM, BOM, Buffer.from('data: {"a":1}\n\n')])]);
    // The second is the start of a field name that is not `data`: that line is ignored.
    expect(twice.events).toEqual([]);
    const later = parse([Buffer.from('data: x'), Buffer.concat([BOM, Buffer.from('\n\n')])]);
    expect(later.events).toEqual([{ data: 'x\ufeff', type: '', id: undefined }]);
    const notOne = parse([Buffer.from([0xef, 0xbb]), Buffer.from('data: {"a":1}\n\n')]);
    expect(notOne.events).toEqual([]);
    const partial = parse([Buffer.from([0xef, 0xbb]), Buffer.from('\ndata: 1\n\n')]);
    expect(partial.events).toEqual([{ data: '1', type: '', id: undefined }]);
  });

  it('ignores comments (keep-alives), unknown fields and a value-less field; reads retry', () => {
    const { events, retries } = parse([
      ': keepalive\n\nfoo: bar\nretry: 1500\nretry: soon\ndata\n\ndata: x\n\n',
    ]);
    expect(retries).toEqual([1500]);
    expect(events.map((event) => event.data)).toEqual(['x']);
  });

  it('strips exactly one space after the colon', () => {
    expect(parse(['data:  two\n\n']).events[0]!.data).toBe(' two');
    expect(parse(['data:none\n\n']).events[0]!.data).toBe('none');
  });

  it('discards an event the stream ended in the middle of', () => {
    expect(parse(['data: complete\n\n', 'data: cut off\n']).events.map((e) => e.data)).toEqual(['complete']);
  });

  it('drops an event over the limit, keeping its edges, and goes on with the next', () => {
    const big = `{"jsonrpc":"2.0","id":42,"result":{"text":"${'x'.repeat(5000)}"}}`;
    const seen = parse(['id: 9\ndata: ', big.slice(0, 2000), big.slice(2000), '\n\ndata: small\n\n'], 1024);
    expect(seen.oversized).toHaveLength(1);
    expect(seen.oversized[0]!.bytes).toBe(big.length);
    expect(seen.oversized[0]!.head.startsWith('{"jsonrpc":"2.0","id":42')).toBe(true);
    expect(seen.oversized[0]!.tail.endsWith('"}}')).toBe(true);
    // The dropped event still moves the stream's last event id on.
    expect(seen.events).toEqual([
      { data: '', type: '', id: '9' },
      { data: 'small', type: '', id: undefined },
    ]);
  });

  it('counts several data lines of one event together against the limit', () => {
    const line = 'y'.repeat(600);
    const seen = parse([`data: ${line}\ndata: ${line}\n\n`], 1024);
    expect(seen.events).toEqual([]);
    expect(seen.oversized).toHaveLength(1);
    expect(seen.oversized[0]!.bytes).toBe(1201);
  });

  it("hands a big event's data on as the chunks it came in, scanned as they came: never joined", () => {
    const message = JSON.stringify({ jsonrpc: '2.0', id: 3, result: { text: 'é"x\n'.repeat(50_000) } });
    const stream = Buffer.from(`event: message\nid: 3\ndata: ${message}\n\n`);
    const chunks = cut(stream, [20_000, 65_536, 131_072, 196_608, stream.length - 1]);
    const scanned: ScannedEvent[] = [];
    const parser = new SseParser(1 << 20, {
      event: () => expect.unreachable('a big event goes to `scanned`'),
      scanned: (event) => scanned.push(event),
      retry: () => undefined,
      oversized: () => expect.unreachable(),
    });
    const push = vi.spyOn(JsonScanner.prototype, 'push');
    try {
      for (const chunk of chunks.slice(0, -1)) parser.push(chunk);
      // Scanned as it came: every chunk but the last (the event's blank line) is scanned already.
      expect(push).toHaveBeenCalledTimes(chunks.length - 1);
      parser.push(chunks.at(-1)!);
    } finally {
      push.mockRestore();
    }
    expect(scanned).toHaveLength(1);
    const [event] = scanned;
    expect(event!.type).toBe('message');
    expect(event!.id).toBe('3');
    expect(event!.data.join().toString('utf8')).toBe(message);
    expect(event!.data.parts).toHaveLength(chunks.length - 1);
    event!.data.parts.forEach((part, i) => expect(part.buffer).toBe(chunks[i]!.buffer));
    expect(event!.scanned).toEqual(scanJson(Buffer.from(message)));
  });

  it('gives a sink that takes big events scanned what a plain sink gets, wherever the stream is cut', () => {
    const json = fc.oneof(
      fc.jsonValue().map((value) => JSON.stringify(value)),
      fc
        .nat(3_000)
        .map((n) => JSON.stringify({ jsonrpc: '2.0', id: n, result: { text: 'a\\"é'.repeat(n) } })),
      fc.string({ maxLength: 2_000 }),
    );
    const event = fc.record({
      type: fc.option(fc.constantFrom('message', 'other'), { nil: undefined }),
      id: fc.option(fc.nat().map(String), { nil: undefined }),
      // A message cut into data lines where it may be (between any two characters: the parser joins them).
      data: fc.tuple(json, fc.array(fc.nat(), { maxLength: 2 })),
      end: fc.constantFrom('\n', '\r\n', '\r'),
    });
    const stream = fc.array(event, { minLength: 1, maxLength: 4 }).map((events) =>
      events
        .map(({ type, id, data: [text, cuts], end }) => {
          const lines = cut(Buffer.from(text), cuts).map((line) => `data: ${line.toString('utf8')}`);
          const fields = [type && `event: ${type}`, id && `id: ${id}`, ...lines].filter(Boolean);
          return fields.map((field) => field + end).join('') + end;
        })
        .join(''),
    );
    fc.assert(
      fc.property(
        stream,
        fc.array(fc.nat(), { maxLength: 8 }),
        fc.integer({ min: 512, max: 12_000 }),
        (text, cuts, max) => {
          const chunks = cut(Buffer.from(text), cuts);
          const scanned: ScannedEvent[] = [];
          // An event over the limit is dropped either way; its edges serve to find its id.
          const seen = ({ oversized, ...rest }: Seen) => ({
            ...rest,
            oversized: oversized.map(({ bytes, head, tail }) => ({ bytes, id: idOfOversized(head, tail) })),
          });
          expect(seen(parse(chunks, max, scanned))).toEqual(seen(parse(chunks, max)));
          for (const event of scanned) {
            expect(event.data.length).toBeGreaterThanOrEqual(SCAN_FROM_BYTES);
            expect(event.scanned).toEqual(scanJson(event.data.join()));
          }
        },
      ),
      { numRuns: 400 },
    );
  });
});

/** The event-stream parser, against the WHATWG "event stream interpretation" rules MCP's SSE relies on. */
import { describe, expect, it } from 'vitest';
import { SseParser } from '../../src/transport/sse.js';

interface Seen {
  events: { data: string; type: string; id: string | undefined }[];
  retries: number[];
  oversized: { bytes: number; head: string; tail: string }[];
}

function parse(chunks: (string | Buffer)[], maxEventBytes = 1024): Seen {
  const seen: Seen = { events: [], retries: [], oversized: [] };
  const parser = new SseParser(maxEventBytes, {
    event: ({ data, type, id }) => seen.events.push({ data: data.toString('utf8'), type, id }),
    retry: (ms) => seen.retries.push(ms),
    oversized: (bytes, head, tail) => seen.oversized.push({ bytes, head, tail }),
  });
  for (const chunk of chunks) parser.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
  parser.end();
  return seen;
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

  it('joins data lines with a space, keeping a message on one line', () => {
    const { events } = parse(['data: {"a":\ndata: 1}\n\n']);
    expect(events[0]!.data).toBe('{"a": 1}');
  });

  it('reassembles an event split anywhere, byte by byte', () => {
    const text = 'event: message\nid: 7\ndata: {"text":"héllo"}\n\n';
    const bytes = Buffer.from(text);
    const chunks = [...bytes].map((byte) => Buffer.from([byte]));
    expect(parse(chunks).events).toEqual([{ data: '{"text":"héllo"}', type: 'message', id: '7' }]);
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
});

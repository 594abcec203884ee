/**
 * An HTTP upstream may answer with pretty-printed JSON (raw CR and LF between tokens), in a JSON body or
 * in an SSE event whose data spans several `data:` lines. Forwarded as its bytes, such an answer must still
 * reach a stdio client as one line and an SSE client as one event; one with a raw line break inside a
 * string (in SSE, the string cut across data lines, which the standard joins with LF) is not JSON, and is
 * refused. taskgate's Session between a stdio (or HTTP front) client and its HttpUpstream, in process, and
 * a 2026-07-28 ModernHttpUpstream alone; the server is written by hand, as no SDK server pretty-prints.
 * Likewise a pretty-printed POST to the HTTP front reaches a stdio SDK server as one line.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { PassThrough } from 'node:stream';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/config/load.js';
import { Policy } from '../../src/config/policy.js';
import { Session } from '../../src/session/session.js';
import { MemoryTaskStore } from '../../src/tasks/memory-store.js';
import { HttpFront } from '../../src/transport/http-front.js';
import { HttpUpstream } from '../../src/transport/http-upstream.js';
import { LineChannel } from '../../src/transport/line-channel.js';
import { ModernHttpUpstream } from '../../src/transport/modern-http-upstream.js';
import type { Channel } from '../../src/transport/channel.js';
import { byteLines } from '../helpers/byte-lines.js';
import { frontOptions } from '../helpers/front-options.js';
import { fakeServer, textResult } from '../helpers/in-process.js';
import { Inbox } from '../helpers/inbox.js';
import { pipedSession } from '../helpers/piped-session.js';
import { inSession, openSession, post } from '../helpers/raw-http.js';
import { INITIALIZE } from '../helpers/taskgate.js';
import { listen, runCleanups, type Cleanups } from '../helpers/upstream-harness.js';

type Json = Record<string, unknown>;

const LIMIT = 8 * 1024 * 1024;
const LARGE = '9007199254740993';
const silent = pino({ level: 'silent' });

const cleanups: Cleanups = [];
afterEach(() => runCleanups(cleanups));

/** The result of a call of `bytes` characters, with a JSON escape of a line break in it (no raw one). */
const resultOf = (bytes: number) => ({
  content: [{ type: 'text', text: 'line\n'.repeat(Math.ceil(bytes / 5)) }],
});

/** JSON.stringify's pretty form, its line breaks CRLF (the body) or LF (SSE data lines). */
const pretty = (message: Json, lineBreak: string): string =>
  JSON.stringify(message, null, 2).replace(/\n/g, lineBreak);

/**
 * A Streamable HTTP server that answers everything pretty-printed: a tools/call's arguments say how big
 * its result is and whether it comes as a JSON body or as an SSE event (after a progress event, when
 * asked for progress). What it answered is kept, by id.
 */
async function prettyServer() {
  const answered = new Map<string, Json>();
  const reply = (req: IncomingMessage, res: ServerResponse, message: Json): void => {
    const params = (message.params ?? {}) as Json;
    const args = (params.arguments ?? {}) as { bytes?: number; sse?: boolean; invalid?: boolean };
    const result =
      message.method === 'initialize'
        ? {
            protocolVersion: '2025-11-25',
            capabilities: { tools: {} },
            serverInfo: { name: 'pretty', version: '1' },
          }
        : message.method === 'tools/list'
          ? { tools: [{ name: 'pretty', inputSchema: { type: 'object' } }] }
          : resultOf(args.bytes ?? 10);
    const answer = { jsonrpc: '2.0', id: message.id, result };
    answered.set(JSON.stringify(message.id), answer);
    const headers = { 'mcp-session-id': 'pretty-session' };
    // With `invalid`, a raw line break inside a string (in SSE, the string cut across data lines): not
    // JSON, whatever a space in its place would make of it.
    const laidOut = (lineBreak: string): string => {
      const text = pretty(answer, lineBreak);
      return args.invalid ? text.replace(/line\\n/g, 'line\n') : text;
    };
    if (!args.sse) {
      res.writeHead(200, { ...headers, 'content-type': 'application/json' });
      res.end(laidOut('\r\n'));
      return;
    }
    res.writeHead(200, { ...headers, 'content-type': 'text/event-stream' });
    const token = ((params._meta ?? {}) as Json).progressToken;
    if (token !== undefined) {
      const progress = {
        jsonrpc: '2.0',
        method: 'notifications/progress',
        params: { progressToken: token, progress: 1 },
      };
      res.write(`event: message\ndata: ${JSON.stringify(progress)}\n\n`);
    }
    const data = laidOut('\n')
      .split('\n')
      .map((line) => `data: ${line}\n`)
      .join('');
    res.end(`event: message\n${data}\n`);
  };
  const server = createServer((req, res) => {
    if (req.method !== 'POST') return void res.writeHead(405).end();
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const message = JSON.parse(Buffer.concat(chunks).toString()) as Json;
      if (message.id === undefined) return void res.writeHead(202).end();
      reply(req, res, message);
    });
  });
  const url = await listen(cleanups, server);
  return { url, answered };
}

const upstreamAt = (url: string) =>
  new HttpUpstream({ url, maxMessageBytes: LIMIT, reconnectDelayMs: 50 }, silent);

/** A stdio client of taskgate before the pretty server: each line it receives, as bytes. */
async function stdioClient() {
  const server = await prettyServer();
  const { fromClient, toClient, close } = pipedSession({
    limit: LIMIT,
    maxResultBytes: LIMIT,
    upstream: () => upstreamAt(server.url),
  });
  cleanups.push(close);
  const lines = new Inbox<Buffer>();
  byteLines(toClient, (line) => lines.push(line));
  const send = (message: string): void => void fromClient.write(`${message}\n`);
  send(JSON.stringify(INITIALIZE));
  await lines.waitFor((line) => line.includes('"protocolVersion"'), 'the initialize answer');
  send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
  return { server, lines, send };
}

const call = (id: string, args: Json): string =>
  `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"pretty","arguments":${JSON.stringify(args)}}}`;

describe('a pretty-printed answer from an HTTP upstream', () => {
  const cases = [
    { what: 'a small JSON body', args: { bytes: 100 } },
    { what: 'a big JSON body', args: { bytes: 300_000 } },
    { what: 'a small SSE event of many data lines', args: { bytes: 100, sse: true } },
    { what: 'a big SSE event of many data lines', args: { bytes: 300_000, sse: true } },
  ];
  for (const { what, args } of cases) {
    for (const id of ['5', LARGE]) {
      const rewritten = id === LARGE ? ', its id rewritten' : '';
      it(`${what}${rewritten}: one line to a stdio client, the server's answer`, async () => {
        const { server, lines, send } = await stdioClient();
        const before = lines.items.length;
        send(call(id, args));
        const got = await lines.waitFor((line) => line.includes('"content"'), 'the answer');
        // Every line since the call is whole JSON: the answer was not split.
        for (const line of lines.items.slice(before))
          expect(() => JSON.parse(line.toString()) as Json).not.toThrow();
        expect(got.includes(0x0d)).toBe(false);
        // The client's id, exact (beyond 2^53 JSON.parse would round it): compared as its digits.
        const gotExact = JSON.parse(got.toString().replace(/"id"\s*:\s*(\d+)/, '"id":"$1"')) as Json;
        expect(gotExact).toEqual({ ...[...server.answered.values()].at(-1)!, id });
      });
    }
  }

  for (const [what, sse] of [
    ['a JSON body', false],
    ['an SSE event, a string cut across data lines', true],
  ] as const) {
    for (const bytes of [100, 300_000]) {
      it(`${bytes} bytes NOT valid in ${what} (a raw line break in a string): refused, not made valid by a space`, async () => {
        const { lines, send } = await stdioClient();
        send(call('6', { bytes, sse, invalid: true }));
        const got = await lines.waitFor(
          (line) => (JSON.parse(line.toString()) as Json).id === 6,
          'the answer',
        );
        const answer = JSON.parse(got.toString()) as Json;
        expect(answer.result).toBeUndefined();
        expect(answer.error).toEqual({
          code: -32603,
          message: 'The upstream server answered with a line that is not valid JSON',
        });
      });
    }
  }
});

/** Events of an SSE body: each one's data lines. */
const eventsOf = (body: string): string[][] =>
  body
    .split('\n\n')
    .filter((event) => event.trim() !== '')
    .map((event) =>
      event
        .split(/\r\n|\r|\n/)
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).trim()),
    );

/** taskgate's HTTP front, each session's Session before the upstream `upstream` makes. */
async function front(upstream: () => Channel): Promise<URL> {
  const config = resolveConfig({});
  const gateway = new HttpFront(
    frontOptions({ maxMessageBytes: LIMIT, eventLogBytes: LIMIT, eventLogTotalBytes: LIMIT }),
    {
      openSession: async (client) => {
        const store = new MemoryTaskStore({ maxTasks: 10, maxResultBytes: LIMIT });
        const session = new Session(
          client,
          upstream(),
          { id: 'pretty', config, policy: new Policy(config), store, logger: silent },
          { upstreamGone: () => undefined, closed: () => undefined },
        );
        session.start();
        cleanups.push(async () => {
          await session.close();
          await store.close();
        });
        return Promise.resolve();
      },
      notReady: async () => undefined,
    },
    silent,
  );
  const url = await gateway.listen();
  cleanups.push(() => gateway.close());
  return url;
}

describe('a pretty-printed answer from an HTTP upstream to an SSE client', () => {
  for (const bytes of [100, 300_000]) {
    it(`${bytes} bytes in an SSE event of many data lines, after a progress event: one event, one data line`, async () => {
      const server = await prettyServer();
      const url = await front(() => upstreamAt(server.url));
      const headers = inSession(await openSession(url));
      const message = {
        jsonrpc: '2.0',
        id: 9,
        method: 'tools/call',
        params: { name: 'pretty', arguments: { bytes, sse: true }, _meta: { progressToken: 'p' } },
      };
      const response = await post(url, message, headers);
      expect(response.headers.get('content-type')).toBe('text/event-stream');
      const events = eventsOf(await response.text()).filter((data) => data.length > 0);
      expect(events).toHaveLength(2);
      for (const data of events) expect(data).toHaveLength(1);
      expect(JSON.parse(events[1]![0]!)).toEqual(server.answered.get('9'));
    });

    it(`${bytes} bytes NOT valid, a string cut across data lines: an error event, not made valid by a space`, async () => {
      const server = await prettyServer();
      const url = await front(() => upstreamAt(server.url));
      const headers = inSession(await openSession(url));
      const message = {
        jsonrpc: '2.0',
        id: 10,
        method: 'tools/call',
        params: {
          name: 'pretty',
          arguments: { bytes, sse: true, invalid: true },
          _meta: { progressToken: 'p' },
        },
      };
      const response = await post(url, message, headers);
      expect(response.headers.get('content-type')).toBe('text/event-stream');
      const events = eventsOf(await response.text()).filter((data) => data.length > 0);
      expect(events).toHaveLength(2);
      expect(JSON.parse(events[1]!.join('\n'))).toEqual({
        jsonrpc: '2.0',
        id: 10,
        error: { code: -32603, message: 'The upstream server answered with a line that is not valid JSON' },
      });
    });
  }
});

/** A 2026-07-28 upstream before the pretty server: each message it hands on, as its bytes. */
async function modernUpstream() {
  const server = await prettyServer();
  const upstream = new ModernHttpUpstream({ url: server.url, maxMessageBytes: LIMIT }, silent);
  const heard = new Inbox<Buffer>();
  upstream.start({
    message: (raw) => heard.push(raw),
    malformed: () => undefined,
    closed: () => undefined,
  });
  cleanups.push(() => upstream.close());
  return { server, upstream, heard };
}

const modernCall = (id: number, args: Json) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: {
    name: 'pretty',
    arguments: args,
    _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' },
  },
});

describe('a pretty-printed answer from a 2026-07-28 HTTP upstream', () => {
  for (const bytes of [100, 300_000]) {
    it(`${bytes} bytes in an SSE event of many data lines: handed on as one line, the server's answer`, async () => {
      const { server, upstream, heard } = await modernUpstream();
      upstream.send(modernCall(11, { bytes, sse: true }));
      const raw = await heard.waitFor(() => true, 'the answer');
      expect(raw.includes(0x0a) || raw.includes(0x0d)).toBe(false);
      expect(JSON.parse(raw.toString())).toEqual(server.answered.get('11'));
    });

    for (const [what, sse] of [
      ['a JSON body', false],
      ['an SSE event, a string cut across data lines', true],
    ] as const) {
      it(`${bytes} bytes NOT valid in ${what}: the request fails saying so`, async () => {
        const { upstream, heard } = await modernUpstream();
        upstream.send(modernCall(12, { bytes, sse, invalid: true }));
        const raw = await heard.waitFor(() => true, 'the answer');
        expect(JSON.parse(raw.toString())).toEqual({
          jsonrpc: '2.0',
          id: 12,
          error: {
            code: -32000,
            message: 'The upstream server answered with a message that is not valid JSON',
          },
        });
      });
    }
  }
});

describe('a pretty-printed request from an HTTP client to a stdio server', () => {
  it('reaches the SDK server as one line, and is answered', async () => {
    const measure = {
      name: 'measure',
      run: (args: Json) => Promise.resolve(textResult(`${String(args.text).length} characters`)),
    };
    const url = await front(() => {
      const [toServer, fromServer] = [new PassThrough(), new PassThrough()];
      const { server } = fakeServer([measure]);
      void server.connect(new StdioServerTransport(toServer, fromServer));
      cleanups.push(() => server.close());
      return new LineChannel(fromServer, toServer, LIMIT, 'the upstream server');
    });
    const headers = inSession(await openSession(url));
    const message = {
      jsonrpc: '2.0',
      id: 3,
      method: 'tools/call',
      params: { name: 'measure', arguments: { text: 'x'.repeat(2000) } },
    };
    const response = await post(url, pretty(message, '\r\n'), headers, AbortSignal.timeout(5000));
    expect(await response.text()).toContain('2000 characters');
  });
});

describe('a stdio server’s line with a raw CR between tokens, to an SSE client', () => {
  it('is one event of one data line (a CR ends an SSE line)', async () => {
    const answered = new Inbox<Json>();
    const url = await front(() => {
      const [toServer, fromServer] = [new PassThrough(), new PassThrough()];
      const write = (message: Json): void =>
        void fromServer.write(`${JSON.stringify(message).replace(/,"/g, ',\r"')}\n`);
      byteLines(toServer, (line) => {
        const message = JSON.parse(line.toString()) as Json;
        if (message.method === 'initialize') {
          const result = {
            protocolVersion: '2025-11-25',
            capabilities: { tools: {} },
            serverInfo: { name: 'cr', version: '1' },
          };
          write({ jsonrpc: '2.0', id: message.id, result });
        } else if (message.method === 'tools/call') {
          const token = ((message.params as Json)._meta as Json).progressToken;
          write({
            jsonrpc: '2.0',
            method: 'notifications/progress',
            params: { progressToken: token, progress: 1 },
          });
          const answer = {
            jsonrpc: '2.0',
            id: message.id,
            result: { content: [{ type: 'text', text: 'done' }] },
          };
          write(answer);
          answered.push(answer);
        }
      });
      return new LineChannel(fromServer, toServer, LIMIT, 'the upstream server');
    });
    const headers = inSession(await openSession(url));
    const message = {
      jsonrpc: '2.0',
      id: 4,
      method: 'tools/call',
      params: { name: 'cr', arguments: {}, _meta: { progressToken: 'p' } },
    };
    const response = await post(url, message, headers);
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const events = eventsOf(await response.text()).filter((data) => data.length > 0);
    expect(events).toHaveLength(2);
    for (const data of events) expect(data).toHaveLength(1);
    expect(JSON.parse(events[1]![0]!)).toEqual(await answered.waitFor(() => true, 'the answer'));
  });
});

/**
 * Issue 33: in front of a 2026-07-28 server, a big complete answer reaches the 2025 client as the bytes the
 * server wrote, but for its id and its `"resultType":"complete"`: the translator cuts those out of the
 * pieces it was read in and hands them on with their scan, never parsing nor joining them. What it gets
 * is what the translator's parse-and-rebuild gave. What it must change (input_required) or refuse (not
 * JSON, not a response, too deep) is read the usual way. The Session between LineChannels over in-memory
 * pipes, a ModernUpstreamTranslator (behind the era probe, as upstream.ts has it for stdio) in front of a
 * server the test writes lines for, or of a server over HTTP.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { PassThrough } from 'node:stream';
import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ProbingUpstream } from '../../src/modern/probing-upstream.js';
import { ModernUpstreamTranslator } from '../../src/modern/upstream-translator.js';
import { MAX_NESTING } from '../../src/protocol/frames.js';
import { MODERN_VERSIONS } from '../../src/protocol/modern/meta.js';
import type { Channel } from '../../src/transport/channel.js';
import { ModernHttpUpstream } from '../../src/transport/modern-http-upstream.js';
import { byteLines } from '../helpers/byte-lines.js';
import { Inbox } from '../helpers/inbox.js';
import { pipedSession } from '../helpers/piped-session.js';
import { INITIALIZE } from '../helpers/taskgate.js';

type Json = Record<string, unknown>;

const LIMIT = 8 * 1024 * 1024;
const PIPE_CHUNK = 64 * 1024;
const BIG = 2_000_000;
const SOURCE = '/src/';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A line as a pipe delivers it: in reads of at most 64 KiB (`inOne`: in one read), the newline with the last. */
function writeLine(stream: PassThrough, line: string, inOne = false): void {
  const whole = Buffer.from(`${line}\n`);
  const chunk = inOne ? whole.length : PIPE_CHUNK;
  for (let at = 0; at < whole.length; at += chunk) stream.write(whole.subarray(at, at + chunk));
}

const DISCOVERED = { supportedVersions: MODERN_VERSIONS, capabilities: { tools: {} }, _meta: {} };

/**
 * Over stdio as upstream.ts puts it: the era probed (ProbingUpstream), then the translator. `http`: the
 * server over HTTP instead, under the translator (the lines written to `fromServer` then go nowhere).
 */
async function gateway(http?: Channel, discovered: Json = DISCOVERED) {
  const logger = pino({ level: 'silent' });
  const { fromClient, toClient, fromServer, toServer, close } = pipedSession({
    limit: LIMIT,
    maxResultBytes: 1024,
    upstream: (server) =>
      http === undefined
        ? new ProbingUpstream(server, 'modern', 5_000, logger)
        : new ModernUpstreamTranslator(http, discovered, MODERN_VERSIONS[0]!, logger),
  });
  cleanups.push(close);
  const client = new Inbox<Buffer>();
  byteLines(toClient, (line) => client.push(line));
  const server = new Inbox<Json>();
  byteLines(toServer, (line) => {
    const message = JSON.parse(line.toString()) as Json;
    if (message.method === 'server/discover') {
      writeLine(fromServer, JSON.stringify({ jsonrpc: '2.0', id: message.id, result: discovered }));
    } else if (message.method === 'tools/list') {
      const tools = [{ name: 'big', inputSchema: { type: 'object' } }];
      writeLine(fromServer, JSON.stringify({ jsonrpc: '2.0', id: message.id, result: { tools } }));
    } else {
      server.push(message);
    }
  });
  const clientSends = (message: Json): void => void fromClient.write(`${JSON.stringify(message)}\n`);
  clientSends(INITIALIZE);
  await client.waitFor((line) => line.includes('"protocolVersion"'), 'the initialize answer');
  clientSends({ jsonrpc: '2.0', method: 'notifications/initialized' });
  /** The client calls; the call as it reached the server. */
  const clientCalls = (id: number): void =>
    clientSends({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'big', arguments: {} } });
  const call = async (id: number): Promise<Json> => {
    clientCalls(id);
    return server.waitFor((m) => m.method === 'tools/call' && m.id !== undefined, 'the call upstream');
  };
  return {
    client,
    call,
    clientCalls,
    serverWrites: (line: string, inOne?: boolean) => writeLine(fromServer, line, inOne),
  };
}

const text = (bytes: number): string => 'x'.repeat(bytes);

/** What the translator's parse-and-rebuild gives a 2025 client for a server's result: no resultType. */
function rebuilt(id: number, result: Json): string {
  const { resultType: _dropped, ...legacy } = result;
  return JSON.stringify({ jsonrpc: '2.0', id, result: legacy });
}

/** Runs `act` counting what taskgate's code parses and joins of more than BIG bytes. */
async function watched<T>(act: () => Promise<T>): Promise<{ value: T; parsed: number; joined: number }> {
  let parsed = 0;
  let joined = 0;
  const parse = JSON.parse;
  const parseSpy = vi.spyOn(JSON, 'parse').mockImplementation((text: string, reviver) => {
    if (text.length > BIG && new Error().stack?.includes(SOURCE)) parsed++;
    return parse(text, reviver) as unknown;
  });
  const concat = Buffer.concat;
  const joinSpy = vi.spyOn(Buffer, 'concat').mockImplementation((list, total) => {
    const whole = concat(list, total);
    if (whole.length > BIG && new Error().stack?.includes(SOURCE)) joined++;
    return whole;
  });
  try {
    return { value: await act(), parsed, joined };
  } finally {
    parseSpy.mockRestore();
    joinSpy.mockRestore();
  }
}

describe('issue 33: a 2026-07-28 server big answer, to a 2025 client as its bytes', () => {
  const layouts: [string, (big: string) => Json][] = [
    ['resultType last', (big) => ({ content: [{ type: 'text', text: big }], resultType: 'complete' })],
    ['resultType first', (big) => ({ resultType: 'complete', content: [{ type: 'text', text: big }] })],
    [
      'resultType between',
      (big) => ({ content: [{ type: 'text', text: big }], resultType: 'complete', _meta: { k: 1 } }),
    ],
    ['resultType alone but for _meta', () => ({ resultType: 'complete', _meta: { k: text(BIG) } })],
    ['no resultType', (big) => ({ content: [{ type: 'text', text: big }], isError: false })],
  ];
  for (const [layout, resultOf] of layouts) {
    for (const inOne of [false, true]) {
      it(`${layout}, ${inOne ? 'in one read' : 'in 64 KiB reads'}: what the rebuild gave, byte for byte, never parsed nor joined`, async () => {
        const gate = await gateway();
        const asked = await gate.call(7);
        const result = resultOf(text(BIG));
        const {
          value: got,
          parsed,
          joined,
        } = await watched(async () => {
          gate.serverWrites(JSON.stringify({ jsonrpc: '2.0', id: asked.id, result }), inOne);
          return gate.client.waitFor((line) => line.length > BIG, 'the answer');
        });
        expect(got.toString()).toBe(rebuilt(7, result));
        expect(parsed).toBe(0);
        expect(joined).toBe(0);
      });
    }
  }

  it('odd spacing, escapes and the id last: the same bytes less the id and resultType, the same value as the rebuild', async () => {
    const gate = await gateway();
    const asked = await gate.call(8);
    const body = String.raw`caf\u00e9 \/ \"q\" \\ n\n`.repeat(BIG / 20);
    const head = `{ "result" : {"content":[{"type":"text","text":"${body}"}] ,\t  "result\\u0054ype" : "complete"`;
    const line = `${head} , "_meta":{"k":1}}, "jsonrpc":"2.0" , "id" : ${JSON.stringify(asked.id)} }`;
    const { value: got, parsed } = await watched(async () => {
      gate.serverWrites(line);
      return gate.client.waitFor((l) => l.length > BIG, 'the answer');
    });
    expect(parsed).toBe(0);
    const expected = line
      .replace(',\t  "result\\u0054ype" : "complete"', '')
      .replace(`"id" : ${JSON.stringify(asked.id)}`, '"id" : 8');
    expect(got.toString()).toBe(expected);
    const value = JSON.parse(line) as { result: Json };
    expect(JSON.parse(got.toString())).toEqual(JSON.parse(rebuilt(8, value.result)));
  });

  it('from a server with the tasks extension, a plain call: what the rebuild gave, never parsed nor joined', async () => {
    const tasks = { 'io.modelcontextprotocol/tasks': {} };
    const gate = await gateway(undefined, { ...DISCOVERED, capabilities: { tools: {}, extensions: tasks } });
    const asked = await gate.call(12);
    const result = { content: [{ type: 'text', text: text(BIG) }], resultType: 'complete' };
    const {
      value: got,
      parsed,
      joined,
    } = await watched(async () => {
      gate.serverWrites(JSON.stringify({ jsonrpc: '2.0', id: asked.id, result }));
      return gate.client.waitFor((line) => line.length > BIG, 'the answer');
    });
    expect(got.toString()).toBe(rebuilt(12, result));
    expect(parsed).toBe(0);
    expect(joined).toBe(0);
  });

  it('resultType twice: what the rebuild gave (the parse takes the last), no other resultType left', async () => {
    const gate = await gateway();
    const asked = await gate.call(11);
    const line = `{"jsonrpc":"2.0","id":${JSON.stringify(asked.id)},"result":{"content":[{"type":"text","text":"${text(BIG)}"}],"resultType":"input_required","resultType":"complete"}}`;
    gate.serverWrites(line);
    const got = await gate.client.waitFor((l) => l.length > BIG, 'the answer');
    expect(got.toString()).toBe(rebuilt(11, (JSON.parse(line) as { result: Json }).result));
    expect(got.includes('resultType')).toBe(false);
  });

  it('input_required keeps the object path: the client is asked', async () => {
    const gate = await gateway();
    const asked = await gate.call(9);
    const elicit = {
      method: 'elicitation/create',
      params: { message: 'm', requestedSchema: { type: 'object' } },
    };
    const pad = text(BIG);
    gate.serverWrites(
      JSON.stringify({
        jsonrpc: '2.0',
        id: asked.id,
        result: { resultType: 'input_required', inputRequests: { a: elicit }, requestState: pad },
      }),
    );
    const question = await gate.client.waitFor((l) => l.includes('elicitation/create'), 'the input request');
    expect(question.length).toBeLessThan(1000);
    expect(JSON.parse(question.toString())).toMatchObject({ method: 'elicitation/create' });
  });

  /** Each is refused as the parse refuses it: never passed on, and the call it names fails at once. */
  const hostile: [string, (id: unknown) => string][] = [
    [
      'not JSON (a trailing comma)',
      (id) => `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"t":"${text(BIG)}",}}`,
    ],
    [
      'not JSON (cut short)',
      (id) => `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"t":"${text(BIG)}"}`,
    ],
    [
      'a result that is no object',
      (id) => `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":["${text(BIG)}"]}`,
    ],
    ['JSON-RPC 1.0', (id) => `{"jsonrpc":"1.0","id":${JSON.stringify(id)},"result":{"t":"${text(BIG)}"}}`],
    [
      'both result and error',
      (id) =>
        `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"t":"${text(BIG)}"},"error":{"code":1,"message":"m"}}`,
    ],
    [
      `nested deeper than ${MAX_NESTING}`,
      (id) =>
        `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"t":"${text(BIG)}","d":${'['.repeat(MAX_NESTING)}${']'.repeat(MAX_NESTING)}}}`,
    ],
  ];
  for (const [what, lineOf] of hostile) {
    for (const inOne of [false, true]) {
      it(`refuses ${what}, ${inOne ? 'in one read' : 'in 64 KiB reads'}: the client never gets it, the call fails at once`, async () => {
        const gate = await gateway();
        const asked = await gate.call(10);
        gate.serverWrites(lineOf(asked.id), inOne);
        const got = await gate.client.waitFor((l) => l.includes('"id":10'), 'the answer');
        expect(got.length).toBeLessThan(1000);
        expect(JSON.parse(got.toString())).toMatchObject({
          jsonrpc: '2.0',
          id: 10,
          error: { code: -32603, message: expect.stringContaining('The upstream server answered with') },
        });
      });
    }
  }
});

/** A 2026-07-28 server over HTTP: tools/list answered small, a tools/call with `answer` as JSON or on an event stream. */
async function httpServer(asEvents: boolean, answer: (id: unknown) => string): Promise<string> {
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const message = JSON.parse(Buffer.concat(chunks).toString()) as Json;
      const line =
        message.method === 'tools/call'
          ? answer(message.id)
          : JSON.stringify({ jsonrpc: '2.0', id: message.id, result: { tools: [], resultType: 'complete' } });
      response.writeHead(200, { 'content-type': asEvents ? 'text/event-stream' : 'application/json' });
      const body = Buffer.from(asEvents ? `event: message\ndata: ${line}\n\n` : line);
      for (let at = 0; at < body.length; at += PIPE_CHUNK) response.write(body.subarray(at, at + PIPE_CHUNK));
      response.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
}

describe('issue 33: a 2026-07-28 server big answer over HTTP, to a 2025 client as its bytes', () => {
  const upstreamAt = (url: string): Channel =>
    new ModernHttpUpstream({ url, maxMessageBytes: LIMIT }, pino({ level: 'silent' }));
  for (const asEvents of [false, true]) {
    const body = asEvents ? 'on an event stream' : 'as a JSON body';
    it(`${body}: what the rebuild gave, byte for byte, never parsed nor joined`, async () => {
      const result = { content: [{ type: 'text', text: text(BIG) }], resultType: 'complete' };
      const url = await httpServer(asEvents, (id) => JSON.stringify({ jsonrpc: '2.0', id, result }));
      const gate = await gateway(upstreamAt(url));
      const {
        value: got,
        parsed,
        joined,
      } = await watched(async () => {
        gate.clientCalls(7);
        return gate.client.waitFor((line) => line.length > BIG, 'the answer');
      });
      expect(got.toString()).toBe(rebuilt(7, result));
      expect(parsed).toBe(0);
      expect(joined).toBe(0);
    });

    it(`${body}: an answer that is not JSON fails the call, naming the upstream`, async () => {
      const url = await httpServer(
        asEvents,
        (id) => `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"t":"${text(BIG)}",}}`,
      );
      const gate = await gateway(upstreamAt(url));
      gate.clientCalls(10);
      const got = await gate.client.waitFor((l) => l.includes('"id":10'), 'the answer');
      expect(got.length).toBeLessThan(1000);
      expect(JSON.parse(got.toString())).toMatchObject({
        id: 10,
        error: {
          code: -32000,
          message: 'The upstream server answered with a message that is not valid JSON',
        },
      });
    });
  }
});

/**
 * Issue 33: a big answer from an HTTP upstream reaches the sidecar's client as the bytes the server sent,
 * and taskgate reads it with one scan, never JSON.parse, whatever order the server writes its members in.
 * The TypeScript SDK writes `{"result":…,"jsonrpc":"2.0","id":…}`; the Python SDK (pydantic) writes
 * `{"jsonrpc":"2.0","id":…,"result":…}`. In the test's own process: startHttpGateway in front of a real SDK
 * server on real sockets, through a proxy that relays its answers unchanged or laid out as Python writes
 * them (by moving bytes, not by parsing), and Streamable HTTP by hand at the front.
 */
import { createServer, request as httpRequest } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { resolveConfig } from '../../src/config/load.js';
import { FixtureEventStore } from '../fixtures/http-serve.js';
import { serveInProcess } from '../helpers/in-process-http.js';
import { memoryGateway } from '../helpers/memory-gateway.js';
import { listen, runCleanups, type Cleanups } from '../helpers/upstream-harness.js';
import { watchBytes } from '../helpers/byte-watch.js';
import { inSession, openSession, post, postTextCall } from '../helpers/raw-http.js';

const cleanups: Cleanups = [];
afterEach(() => runCleanups(cleanups));

/** Prose with what JSON escapes (quotes, a backslash, a line break, a tab) and multi-byte characters. */
const PROSE = 'The "quick" fox \\ jumps — naïve café, 日本語.\n\tAgain. ';

/** A real SDK server whose `text` tool returns `length` characters of PROSE. */
async function sdkServer(): Promise<string> {
  const makeServer = () => {
    const server = new McpServer({ name: 'big', version: '1' });
    server.registerTool(
      'text',
      { description: 'returns that many characters', inputSchema: { length: z.number() } },
      ({ length }) => ({
        content: [{ type: 'text', text: PROSE.repeat(Math.ceil(length / PROSE.length)).slice(0, length) }],
      }),
    );
    return server.server;
  };
  const served = await serveInProcess(makeServer, 'big', { eventStore: () => new FixtureEventStore() });
  cleanups.push(served.close);
  return served.url;
}

/** `{"result":R,"jsonrpc":"2.0","id":N}` as Python writes it, `{"jsonrpc":"2.0","id":N,"result":R}`. */
function idFirst(data: string): string {
  const tail = /,"jsonrpc":"2\.0","id":(\d+)\}$/.exec(data);
  if (!data.startsWith('{"result":') || tail === null) return data;
  return `{"jsonrpc":"2.0","id":${tail[1]},"result":${data.slice('{"result":'.length, tail.index)}}`;
}

/**
 * Relays to `target`; answers to POSTs (an SSE stream or one JSON body) are taken whole, and each message
 * written `idFirst` when `pythonLayout`. Keeps the last message it relayed.
 */
async function relay(target: string, pythonLayout: boolean) {
  const sent: string[] = [];
  const bodies: ('sse' | 'json')[] = [];
  const relaid = (data: string): string => {
    const out = pythonLayout ? idFirst(data) : data;
    sent.push(out);
    return out;
  };
  const server = createServer((req, res) => {
    const forward = httpRequest(target, { method: req.method, headers: req.headers }, (reply) => {
      const type = String(reply.headers['content-type']);
      const sse = type.startsWith('text/event-stream');
      if (req.method !== 'POST' || !(sse || type.startsWith('application/json'))) {
        res.writeHead(reply.statusCode ?? 502, reply.headers);
        return void reply.pipe(res);
      }
      const chunks: Buffer[] = [];
      reply.on('data', (chunk: Buffer) => chunks.push(chunk));
      reply.on('end', () => {
        bodies.push(sse ? 'sse' : 'json');
        const body = Buffer.concat(chunks).toString('utf8');
        const { 'content-length': _length, ...headers } = reply.headers;
        res.writeHead(reply.statusCode ?? 502, headers);
        res.end(
          sse ? body.replace(/^data: (.*)$/gm, (_, data: string) => `data: ${relaid(data)}`) : relaid(body),
        );
      });
    });
    forward.on('error', () => res.destroy());
    req.pipe(forward);
  });
  return { url: await listen(cleanups, server), lastSent: () => sent.at(-1), lastBody: () => bodies.at(-1) };
}

async function sidecarInFrontOf(url: string): Promise<URL> {
  const config = resolveConfig({
    http: { listen: '127.0.0.1:0' },
    upstream: { url, era: 'legacy' },
  });
  const gateway = await memoryGateway(config);
  cleanups.push(() => gateway.close());
  return gateway.url;
}

const LENGTH = 1_000_000;

describe('issue 33: a big answer of an HTTP upstream, through the sidecar', () => {
  const layouts = [
    ['as the TypeScript SDK lays it out (result first)', false],
    ['as the Python SDK lays it out (id first)', true],
  ] as const;
  const bodies = [
    ['on an SSE stream', false],
    ['as one JSON body', true],
  ] as const;
  for (const [layout, pythonLayout] of layouts) {
    for (const [body, jsonBody] of bodies) {
      it(`reaches the client as the server's bytes, scanned once, never JSON.parsed nor joined: ${body}, ${layout}`, async () => {
        if (jsonBody) {
          // The SDK's enableJsonResponse, read by http-serve.js as each upstream session starts.
          process.env['FIXTURE_JSON_RESPONSE'] = '1';
          cleanups.push(async () => void delete process.env['FIXTURE_JSON_RESPONSE']);
        }
        const upstream = await relay(await sdkServer(), pythonLayout);
        const url = await sidecarInFrontOf(upstream.url);
        const sessionId = await openSession(url);
        // Joins of the answer by taskgate: whether it was handed on as the pieces it was read in; bytes
        // taskgate scans: the answer once, its scan going with it from the transport to the session.
        const { value: answer, ...watch } = await watchBytes(LENGTH, async () => {
          return postTextCall(url, sessionId, 7, LENGTH);
        });
        expect(watch.parsedAnywhere).toBe(0);
        expect(watch.joins).toEqual([]);
        expect(watch.scannedBytes).toBeGreaterThan(LENGTH);
        expect(watch.scannedBytes).toBeLessThan(2 * LENGTH);
        expect(upstream.lastBody()).toBe(jsonBody ? 'json' : 'sse');
        expect(answer).toBe(upstream.lastSent());
        expect(answer.startsWith(pythonLayout ? '{"jsonrpc":"2.0","id":' : '{"result":')).toBe(true);
        const text = (JSON.parse(answer) as { result: { content: { text: string }[] } }).result.content[0]!
          .text;
        expect(text).toHaveLength(LENGTH);
      });
    }
  }

  /**
   * A hand-written server whose answer to every tools/call is `answer(id)`, in one SSE event or as one JSON
   * body; initialize answered as any server would.
   */
  async function answering(answer: (id: number) => string, sse: boolean): Promise<string> {
    const server = createServer((req, res) => {
      if (req.method === 'DELETE') return void res.writeHead(200).end();
      if (req.method !== 'POST') return void res.writeHead(405).end();
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const message = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id?: number; method: string };
        if (message.id === undefined) return void res.writeHead(202).end();
        const body =
          message.method === 'initialize'
            ? JSON.stringify({
                jsonrpc: '2.0',
                id: message.id,
                result: {
                  protocolVersion: '2025-11-25',
                  capabilities: { tools: {} },
                  serverInfo: { name: 'x', version: '1' },
                },
              })
            : answer(message.id);
        if (!sse) return void res.writeHead(200, { 'content-type': 'application/json' }).end(body);
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        // In two writes, as a big event comes in several reads.
        res.write(`event: message\ndata: ${body.slice(0, 1500)}`);
        setImmediate(() => res.end(`${body.slice(1500)}\n\n`));
      });
    });
    return listen(cleanups, server);
  }

  for (const [body, sse] of [
    ['on an SSE stream', true],
    ['as one JSON body', false],
  ] as const) {
    it(`fails a call at once whose big answer is not JSON, naming it: ${body}`, async () => {
      // A trailing comma: JSON.parse refuses it, and so must the scan.
      const broken = (id: number) => `{"jsonrpc":"2.0","id":${id},"result":{"text":"${'x'.repeat(4000)}",}}`;
      const url = await sidecarInFrontOf(await answering(broken, sse));
      const sessionId = await openSession(url);
      const call = { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'text', arguments: {} } };
      const response = await post(url, call, inSession(sessionId));
      expect(await response.json()).toMatchObject({
        jsonrpc: '2.0',
        id: 7,
        error: { message: 'The upstream server answered with a line that is not valid JSON' },
      });
    });
  }
});

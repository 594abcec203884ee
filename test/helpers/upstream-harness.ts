/**
 * taskgate's HttpUpstream driven directly with raw JSON-RPC messages, and the HTTP servers its tests put
 * between it and a fixture. What these open is closed by the `cleanups` given, in reverse order.
 */
import { once } from 'node:events';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { pino } from 'pino';
import type { RequestId } from '../../src/protocol/messages.js';
import type { Pieces } from '../../src/protocol/pieces.js';
import type { Scanned } from '../../src/protocol/scanned.js';
import { HttpUpstream, type HttpUpstreamOptions } from '../../src/transport/http-upstream.js';
import { Inbox } from './inbox.js';

export type Cleanups = (() => Promise<void>)[];

/** Runs and empties `cleanups`, the last added first. */
export async function runCleanups(cleanups: Cleanups): Promise<void> {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
}

const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }, pino.destination(2));

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- messages are checked field by field
export type Json = any;

export interface Received {
  message: Json;
  raw: Buffer;
  onStreamOf: RequestId | undefined;
  /** Handed in pieces, with their scan (ChannelHandlers.pieces), to a harness opened `takingPieces`. */
  pieces?: { line: Pieces; scanned: Scanned };
}

export const answerText = (received: Received): string => received.message.result.content[0].text;

/**
 * An HttpUpstream on `url`, started, with what it delivers collected; closed by `cleanups`. `takingPieces`:
 * its receiver takes messages in pieces, as a Session does.
 */
export function openUpstream(
  cleanups: Cleanups,
  url: string,
  options: Partial<HttpUpstreamOptions> = {},
  takingPieces = false,
) {
  const upstream = new HttpUpstream(
    { url, maxMessageBytes: 4 * 1024 * 1024, reconnectDelayMs: 50, ...options },
    logger,
  );
  const inbox = new Inbox<Received>();
  const malformed: { message: string; id: RequestId | null }[] = [];
  /** Final closures, and the ones the channel comes back from (`reopening`), by reason. */
  const closed = new Inbox<string>();
  const lost: string[] = [];
  const reopened = new Inbox<number>();
  upstream.start({
    message: (raw, arrival) =>
      inbox.push({ raw, message: JSON.parse(raw.toString('utf8')), onStreamOf: arrival?.onStreamOf }),
    ...(takingPieces && {
      pieces: (line: Pieces, scanned: Scanned, arrival?: { onStreamOf?: RequestId }) => {
        const raw = line.join();
        const message: unknown = JSON.parse(raw.toString('utf8'));
        inbox.push({ raw, message, onStreamOf: arrival?.onStreamOf, pieces: { line, scanned } });
      },
    }),
    malformed: (error, id) => malformed.push({ message: error.message, id }),
    closed: ({ reason, reopening }) => (reopening ? lost.push(reason) : closed.push(reason)),
    reopened: () => reopened.push(reopened.items.length + 1),
  });
  cleanups.push(() => upstream.close());
  let nextId = 1;
  const harness = {
    upstream,
    inbox,
    malformed,
    closed,
    lost,
    /** Resolves once the channel has reported being back `times` times in all. */
    reopened: (times = 1) => reopened.waitFor((n) => n === times, `reopened #${times}`),
    /** Sends the exact bytes of a message, as the session forwards a client's. */
    send(message: object): void {
      upstream.sendRaw(Buffer.from(JSON.stringify(message)));
    },
    request(method: string, params: object = {}): number {
      const id = nextId++;
      harness.send({ jsonrpc: '2.0', id, method, params });
      return id;
    },
    call(name: string, args: object = {}, meta?: object): number {
      return harness.request('tools/call', { name, arguments: args, ...(meta ? { _meta: meta } : {}) });
    },
    answer(id: RequestId, timeoutMs?: number): Promise<Received> {
      return inbox.waitFor(
        (r) => r.message.id === id && !('method' in r.message),
        `the answer to ${id}`,
        timeoutMs,
      );
    },
    answersTo(id: RequestId): Received[] {
      return inbox.items.filter((r) => r.message.id === id && !('method' in r.message));
    },
    async initialize(capabilities: object = {}): Promise<Received> {
      const id = harness.request('initialize', {
        protocolVersion: '2025-11-25',
        capabilities,
        clientInfo: { name: 'http-upstream-test', version: '1.0.0' },
      });
      const answer = await harness.answer(id);
      harness.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      return answer;
    },
  };
  return harness;
}

/** Starts `server` on a free loopback port; its MCP URL. Closed, with its connections, by `cleanups`. */
export async function listen(cleanups: Cleanups, server: Server): Promise<string> {
  const sockets = new Set<Socket>();
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  cleanups.push(async () => {
    for (const socket of sockets) socket.destroy();
    server.close();
    await once(server, 'close');
  });
  const address = server.address();
  return `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}/mcp`;
}

/**
 * An HTTP proxy in front of a server that, when told to, cuts the next SSE response to a POST after that
 * many events: both sockets are destroyed, as a network failure would. Records the Last-Event-ID of the
 * GETs that resume a stream.
 */
export async function cuttingProxy(cleanups: Cleanups, target: string) {
  let cutAfter: number | undefined;
  const resumedFrom: string[] = [];
  const server = createServer((req, res) => {
    const lastEventId = req.headers['last-event-id'];
    if (typeof lastEventId === 'string') resumedFrom.push(lastEventId);
    const forward = httpRequest(target, { method: req.method, headers: req.headers }, (reply) => {
      res.writeHead(reply.statusCode ?? 502, reply.headers).flushHeaders();
      const sse =
        req.method === 'POST' && String(reply.headers['content-type']).startsWith('text/event-stream');
      let cut = sse ? cutAfter : undefined;
      if (cut !== undefined) cutAfter = undefined;
      let seen = '';
      reply.on('data', (chunk: Buffer) => {
        if (cut === undefined) return void res.write(chunk);
        seen += chunk.toString('utf8');
        const events = seen.split('\n\n').length - 1;
        if (events < cut) return void res.write(chunk);
        cut = undefined;
        res.write(chunk, () => {
          res.socket?.destroy();
          reply.destroy();
        });
      });
      reply.on('end', () => res.end());
      reply.on('error', () => res.destroy());
    });
    forward.on('error', () => res.destroy());
    req.pipe(forward);
  });
  const url = await listen(cleanups, server);
  return {
    url,
    resumedFrom,
    cutNextStreamAfter(events: number): void {
      cutAfter = events;
    },
  };
}

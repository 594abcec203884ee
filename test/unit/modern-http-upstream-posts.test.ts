/**
 * The POSTs a 2026-07-28 HTTP upstream has open (issue 28: on the correlation engine): a cancellation
 * aborts the POST of the request it names — the first of two sent with one id, then the other — and a POST
 * that ends takes out only its own entry, so a later cancellation still finds the one left; closing aborts
 * every POST whose stream is still open, answered or not. Against a server written here on node:http that
 * holds each POST open until told, and says when taskgate's side of one closed. Each upstream is given
 * keep-alive connections it shares (as the proxy gives them), so its close destroys no connection: only its
 * own aborts end a POST.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { OriginConnections } from '../../src/transport/http-wire.js';
import { ModernHttpUpstream } from '../../src/transport/modern-http-upstream.js';
import { Inbox } from '../helpers/inbox.js';

interface Held {
  id: unknown;
  name: string;
  response: ServerResponse;
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A server that holds every POST; `held` as each arrives, `closed` (its tool's name) as taskgate's side goes. */
async function holdingServer(): Promise<{ url: string; held: Inbox<Held>; closed: Inbox<string> }> {
  const held = new Inbox<Held>();
  const closed = new Inbox<string>();
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const message = JSON.parse(Buffer.concat(chunks).toString()) as {
        id: unknown;
        params: { name: string };
      };
      const name = message.params.name;
      response.on('close', () => {
        if (!response.writableFinished) closed.push(name);
      });
      held.push({ id: message.id, name, response });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, held, closed };
}

/** The upstream, started, with what it hands on; its connections shared, closed after it as the gateway does. */
function upstreamAt(url: string): { upstream: ModernHttpUpstream; heard: Inbox<Record<string, unknown>> } {
  const connections = new OriginConnections();
  cleanups.push(() => connections.close());
  const upstream = new ModernHttpUpstream(
    { url, maxMessageBytes: 1 << 20, connections },
    pino({ level: 'silent' }),
  );
  const heard = new Inbox<Record<string, unknown>>();
  upstream.start({
    message: (raw) => heard.push(JSON.parse(raw.toString()) as Record<string, unknown>),
    malformed: () => undefined,
    closed: () => undefined,
  });
  cleanups.push(() => upstream.close());
  return { upstream, heard };
}

const call = (id: string | number, name: string) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: {}, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } },
});

const cancelled = (requestId: string | number) => ({
  jsonrpc: '2.0',
  method: 'notifications/cancelled',
  params: { requestId, reason: 'no longer wanted' },
});

describe('a 2026-07-28 HTTP upstream: the POSTs it has open, on the correlation engine', () => {
  it('aborts, for each cancellation of an id two requests in flight were sent with, one POST: the first, then the other', async () => {
    const { url, held, closed } = await holdingServer();
    const { upstream, heard } = upstreamAt(url);
    upstream.send(call(7, 'first'));
    await held.waitFor((post) => post.name === 'first', 'the first POST');
    upstream.send(call(7, 'second'));
    await held.waitFor((post) => post.name === 'second', 'the second POST');

    upstream.send(cancelled(7));
    await closed.waitFor((name) => name === 'first', 'the first POST aborted');
    expect(closed.items).toEqual(['first']);
    upstream.send(cancelled(7));
    await closed.waitFor((name) => name === 'second', 'the second POST aborted');
    expect(closed.items).toEqual(['first', 'second']);
    // Whoever cancelled answers for it: nothing is made up here.
    expect(heard.items).toEqual([]);
  });

  it('still aborts the second of two requests sent with one id once the first is answered', async () => {
    const { url, held, closed } = await holdingServer();
    const { upstream, heard } = upstreamAt(url);
    upstream.send(call('same', 'first'));
    const first = await held.waitFor((post) => post.name === 'first', 'the first POST');
    upstream.send(call('same', 'second'));
    await held.waitFor((post) => post.name === 'second', 'the second POST');
    first.response.writeHead(200, { 'content-type': 'application/json' });
    first.response.end(
      JSON.stringify({ jsonrpc: '2.0', id: 'same', result: { content: [], resultType: 'complete' } }),
    );
    await heard.waitFor((message) => message.id === 'same', "the first's answer");

    upstream.send(cancelled('same'));
    await closed.waitFor((name) => name === 'second', 'the second POST aborted');
    expect(closed.items).toEqual(['second']);
  });

  it("gives a cancelled request's id, sent again at once, to the new POST: the cancelled one's end does not take it out", async () => {
    const { url, held, closed } = await holdingServer();
    const { upstream } = upstreamAt(url);
    upstream.send(call(7, 'first'));
    await held.waitFor((post) => post.name === 'first', 'the first POST');
    upstream.send(cancelled(7));
    upstream.send(call(7, 'again'));
    await held.waitFor((post) => post.name === 'again', 'the POST of the id sent again');
    await closed.waitFor((name) => name === 'first', 'the first POST aborted');

    upstream.send(cancelled(7));
    await closed.waitFor((name) => name === 'again', 'the POST of the id sent again aborted');
    expect(closed.items).toEqual(['first', 'again']);
  });

  it('aborts every open POST when it closes (the peer gone), answering none of them itself', async () => {
    const { url, held, closed } = await holdingServer();
    const { upstream, heard } = upstreamAt(url);
    upstream.send(call(1, 'one'));
    upstream.send(call(2, 'two'));
    await held.waitFor((post) => post.name === 'one', 'the first POST');
    await held.waitFor((post) => post.name === 'two', 'the second POST');
    await upstream.close();
    await closed.waitFor((name) => name === 'one', 'POST one aborted');
    await closed.waitFor((name) => name === 'two', 'POST two aborted');
    expect(heard.items).toEqual([]);
  });

  it('aborts, when it closes, the stream of a POST already answered that the server keeps open', async () => {
    const { url, held, closed } = await holdingServer();
    const { upstream, heard } = upstreamAt(url);
    upstream.send(call(1, 'kept'));
    const post = await held.waitFor((each) => each.name === 'kept', 'the POST');
    post.response.writeHead(200, { 'content-type': 'text/event-stream' });
    const answer = { jsonrpc: '2.0', id: 1, result: { content: [], resultType: 'complete' } };
    post.response.write(`event: message\ndata: ${JSON.stringify(answer)}\n\n`);
    await heard.waitFor((message) => message.id === 1, 'the answer');
    // The spec says the server SHOULD close the stream after the answer, not MUST.
    post.response.write(': keepalive\n\n');

    await upstream.close();
    await closed.waitFor((name) => name === 'kept', 'the answered POST aborted');
    expect(heard.items).toEqual([answer]);
  });
});

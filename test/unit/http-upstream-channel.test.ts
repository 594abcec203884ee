/**
 * taskgate's Streamable HTTP upstream channel (HttpUpstream), driven directly with raw JSON-RPC messages
 * against the test fixtures' SDK servers over real sockets, served from this process (the SDK's
 * StreamableHTTPServerTransport, one server per session, as a fixture's `--http` mode). What needs the
 * server to be a process of its own (killed, restarted on its port, configured by its environment) is in
 * test/integration/http-upstream.test.ts. Spec clauses are from MCP 2025-11-25, basic/transports.
 */
import { createServer, request as httpRequest } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../../src/protocol/errors.js';
import { createLegacyServer } from '../fixtures/legacy-fixture.js';
import { createNativeServer } from '../fixtures/native-fixture.js';
import { serveInProcess, type InProcessHttpServer } from '../helpers/in-process-http.js';
import { freePort } from '../helpers/ports.js';
import {
  answerText,
  cuttingProxy as proxyCutting,
  listen as listenOn,
  openUpstream,
  runCleanups,
  type Cleanups,
} from '../helpers/upstream-harness.js';

const cleanups: Cleanups = [];
afterEach(() => runCleanups(cleanups));
const open = (url: string, options?: Parameters<typeof openUpstream>[2]) =>
  openUpstream(cleanups, url, options);
const listen = (server: Parameters<typeof listenOn>[1]): Promise<string> => listenOn(cleanups, server);
const cuttingProxy = (target: string) => proxyCutting(cleanups, target);

async function served(
  makeServer: Parameters<typeof serveInProcess>[0],
  label: string,
): Promise<InProcessHttpServer> {
  const server = await serveInProcess(makeServer, label);
  cleanups.push(() => server.close());
  return server;
}
const legacyServer = () => served(() => createLegacyServer(), 'legacy-fixture');
const nativeServer = () => served(() => createNativeServer(), 'native-fixture');

describe('HttpUpstream against the SDK’s Streamable HTTP server, in process', () => {
  it('initializes, keeps the session id the server assigned, and answers on the request’s stream', async () => {
    const server = await legacyServer();
    const h = open(server.url);
    const init = await h.initialize();
    expect(init.message.result.protocolVersion).toBe('2025-11-25');
    expect(init.onStreamOf).toBe(1);
    // Session management: the server assigns the id on the response carrying the InitializeResult.
    expect(h.upstream.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    const id = h.call('echo', { text: 'over SSE' });
    const answer = await h.answer(id);
    expect(answerText(answer)).toBe('over SSE');
    expect(answer.onStreamOf).toBe(id);
  });

  it('delivers progress notifications with the request whose stream carried them', async () => {
    const server = await legacyServer();
    const h = open(server.url);
    await h.initialize();
    const id = h.call('progress', { steps: 3, intervalMs: 5 }, { progressToken: 'p1' });
    const answer = await h.answer(id);
    expect(answerText(answer)).toBe('done 3 steps');
    const progress = h.inbox.items.filter((r) => r.message.method === 'notifications/progress');
    expect(progress.map((r) => r.message.params.progress)).toEqual([1, 2, 3]);
    expect(progress.every((r) => r.onStreamOf === id)).toBe(true);
  });

  it('delivers an elicitation made during a call on that call’s stream, and POSTs the answer back', async () => {
    const server = await legacyServer();
    const h = open(server.url);
    await h.initialize({ elicitation: { form: {} } });
    const id = h.call('elicit', { message: 'What is the answer?' });
    const elicitation = await h.inbox.waitFor(
      (r) => r.message.method === 'elicitation/create',
      'elicitation',
    );
    expect(elicitation.onStreamOf).toBe(id);
    expect(elicitation.message.params.message).toBe('What is the answer?');
    // Through send() this time: the path the session takes for messages it rewrote.
    h.upstream.send({
      jsonrpc: '2.0',
      id: elicitation.message.id,
      result: { action: 'accept', content: { answer: '42' } },
    });
    const answer = await h.answer(id);
    expect(JSON.parse(answerText(answer))).toEqual({ action: 'accept', content: { answer: '42' } });
  });

  it('opens the standalone GET stream after initialized, and delivers what belongs to no request', async () => {
    const server = await nativeServer();
    const h = open(server.url);
    await h.initialize();
    expect(await h.upstream.standaloneStream()).toBe(true);
    const id = h.call('announce', { text: 'hello, everyone' });
    const log = await h.inbox.waitFor((r) => r.message.method === 'notifications/message', 'the log message');
    expect(log.message.params.data).toBe('hello, everyone');
    expect(log.onStreamOf).toBeUndefined();
    expect(answerText(await h.answer(id))).toBe('announced');
  });

  it('answers an HTTP error with the server’s own JSON-RPC error, for that request id', async () => {
    const server = await legacyServer();
    const h = open(server.url.replace(/\/mcp$/, '/elsewhere'));
    const id = h.request('initialize', {
      protocolVersion: '2025-11-25',
      capabilities: {},
      clientInfo: { name: 't', version: '1' },
    });
    const answer = await h.answer(id);
    expect(answer.message).toEqual({
      jsonrpc: '2.0',
      id,
      error: { code: -32600, message: 'No MCP endpoint at /elsewhere' },
    });
  });

  it('answers an HTTP error without a JSON-RPC body with an error naming the status', async () => {
    const plain = createServer((_req, res) =>
      res.writeHead(503, { 'content-type': 'text/plain' }).end('down'),
    );
    const url = await listen(plain);
    const h = open(url);
    const id = h.call('echo', { text: 'x' });
    const answer = await h.answer(id);
    expect(answer.message.error.code).toBe(ErrorCode.UpstreamUnavailable);
    expect(answer.message.error.message).toBe(
      'Upstream server answered tools/call with HTTP 503 Service Unavailable',
    );
  });

  it('answers with UpstreamUnavailable when nothing listens, and does not close the channel', async () => {
    const h = open(`http://127.0.0.1:${await freePort()}/mcp`);
    const id = h.call('echo', { text: 'x' });
    const answer = await h.answer(id);
    expect(answer.message.error).toEqual({
      code: ErrorCode.UpstreamUnavailable,
      message: 'Upstream server unavailable: connection refused (ECONNREFUSED)',
    });
    expect(h.closed.items).toEqual([]);
  });

  it('bounds only initialize itself: a quiet request waits for its answer until its sender cancels it', async () => {
    const server = await legacyServer();
    const h = open(server.url, { handshakeTimeoutMs: 300 });
    await h.initialize();
    // The session holds the one deadline (upstream.requestTimeout, or a task's ttl for a task's call).
    const id = h.call('sleep', { ms: 600 });
    expect(answerText(await h.answer(id))).toBe('slept 600 ms');
  });

  it('owes no answer to a request the session cancelled, and lets its stream go', async () => {
    const server = await legacyServer();
    const h = open(server.url);
    await h.initialize({ elicitation: { form: {} } });
    const id = h.call('elicit', { message: 'never answered' });
    await h.inbox.waitFor((r) => r.message.method === 'elicitation/create', 'the call to be running');
    h.send({
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId: id, reason: 'changed my mind' },
    });
    await h.answer(h.call('echo', { text: 'after the cancel' }));
    expect(h.answersTo(id)).toEqual([]);
  });

  it('holds a cancel sent right behind its request until the server has the request', async () => {
    const server = await legacyServer();
    const h = open(server.url);
    await h.initialize();
    for (const label of ['first', 'second', 'third']) {
      const id = h.call('sleep', { ms: 30_000, label });
      h.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id } });
    }
    // Cancels may still be on their way when the next request is answered: ask until they arrived (bounded).
    // The fixture's list is its module's, so it also holds what other in-process servers of this worker saw.
    const ours = (labels: string[]) => labels.filter((label) => ['first', 'second', 'third'].includes(label));
    let cancelled: string[] = [];
    for (let attempt = 0; attempt < 50 && cancelled.length < 3; attempt++) {
      cancelled = ours(JSON.parse(answerText(await h.answer(h.call('cancelled-calls')))) as string[]);
    }
    expect(cancelled.sort()).toEqual(['first', 'second', 'third']);
  });

  it('reports a message over max-message-bytes as malformed, with its request id, and goes on', async () => {
    const server = await legacyServer();
    const h = open(server.url, { maxMessageBytes: 10_000 });
    await h.initialize();
    const id = h.call('large', { bytes: 50_000 });
    await expect.poll(() => h.malformed).toHaveLength(1);
    expect(h.malformed[0]!.id).toBe(id);
    expect(h.malformed[0]!.message).toMatch(/exceeds the limit of 10000 bytes/);
    expect(answerText(await h.answer(h.call('echo', { text: 'small' })))).toBe('small');
    expect(h.answersTo(id)).toEqual([]);
  });

  it('resumes a dropped SSE stream with Last-Event-ID and delivers every message exactly once', async () => {
    const server = await legacyServer();
    const proxy = await cuttingProxy(server.url);
    const h = open(proxy.url);
    await h.initialize();
    // The priming event, then one progress notification, then the connection is cut.
    proxy.cutNextStreamAfter(2);
    const id = h.call('progress', { steps: 5, intervalMs: 40 }, { progressToken: 'resumed' });
    expect(answerText(await h.answer(id))).toBe('done 5 steps');
    expect(proxy.resumedFrom).toHaveLength(1);
    const progress = h.inbox.items.filter((r) => r.message.params?.progressToken === 'resumed');
    expect(progress.map((r) => r.message.params.progress)).toEqual([1, 2, 3, 4, 5]);
    expect(progress.every((r) => r.onStreamOf === id)).toBe(true);
    // One more round trip, then count: the answer came once.
    await h.answer(h.call('echo', { text: 'after' }));
    expect(h.answersTo(id)).toHaveLength(1);
  });

  it('when the server ends the session: reports it lost and back, as a restarted child, and goes on', async () => {
    const server = await legacyServer();
    const h = open(server.url);
    await h.initialize();
    const oldSession = h.upstream.sessionId!;
    const inFlight = h.call('progress', { steps: 1_000, intervalMs: 20 }, { progressToken: 'cut-off' });
    await h.inbox.waitFor((r) => r.message.method === 'notifications/progress', 'the call to be running');
    const ended = await fetch(server.url, {
      method: 'DELETE',
      headers: { 'mcp-session-id': oldSession, 'mcp-protocol-version': '2025-11-25' },
    });
    expect(ended.status).toBe(200);
    await h.reopened();
    expect(h.lost).toEqual(['the upstream server ended its session (HTTP 404)']);
    // What was in flight is the session's to answer, as for a child that exited: the channel says nothing.
    expect(h.answersTo(inFlight)).toEqual([]);
    const after = await h.answer(h.call('echo', { text: 'new session' }));
    expect(answerText(after)).toBe('new session');
    expect(h.answersTo(inFlight)).toEqual([]);
    expect(h.upstream.sessionId).toBeDefined();
    expect(h.upstream.sessionId).not.toBe(oldSession);
    // The new session's initialize result stayed inside the channel.
    expect(h.inbox.items.filter((r) => r.message.result?.protocolVersion !== undefined)).toHaveLength(1);
    expect(await h.upstream.standaloneStream()).toBe(true);
    expect(h.closed.items).toEqual([]);
  });

  it('tries a new session again while it cannot be started, and is back by itself once it can', async () => {
    const server = await legacyServer();
    let refusals = 0;
    // In front of the server: answers 503 to an initialize (a POST without a session id) while told to.
    const gate = createServer((req, res) => {
      if (req.method === 'POST' && req.headers['mcp-session-id'] === undefined && refusals > 0) {
        refusals--;
        req.resume();
        return void res.writeHead(503).end();
      }
      const forward = httpRequest(server.url, { method: req.method, headers: req.headers }, (reply) => {
        res.writeHead(reply.statusCode ?? 502, reply.headers).flushHeaders();
        reply.pipe(res);
      });
      req.pipe(forward);
    });
    const h = open(await listen(gate));
    await h.initialize();
    expect(await h.upstream.standaloneStream()).toBe(true);
    refusals = 3;
    await server.endSessions();
    // Nothing is sent meanwhile: the channel comes back by itself, as a restarted child does.
    await h.reopened();
    expect(refusals).toBe(0);
    expect(h.lost).toEqual(['the upstream server ended its session (HTTP 404)']);
    expect(answerText(await h.answer(h.call('echo', { text: 'back' })))).toBe('back');
  });

  it('does not spin on a server that forgets every session at once: the next new session waits', async () => {
    const server = await legacyServer();
    let initializes = 0;
    // In front of the server: every standalone GET is told the session is gone (404).
    const gate = createServer((req, res) => {
      if (req.method === 'GET') return void res.writeHead(404).end();
      if (req.headers['mcp-session-id'] === undefined) initializes++;
      const forward = httpRequest(server.url, { method: req.method, headers: req.headers }, (reply) => {
        res.writeHead(reply.statusCode ?? 502, reply.headers).flushHeaders();
        reply.pipe(res);
      });
      req.pipe(forward);
    });
    const h = open(await listen(gate), { reconnectDelayMs: 1_000, reconnectMaxDelayMs: 1_000 });
    await h.initialize();
    // The first loss is renewed at once; the next, lost before it answered anything, waits.
    await h.reopened(1);
    const firstBack = performance.now();
    await h.reopened(2);
    expect(performance.now() - firstBack).toBeGreaterThanOrEqual(1_000);
    expect(initializes).toBe(3);
  });

  it('close() ends the upstream session with DELETE, does not report it back, and is safe to call twice', async () => {
    const server = await legacyServer();
    const h = open(server.url);
    await h.initialize();
    const session = h.upstream.sessionId!;
    await Promise.all([h.upstream.close(), h.upstream.close()]);
    await h.upstream.close();
    const probe = await fetch(server.url, {
      method: 'POST',
      headers: {
        'mcp-session-id': session,
        accept: 'application/json, text/event-stream',
        'content-type': 'application/json',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    expect(probe.status).toBe(404);
    // The owner's own close is not told back to it (the Channel contract): checked after a real round
    // trip, so a report that comes late is caught too.
    expect(h.closed.items).toEqual([]);
  });

  it('sends the static headers, and the session id and protocol version after initialize', async () => {
    const seen: { method: string; key: unknown; session: unknown; version: unknown }[] = [];
    const server = await legacyServer();
    const recorder = createServer((req, res) => {
      seen.push({
        method: req.method!,
        key: req.headers['x-api-key'],
        session: req.headers['mcp-session-id'],
        version: req.headers['mcp-protocol-version'],
      });
      const forward = httpRequest(server.url, { method: req.method, headers: req.headers }, (reply) => {
        // Node holds headers until the first body write: an SSE stream's must go at once.
        res.writeHead(reply.statusCode ?? 502, reply.headers).flushHeaders();
        reply.pipe(res);
      });
      req.pipe(forward);
    });
    const h = open(await listen(recorder), { headers: { 'X-Api-Key': 'secret' } });
    await h.initialize();
    await h.upstream.standaloneStream();
    await h.answer(h.call('echo', { text: 'x' }));
    const session = h.upstream.sessionId;
    // initialize, notifications/initialized, the standalone GET, tools/call
    expect(seen.map((request) => request.method).sort()).toEqual(['GET', 'POST', 'POST', 'POST']);
    expect(seen.every((request) => request.key === 'secret')).toBe(true);
    expect(seen[0]).toEqual({ method: 'POST', key: 'secret', session: undefined, version: undefined });
    for (const request of seen.slice(1)) {
      expect(request).toMatchObject({ session, version: '2025-11-25' });
    }
  });
});

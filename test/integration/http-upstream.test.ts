/**
 * The Streamable HTTP upstream channel, driven directly with raw JSON-RPC messages against real servers on
 * real sockets: the fixtures in `--http` mode (the SDK's StreamableHTTPServerTransport) and
 * server-everything. Spec clauses are from MCP 2025-11-25, basic/transports (Streamable HTTP).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../../src/protocol/errors.js';
import type { RequestId } from '../../src/protocol/messages.js';
import { HttpUpstream, type HttpUpstreamOptions } from '../../src/transport/http-upstream.js';
import { startHttpFixture, type HttpFixture } from '../helpers/http-fixture.js';
import { freePort } from '../helpers/ports.js';
import { Inbox } from '../helpers/inbox.js';
import { FIXTURES, RawPeer } from '../helpers/taskgate.js';

const EVERYTHING = fileURLToPath(
  new URL('../../node_modules/@modelcontextprotocol/server-everything/dist/index.js', import.meta.url),
);
const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }, pino.destination(2));

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- messages are checked field by field
type Json = any;

interface Received {
  message: Json;
  raw: Buffer;
  onStreamOf: RequestId | undefined;
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function fixture(...args: Parameters<typeof startHttpFixture>): Promise<HttpFixture> {
  const started = await startHttpFixture(...args);
  cleanups.push(() => started.stop());
  return started;
}

function open(url: string, options: Partial<HttpUpstreamOptions> = {}) {
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

const text = (received: Received): string => received.message.result.content[0].text;

describe('HttpUpstream against the SDK’s Streamable HTTP server', () => {
  it('initializes, keeps the session id the server assigned, and answers on the request’s stream', async () => {
    const server = await fixture('legacy');
    const h = open(server.url);
    const init = await h.initialize();
    expect(init.message.result.protocolVersion).toBe('2025-11-25');
    expect(init.onStreamOf).toBe(1);
    // Session management: the server assigns the id on the response carrying the InitializeResult.
    expect(h.upstream.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    const id = h.call('echo', { text: 'over SSE' });
    const answer = await h.answer(id);
    expect(text(answer)).toBe('over SSE');
    expect(answer.onStreamOf).toBe(id);
  });

  it('takes an answer as one JSON body (Content-Type: application/json)', async () => {
    const server = await fixture('legacy', { env: { FIXTURE_JSON_RESPONSE: '1' } });
    const h = open(server.url);
    await h.initialize();
    const id = h.call('echo', { text: 'over JSON' });
    const answer = await h.answer(id);
    expect(text(answer)).toBe('over JSON');
    expect(answer.onStreamOf).toBe(id);
  });

  it('delivers progress notifications with the request whose stream carried them', async () => {
    const server = await fixture('legacy');
    const h = open(server.url);
    await h.initialize();
    const id = h.call('progress', { steps: 3, intervalMs: 5 }, { progressToken: 'p1' });
    const answer = await h.answer(id);
    expect(text(answer)).toBe('done 3 steps');
    const progress = h.inbox.items.filter((r) => r.message.method === 'notifications/progress');
    expect(progress.map((r) => r.message.params.progress)).toEqual([1, 2, 3]);
    expect(progress.every((r) => r.onStreamOf === id)).toBe(true);
  });

  it('delivers an elicitation made during a call on that call’s stream, and POSTs the answer back', async () => {
    const server = await fixture('legacy');
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
    expect(JSON.parse(text(answer))).toEqual({ action: 'accept', content: { answer: '42' } });
  });

  it('opens the standalone GET stream after initialized, and delivers what belongs to no request', async () => {
    const server = await fixture('native');
    const h = open(server.url);
    await h.initialize();
    expect(await h.upstream.standaloneStream()).toBe(true);
    const id = h.call('announce', { text: 'hello, everyone' });
    const log = await h.inbox.waitFor((r) => r.message.method === 'notifications/message', 'the log message');
    expect(log.message.params.data).toBe('hello, everyone');
    expect(log.onStreamOf).toBeUndefined();
    expect(text(await h.answer(id))).toBe('announced');
  });

  it('answers an HTTP error with the server’s own JSON-RPC error, for that request id', async () => {
    const server = await fixture('legacy');
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

  it('sends a request that only reads once more when its connection breaks unanswered', async () => {
    const server = await fixture('legacy', { env: { FIXTURE_DROP_FIRST: 'tools/list' } });
    const h = open(server.url);
    await h.initialize();
    const answer = await h.answer(h.request('tools/list'));
    expect(answer.message.result.tools.map((tool: { name: string }) => tool.name)).toContain('echo');
    expect(server.stderr()).toContain('dropping the connection under tools/list');
  });

  it('never sends a tools/call twice: its connection breaking unanswered fails it', async () => {
    const server = await fixture('legacy', { env: { FIXTURE_DROP_FIRST: 'tools/call' } });
    const h = open(server.url);
    await h.initialize();
    const id = h.call('echo', { text: 'once at most' });
    expect((await h.answer(id)).message.error).toEqual({
      code: ErrorCode.UpstreamUnavailable,
      message: expect.stringMatching(/^Upstream server unavailable: connection (lost|reset)/),
    });
    // The next call goes through: only the first was dropped, and it was not sent again.
    expect(text(await h.answer(h.call('echo', { text: 'next' })))).toBe('next');
    expect(h.answersTo(id)).toHaveLength(1);
  });

  it('bounds only initialize itself: a quiet request waits for its answer until its sender cancels it', async () => {
    const server = await fixture('legacy');
    const h = open(server.url, { handshakeTimeoutMs: 300 });
    await h.initialize();
    // The session holds the one deadline (upstream.requestTimeout, or a task's ttl for a task's call).
    const id = h.call('sleep', { ms: 1_000 });
    expect(text(await h.answer(id))).toBe('slept 1000 ms');
  });

  it('owes no answer to a request the session cancelled, and lets its stream go', async () => {
    const server = await fixture('legacy');
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
    const server = await fixture('legacy');
    const h = open(server.url);
    await h.initialize();
    for (const label of ['first', 'second', 'third']) {
      const id = h.call('sleep', { ms: 30_000, label });
      h.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id } });
    }
    // Cancels may still be on their way when the next request is answered: ask until they arrived (bounded).
    let cancelled: string[] = [];
    for (let attempt = 0; attempt < 50 && cancelled.length < 3; attempt++) {
      cancelled = JSON.parse(text(await h.answer(h.call('cancelled-calls'))));
    }
    expect(cancelled.sort()).toEqual(['first', 'second', 'third']);
  });

  it('reports a message over max-message-bytes as malformed, with its request id, and goes on', async () => {
    const server = await fixture('legacy');
    const h = open(server.url, { maxMessageBytes: 10_000 });
    await h.initialize();
    const id = h.call('large', { bytes: 50_000 });
    await expect.poll(() => h.malformed).toHaveLength(1);
    expect(h.malformed[0]!.id).toBe(id);
    expect(h.malformed[0]!.message).toMatch(/exceeds the limit of 10000 bytes/);
    expect(text(await h.answer(h.call('echo', { text: 'small' })))).toBe('small');
    expect(h.answersTo(id)).toEqual([]);
  });

  it('fails the pending request when the server dies mid-call, and nothing hangs', async () => {
    const server = await fixture('legacy');
    const h = open(server.url);
    await h.initialize();
    const id = h.call('progress', { steps: 1_000, intervalMs: 20 }, { progressToken: 'doomed' });
    await h.inbox.waitFor((r) => r.message.method === 'notifications/progress', 'the call to be running');
    await server.stop('SIGKILL');
    const answer = await h.answer(id);
    expect(answer.message.error.code).toBe(ErrorCode.UpstreamUnavailable);
    expect(answer.message.error.message).toMatch(
      /^Upstream server unavailable: the stream carrying the answer to tools\/call was lost \(.+\) and resuming it failed$/,
    );
    expect(answer.onStreamOf).toBe(id);
    // A request sent while it is down fails at once, with the same code.
    const later = await h.answer(h.call('echo', { text: 'anyone?' }));
    expect(later.message.error.code).toBe(ErrorCode.UpstreamUnavailable);
    expect(h.closed.items).toEqual([]);
  });

  it('resumes a dropped SSE stream with Last-Event-ID and delivers every message exactly once', async () => {
    const server = await fixture('legacy');
    const proxy = await cuttingProxy(server.url);
    const h = open(proxy.url);
    await h.initialize();
    // The priming event, then one progress notification, then the connection is cut.
    proxy.cutNextStreamAfter(2);
    const id = h.call('progress', { steps: 5, intervalMs: 40 }, { progressToken: 'resumed' });
    expect(text(await h.answer(id))).toBe('done 5 steps');
    expect(proxy.resumedFrom).toHaveLength(1);
    const progress = h.inbox.items.filter((r) => r.message.params?.progressToken === 'resumed');
    expect(progress.map((r) => r.message.params.progress)).toEqual([1, 2, 3, 4, 5]);
    expect(progress.every((r) => r.onStreamOf === id)).toBe(true);
    // One more round trip, then count: the answer came once.
    await h.answer(h.call('echo', { text: 'after' }));
    expect(h.answersTo(id)).toHaveLength(1);
  });

  describe('issue 34.2: a resumption that brings nothing back for its request', () => {
    // The server switches the request to polling (closes its stream, `retry: 100`), answers while no
    // stream is open and keeps nothing to replay: the GET resuming it stays open and quiet for ever.
    it('fails a tools/call within upstream.resumeTimeout with an error saying so, and goes on', async () => {
      const server = await fixture('polling');
      const h = open(server.url, { resumeTimeoutMs: 400 });
      await h.initialize();
      const id = h.call('reconnect');
      const answer = await h.answer(id, 4_000);
      expect(answer.message.error).toEqual({
        code: ErrorCode.UpstreamUnavailable,
        message:
          'Upstream server unavailable: the stream carrying the answer to tools/call was lost and resuming it brought nothing back within 400 ms',
      });
      expect(answer.onStreamOf).toBe(id);
      expect(text(await h.answer(h.call('echo')))).toBe('echo answered');
      expect(h.answersTo(id)).toHaveLength(1);
      expect(h.closed.items).toEqual([]);
    });

    it('sends a request that only reads once more, and delivers the answer to that', async () => {
      const server = await fixture('polling');
      const h = open(server.url, { resumeTimeoutMs: 400 });
      await h.initialize();
      const id = h.request('resources/read', { uri: 'poll://once' });
      const answer = await h.answer(id, 4_000);
      expect(answer.message.result.contents).toEqual([{ uri: 'poll://once', text: 'read 2' }]);
      await h.answer(h.call('echo'));
      expect(h.answersTo(id)).toHaveLength(1);
    });
  });

  it('when the server ends the session: reports it lost and back, as a restarted child, and goes on', async () => {
    const server = await fixture('legacy');
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
    expect(text(after)).toBe('new session');
    expect(h.answersTo(inFlight)).toEqual([]);
    expect(h.upstream.sessionId).toBeDefined();
    expect(h.upstream.sessionId).not.toBe(oldSession);
    // The new session's initialize result stayed inside the channel.
    expect(h.inbox.items.filter((r) => r.message.result?.protocolVersion !== undefined)).toHaveLength(1);
    expect(await h.upstream.standaloneStream()).toBe(true);
    expect(h.closed.items).toEqual([]);
  });

  it('after a server restart on the same port, starts a new session and serves in it', async () => {
    const first = await fixture('legacy');
    const h = open(first.url);
    await h.initialize();
    expect(await h.upstream.standaloneStream()).toBe(true);
    const oldSession = h.upstream.sessionId;
    await first.stop('SIGTERM');
    const second = await fixture('legacy', { port: first.port });
    expect(second.url).toBe(first.url);
    // The standalone stream finds the session gone (404) once it reconnects.
    await h.reopened();
    const answer = await h.answer(h.call('echo', { text: 'still here' }), 15_000);
    expect(text(answer)).toBe('still here');
    expect(h.upstream.sessionId).not.toBe(oldSession);
    expect(h.inbox.items.filter((r) => r.message.result?.protocolVersion !== undefined)).toHaveLength(1);
  });

  it('tries a new session again while it cannot be started, and is back by itself once it can', async () => {
    const server = await fixture('legacy');
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
    expect(text(await h.answer(h.call('echo', { text: 'back' })))).toBe('back');
  });

  it('does not spin on a server that forgets every session at once: the next new session waits', async () => {
    const server = await fixture('legacy');
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

  it('is not let back when the new session answers initialize differently, and says why', async () => {
    const first = await fixture('legacy');
    const h = open(first.url);
    await h.initialize();
    expect(await h.upstream.standaloneStream()).toBe(true);
    await first.stop('SIGTERM');
    // Another server on the same address: it has tasks, the first had none.
    await fixture('native', { port: first.port });
    const reason = await h.closed.waitFor(() => true, 'the final closure', 15_000);
    expect(reason).toMatch(/answered initialize differently in its new session/);
    expect(h.lost).toEqual(['the upstream server ended its session (HTTP 404)']);
    await h.upstream.close();
    expect(h.closed.items).toHaveLength(1);
  });

  it('close() ends the upstream session with DELETE, does not report it back, and is safe to call twice', async () => {
    const server = await fixture('legacy');
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
    const server = await fixture('legacy');
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

describe('HttpUpstream against server-everything (Streamable HTTP mode)', () => {
  it('initializes, lists tools and calls one', async () => {
    const port = await freePort();
    const child = spawn(process.execPath, [EVERYTHING, 'streamableHttp'], {
      env: { ...process.env, PORT: String(port) },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    cleanups.push(async () => {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = once(child, 'exit');
        child.kill('SIGKILL');
        await exited;
      }
    });
    await new Promise<void>((resolve, reject) => {
      let stderr = '';
      const timer = setTimeout(
        () => reject(new Error(`server-everything did not listen:\n${stderr}`)),
        10_000,
      );
      child.stderr!.on('data', (chunk: Buffer) => {
        stderr += chunk.toString('utf8');
        if (/listening on port/.test(stderr)) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    const h = open(`http://127.0.0.1:${port}/mcp`);
    const init = await h.initialize();
    expect(init.message.result.serverInfo.name).toMatch(/everything/i);
    expect(h.upstream.sessionId).toBeDefined();
    const tools = await h.answer(h.request('tools/list'));
    expect(tools.message.result.tools.map((tool: Json) => tool.name)).toContain('echo');
    const echo = await h.answer(h.call('echo', { message: 'through taskgate’s channel' }));
    expect(text(echo)).toBe('Echo: through taskgate’s channel');
  });
});

// ── helpers ────────────────────────────────────────────────────────────────────────────────────────

async function listen(server: Server): Promise<string> {
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
async function cuttingProxy(target: string) {
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
  const url = await listen(server);
  return {
    url,
    resumedFrom,
    cutNextStreamAfter(events: number): void {
      cutAfter = events;
    },
  };
}

/**
 * Issue 15: taskgate in front of an HTTP server does what it does in front of a stdio one. The stdio side
 * of each is in supervision.test.ts; here the same things over HTTP, through the built CLI.
 */
describe('taskgate in front of an HTTP upstream, as in front of a stdio one', () => {
  /** taskgate on raw pipes (logging at info) in front of `upstream`, handshake done. */
  async function behind(upstream: object, flags: string[] = []): Promise<RawPeer> {
    const dir = mkdtempSync(join(tmpdir(), 'taskgate-http-upstream-'));
    const file = join(dir, 'taskgate.json');
    writeFileSync(file, JSON.stringify({ upstream }));
    const peer = RawPeer.start(['--log-level', 'info', '--config', file, ...flags]);
    cleanups.push(async () => {
      if (peer.alive) peer.child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    });
    await peer.initialize();
    return peer;
  }

  const toolCall = (id: string, name: string, args: object, extra: object = {}) => ({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name, arguments: args, ...extra },
  });

  describe.each(['stdio', 'http'] as const)('one upstream deadline, over %s', (kind) => {
    async function upstreamWithTimeout(requestTimeout: number): Promise<object> {
      if (kind === 'stdio') return { command: process.execPath, args: [FIXTURES.legacy], requestTimeout };
      return { url: (await fixture('legacy')).url, requestTimeout };
    }

    it('a call not answered within upstream.requestTimeout fails, and the server is told to stop', async () => {
      const p = await behind(await upstreamWithTimeout(1_500));
      p.send(toolCall('slow', 'sleep', { ms: 10_000, label: 'too-slow' }));
      expect(await p.response('slow')).toMatchObject({
        error: {
          code: ErrorCode.UpstreamUnavailable,
          message: 'Upstream server did not answer tools/call within 1500 ms',
        },
      });
      let cancelled: string[] = [];
      for (let attempt = 0; attempt < 20 && !cancelled.includes('too-slow'); attempt++) {
        p.send(toolCall(`c${attempt}`, 'cancelled-calls', {}));
        const answer = (await p.response(`c${attempt}`)) as Json;
        cancelled = JSON.parse(answer.result.content[0].text);
      }
      expect(cancelled).toContain('too-slow');
    });

    it('issue 13.3: the deadline counts from the sending, however much progress comes meanwhile', async () => {
      const p = await behind(await upstreamWithTimeout(1_500));
      p.send(
        toolCall('chatty', 'progress', { steps: 8, intervalMs: 400 }, { _meta: { progressToken: 't' } }),
      );
      expect(await p.response('chatty')).toMatchObject({
        error: { message: 'Upstream server did not answer tools/call within 1500 ms' },
      });
    });

    it('a task’s own call is bounded by the task’s ttl, not by upstream.requestTimeout', async () => {
      const p = await behind(await upstreamWithTimeout(1_500));
      p.send(toolCall('task', 'sleep', { ms: 3_000 }, { task: { ttl: 60_000 } }));
      const taskId = ((await p.response('task')) as Json).result.task.taskId;
      p.send({ jsonrpc: '2.0', id: 'result', method: 'tasks/result', params: { taskId } });
      expect(((await p.response('result')) as Json).result).toMatchObject({
        content: [{ type: 'text', text: 'slept 3000 ms' }],
      });
    });
  });

  it('issue 34.2: upstream.resumeTimeout, not requestTimeout (5 min), bounds a resumption that brings nothing', async () => {
    const server = await fixture('polling');
    const p = await behind({ url: server.url, resumeTimeout: 300 });
    p.send(toolCall('polled', 'reconnect', {}));
    expect(await p.response('polled')).toMatchObject({
      error: {
        code: ErrorCode.UpstreamUnavailable,
        message:
          'Upstream server unavailable: the stream carrying the answer to tools/call was lost and resuming it brought nothing back within 300 ms',
      },
    });
  });

  describe('when the server ends the session and a new one starts', () => {
    it('the new session is told the log level the client had set', async () => {
      const server = await fixture('legacy', { env: { FIXTURE_REPORT: '1' } });
      const p = await behind({ url: server.url });
      p.send({ jsonrpc: '2.0', id: 'level', method: 'logging/setLevel', params: { level: 'error' } });
      expect(await p.response('level')).toHaveProperty('result');
      await server.logged('session 1: logging/setLevel {"level":"error"}');
      await server.endSessions();
      await server.logged('session 2: logging/setLevel {"level":"error"}');
      await p.logged('new upstream session started');
    });

    it('the tasks the server ran itself in the old session fail, instead of vanishing', async () => {
      // It sends no status notifications: only what taskgate passes on tells how its tasks stand.
      const server = await fixture('native', { env: { FIXTURE_MISBEHAVE: 'no-status-notifications' } });
      const p = await behind({ url: server.url });
      p.send(toolCall('t', 'sleep', { ms: 60_000 }, { task: {} }));
      const taskId = ((await p.response('t')) as Json).result.task.taskId;
      p.send({ jsonrpc: '2.0', id: 'before', method: 'tasks/get', params: { taskId } });
      expect((await p.response('before')).result).toMatchObject({ taskId, status: 'working' });
      await server.endSessions();
      const status = (await p.messages.waitFor(
        (m) =>
          m.method === 'notifications/tasks/status' &&
          (m.params as Json).taskId === taskId &&
          (m.params as Json).status === 'failed',
        'the failed status of the server’s task',
      )) as Json;
      expect(status.params.statusMessage).toMatch(/ended its session/);
      await p.logged('new upstream session started');
      p.send({ jsonrpc: '2.0', id: 'after', method: 'tasks/get', params: { taskId } });
      expect((await p.response('after')).result).toMatchObject({ taskId, status: 'failed' });
    });

    it('what the old session asked the client is withdrawn, and its call fails', async () => {
      const server = await fixture('legacy');
      const p = await behind({ url: server.url });
      p.send(toolCall('ask', 'elicit', { message: 'never answered' }));
      const elicitation = await p.messages.waitFor(
        (m) => m.method === 'elicitation/create',
        'the elicitation of the call',
      );
      await server.endSessions();
      await p.messages.waitFor(
        (m) => m.method === 'notifications/cancelled' && (m.params as Json).requestId === elicitation.id,
        'the elicitation to be withdrawn',
      );
      expect(await p.response('ask')).toMatchObject({
        error: { code: ErrorCode.UpstreamUnavailable, message: expect.stringMatching(/ended its session/) },
      });
    });

    it('a server that answers initialize differently in the new session is left, and calls say why', async () => {
      const first = await fixture('legacy');
      const p = await behind({ url: first.url });
      // Once it has answered, the handshake is over and the standalone stream is on its way.
      p.send(toolCall('before', 'echo', { text: 'first server' }));
      expect(await p.response('before')).toHaveProperty('result');
      await first.stop('SIGTERM');
      await fixture('native', { port: first.port });
      await p.logged('answered initialize differently in its new session', 15_000);
      p.send(toolCall('after', 'echo', { text: 'anyone?' }));
      expect(await p.response('after')).toMatchObject({
        error: {
          code: ErrorCode.UpstreamUnavailable,
          message: expect.stringMatching(/answered initialize differently/),
        },
      });
    });
  });
});

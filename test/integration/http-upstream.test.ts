/**
 * The Streamable HTTP upstream channel against servers that must be processes of their own: fixtures
 * configured by their environment, killed, or restarted on their port, and server-everything; then taskgate
 * in front of an HTTP upstream, through the built CLI. The rest of the channel's behaviour is tested with
 * the fixtures' servers in process (test/unit/http-upstream-channel.test.ts). Spec clauses are from MCP
 * 2025-11-25, basic/transports (Streamable HTTP).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ErrorCode } from '../../src/protocol/errors.js';
import type { HttpUpstreamOptions } from '../../src/transport/http-upstream.js';
import { startHttpFixture, type HttpFixture } from '../helpers/http-fixture.js';
import { freePort } from '../helpers/ports.js';
import { FIXTURES, RawPeer } from '../helpers/taskgate.js';
import {
  answerText as text,
  openUpstream,
  runCleanups,
  type Cleanups,
  type Json,
} from '../helpers/upstream-harness.js';

const EVERYTHING = fileURLToPath(
  new URL('../../node_modules/@modelcontextprotocol/server-everything/dist/index.js', import.meta.url),
);
const cleanups: Cleanups = [];
afterEach(() => runCleanups(cleanups));
const open = (url: string, options?: Partial<HttpUpstreamOptions>) => openUpstream(cleanups, url, options);

async function fixture(...args: Parameters<typeof startHttpFixture>): Promise<HttpFixture> {
  const started = await startHttpFixture(...args);
  cleanups.push(() => started.stop());
  return started;
}

/** One legacy fixture for the tests that need one they do not stop: each opens sessions of its own. */
let sharedLegacy: Promise<HttpFixture> | undefined;
const legacyShared = (): Promise<HttpFixture> => (sharedLegacy ??= startHttpFixture('legacy'));
afterAll(async () => (await sharedLegacy)?.stop());

describe('HttpUpstream against the SDK’s Streamable HTTP server', () => {
  it('takes an answer as one JSON body (Content-Type: application/json)', async () => {
    const server = await fixture('legacy', { env: { FIXTURE_JSON_RESPONSE: '1' } });
    const h = open(server.url);
    await h.initialize();
    const id = h.call('echo', { text: 'over JSON' });
    const answer = await h.answer(id);
    expect(text(answer)).toBe('over JSON');
    expect(answer.onStreamOf).toBe(id);
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

/**
 * Issue 15: taskgate in front of an HTTP server does what it does in front of a stdio one. The stdio side
 * of each is in supervision.test.ts; here the same things over HTTP, through the built CLI.
 */
describe('taskgate in front of an HTTP upstream, as in front of a stdio one', () => {
  /** taskgate on raw pipes (logging at info) in front of `upstream`, handshake done, stopped after the test. */
  async function behind(upstream: object): Promise<RawPeer> {
    const { peer, stop } = await startBehind(upstream);
    cleanups.push(stop);
    return peer;
  }

  /** taskgate on raw pipes in front of `upstream`, and how to stop it (the caller's to call). */
  async function startBehind(upstream: object): Promise<{ peer: RawPeer; stop(): Promise<void> }> {
    const dir = mkdtempSync(join(tmpdir(), 'taskgate-http-upstream-'));
    const file = join(dir, 'taskgate.json');
    writeFileSync(file, JSON.stringify({ upstream }));
    const peer = RawPeer.start(['--log-level', 'info', '--config', file]);
    const stop = async (): Promise<void> => {
      if (peer.alive) peer.child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    };
    await peer.initialize().catch(async (error: unknown) => {
      await stop();
      throw error;
    });
    return { peer, stop };
  }

  const toolCall = (id: string, name: string, args: object, extra: object = {}) => ({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name, arguments: args, ...extra },
  });

  describe.each(['stdio', 'http'] as const)('one upstream deadline, over %s', (kind) => {
    // One taskgate for the three tests: each sends requests of ids of its own.
    let p: RawPeer;
    let stop: (() => Promise<void>) | undefined;
    beforeAll(async () => {
      const requestTimeout = 1_500;
      const upstream =
        kind === 'stdio'
          ? { command: process.execPath, args: [FIXTURES.legacy], requestTimeout }
          : { url: (await legacyShared()).url, requestTimeout };
      ({ peer: p, stop } = await startBehind(upstream));
    });
    afterAll(() => stop?.());

    it('a call not answered within upstream.requestTimeout fails, and the server is told to stop', async () => {
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
      p.send(
        toolCall('chatty', 'progress', { steps: 8, intervalMs: 400 }, { _meta: { progressToken: 't' } }),
      );
      expect(await p.response('chatty')).toMatchObject({
        error: { message: 'Upstream server did not answer tools/call within 1500 ms' },
      });
    });

    it('a task’s own call is bounded by the task’s ttl, not by upstream.requestTimeout', async () => {
      // Longer than the request timeout, which therefore would end it first: the sleep cannot answer sooner.
      p.send(toolCall('task', 'sleep', { ms: 2_000 }, { task: { ttl: 60_000 } }));
      const taskId = ((await p.response('task')) as Json).result.task.taskId;
      p.send({ jsonrpc: '2.0', id: 'result', method: 'tasks/result', params: { taskId } });
      expect(((await p.response('result')) as Json).result).toMatchObject({
        content: [{ type: 'text', text: 'slept 2000 ms' }],
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

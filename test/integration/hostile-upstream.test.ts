/**
 * Upstreams that go wrong in ways a client cannot see, and what reaches taskgate's logs and output about
 * them (issue 13): silence and answers that answer nothing end at the request timeout, with their tasks
 * failed; requests during a restart wait for the new server; secrets stay out of logs and errors.
 * Built CLI, real processes.
 */
import { getEventListeners } from 'node:events';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { httpTransport } from '../helpers/http-client.js';
import { startHttpFixture, type HttpFixture } from '../helpers/http-fixture.js';
import { freePort } from '../helpers/ports.js';
import { FIXTURES, Gateway, RawPeer, latestUpstreamPid } from '../helpers/taskgate.js';

const SILENT = fileURLToPath(new URL('../fixtures/silent-server.js', import.meta.url));

const dir = mkdtempSync(join(tmpdir(), 'taskgate-hostile-upstream-'));
let files = 0;
const configFile = (yaml: string): string => {
  const path = join(dir, `taskgate-${++files}.yaml`);
  writeFileSync(path, yaml);
  return path;
};

let peers: RawPeer[] = [];
let gateway: Gateway | undefined;
let server: HttpFixture | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
  for (const peer of peers) await peer.kill();
  peers = [];
  await gateway?.stop();
  gateway = undefined;
});
const track = (peer: RawPeer): RawPeer => (peers.push(peer), peer);

const call = (id: string, name: string, task?: object) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: {}, ...(task && { task }) },
});

/**
 * taskgate in front of the silent fixture, its requests timing out after `timeoutMs`. A 2025 server: told
 * so, taskgate does not wait the era probe's 3 s for an answer that never comes.
 */
async function behindSilent(timeoutMs: number): Promise<RawPeer> {
  const config = configFile(
    `upstream:\n  command: ${JSON.stringify(process.execPath)}\n  args: [${JSON.stringify(SILENT)}]\n  requestTimeout: ${timeoutMs}\n  era: legacy\n`,
  );
  const peer = track(RawPeer.start(['--log-level', 'info', '--config', config]));
  await peer.initialize();
  // Its pid, for afterEach to end it: this fixture outlives taskgate's end.
  await peer.logged('upstream server started');
  return peer;
}

const errorOf = (answer: Record<string, unknown>) => answer.error as { code: number; message: string };

describe('issue 13.3: no call waits for ever on an upstream that does not answer it', () => {
  it('over stdio, silence, a wrong id, an error for id null and half a line end at the request timeout', async () => {
    const peer = await behindSilent(1_000);
    const started = performance.now();
    for (const name of ['silence', 'wrong-id', 'null-id']) peer.send(call(name, name));
    for (const name of ['silence', 'wrong-id', 'null-id']) {
      expect(errorOf(await peer.response(name, 10_000))).toEqual({
        code: -32000,
        message: 'Upstream server did not answer tools/call within 1000 ms',
      });
    }
    expect(performance.now() - started).toBeGreaterThanOrEqual(900);
    // Half a line is the last thing this upstream says that could be read: what follows continues it.
    peer.send(call('half', 'half-line'));
    expect(errorOf(await peer.response('half', 10_000)).message).toMatch(/did not answer tools\/call/);
    peer.send({ jsonrpc: '2.0', id: 'local', method: 'tasks/get', params: { taskId: 'none' } });
    expect(errorOf(await peer.response('local')).code).toBe(-32602);
    const answers = peer.messages.items.filter((m) => 'result' in m || 'error' in m).map((m) => m.id);
    expect(new Set(answers).size).toBe(answers.length);
    expect(peer.badStdout).toEqual([]);
  });

  it('over stdio, an answer that names its request but is not JSON-RPC fails that request at once', async () => {
    const peer = await behindSilent(60_000);
    peer.send(call('broken', 'broken-json'));
    peer.send(call('invalid', 'invalid-envelope'));
    for (const id of ['broken', 'invalid']) {
      const error = errorOf(await peer.response(id, 5_000));
      expect(error.code).toBe(-32603);
      expect(error.message).toMatch(/upstream server/i);
    }
  });

  it('over stdio, a task whose call is never answered becomes failed, saying why', async () => {
    const peer = await behindSilent(60_000);
    // The task's call is bounded by the task's ttl (1 s), not by the request timeout.
    peer.send(call('t', 'silence', { ttl: 1_000 }));
    const { taskId } = ((await peer.response('t')).result as { task: { taskId: string } }).task;
    peer.send({ jsonrpc: '2.0', id: 'r', method: 'tasks/result', params: { taskId } });
    const result = await peer.response('r', 10_000);
    expect(JSON.stringify(result)).toMatch(/did not answer tools\/call within 1000 ms/);
    peer.send({ jsonrpc: '2.0', id: 'g', method: 'tasks/get', params: { taskId } });
    expect((await peer.response('g')).result).toMatchObject({
      status: 'failed',
      statusMessage: expect.stringMatching(/did not answer tools\/call within 1000 ms/),
    });
  });
});

/** taskgate whose upstream was killed and will not be back during the test; requests wait `holdMs` for it. */
async function downForGood(holdMs: number): Promise<RawPeer> {
  const peer = track(
    await RawPeer.initialized('legacy', [
      ...[
        '--log-level',
        'info',
        '--upstream-restart-delay',
        '600000',
        '--upstream-restart-max-delay',
        '600000',
      ],
      ...['--upstream-restart-hold', String(holdMs)],
    ]),
  );
  await peer.logged('upstream server started');
  process.kill(latestUpstreamPid(peer.stderr), 'SIGKILL');
  await peer.logged('restarting it in 600000 ms');
  return peer;
}

describe('issue 13.13: requests during an upstream restart wait for the restarted server', () => {
  it('serves what came while it was down once it is back; only what was in flight fails', async () => {
    const peer = track(
      await RawPeer.initialized('legacy', ['--log-level', 'info', '--upstream-restart-delay', '1000']),
    );
    await peer.logged('upstream server started');
    peer.send({ ...call('inflight', 'sleep'), params: { name: 'sleep', arguments: { ms: 60_000 } } });
    // Answered after the sleep was read, on the same pipe: the sleep is in flight.
    peer.send({ jsonrpc: '2.0', id: 'before', method: 'ping' });
    await peer.response('before');
    process.kill(latestUpstreamPid(peer.stderr), 'SIGKILL');
    expect(errorOf(await peer.response('inflight'))).toMatchObject({
      code: -32000,
      message: expect.stringMatching(/SIGKILL/),
    });
    await peer.logged('restarting it in 1000 ms');
    peer.send({ jsonrpc: '2.0', id: 'ping', method: 'ping' });
    peer.send({ ...call('echo', 'echo'), params: { name: 'echo', arguments: { text: 'held' } } });
    peer.send({
      ...call('task', 'echo', {}),
      params: { name: 'echo', arguments: { text: 'held task' }, task: {} },
    });
    expect(await peer.response('ping', 10_000)).toMatchObject({ result: {} });
    expect((await peer.response('echo', 10_000)).result).toEqual({
      content: [{ type: 'text', text: 'held' }],
    });
    const { taskId } = ((await peer.response('task', 10_000)).result as { task: { taskId: string } }).task;
    peer.send({ jsonrpc: '2.0', id: 'result', method: 'tasks/result', params: { taskId } });
    expect((await peer.response('result', 10_000)).result).toMatchObject({
      content: [{ type: 'text', text: 'held task' }],
    });
    expect(peer.stderr).toContain('upstream server is serving again');
  });

  it('answers -32000 to what waited longer than upstreamRestart.holdRequests, and fails its task', async () => {
    const peer = await downForGood(300);
    const started = performance.now();
    peer.send({ jsonrpc: '2.0', id: 'ping', method: 'ping' });
    peer.send({ ...call('task', 'echo', {}), params: { name: 'echo', arguments: { text: 'x' }, task: {} } });
    const refused = errorOf(await peer.response('ping', 10_000));
    expect(performance.now() - started).toBeGreaterThanOrEqual(250);
    expect(refused).toEqual({
      code: -32000,
      message: expect.stringMatching(
        /killed by SIGKILL, and is being restarted, and was not back within 300 ms/,
      ),
    });
    const { taskId } = ((await peer.response('task')).result as { task: { taskId: string } }).task;
    peer.send({ jsonrpc: '2.0', id: 'result', method: 'tasks/result', params: { taskId } });
    await peer.response('result', 10_000);
    peer.send({ jsonrpc: '2.0', id: 'get', method: 'tasks/get', params: { taskId } });
    expect((await peer.response('get')).result).toMatchObject({
      status: 'failed',
      statusMessage: expect.stringMatching(/being restarted, and was not back within 300 ms/),
    });
  });
});

describe('issue 13.13: what waits for a restart is bounded', () => {
  it('refuses at once a request that finds 1 000 messages waiting already', async () => {
    const peer = await downForGood(600_000);
    for (let i = 0; i <= 1_000; i++) peer.send({ jsonrpc: '2.0', id: `p${i}`, method: 'ping' });
    expect(errorOf(await peer.response('p1000', 10_000))).toEqual({
      code: -32000,
      message: expect.stringMatching(/is being restarted, and 1000 messages already wait for it$/),
    });
    // The others still wait.
    expect(peer.messages.items.filter((m) => 'error' in m || 'result' in m)).toHaveLength(2);
  });
});

describe('issue 13.17: secrets stay out of the logs', () => {
  it('names an --upstream-url without its password or query values', async () => {
    const url = `http://user:URLPASS@127.0.0.1:${await freePort()}/mcp?api_key=QSECRET`;
    const peer = track(RawPeer.start(['--log-level', 'debug', '--upstream-url', url]));
    peer.send({
      jsonrpc: '2.0',
      id: 'init',
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    });
    expect(await peer.response('init')).toHaveProperty('error');
    // Leaving, the client makes taskgate say which upstream never answered.
    await peer.stop();
    expect(peer.stderr).toContain('stopped before it answered initialize');
    expect(peer.stderr).toContain('127.0.0.1');
    expect(peer.stderr).not.toMatch(/URLPASS|QSECRET/);
    expect(JSON.stringify(peer.messages.items)).not.toMatch(/URLPASS|QSECRET/);
  });

  it('cuts the session id in limit.hit audit lines as in every other line', async () => {
    const config = configFile('limits:\n  taskRequestRate: 0.001\n  taskRequestBurst: 1\n');
    gateway = await Gateway.start([process.execPath, FIXTURES.legacy], ['--config', config]);
    const transport = new StreamableHTTPClientTransport(gateway.url);
    const client = new Client({ name: 'hostile', version: '1' });
    await client.connect(transport);
    try {
      for (let i = 0; i < 2; i++) {
        await client.experimental.tasks.getTask('no-such-task').catch(() => undefined);
      }
      await gateway.logged('"event":"limit.hit"');
      const sessionId = transport.sessionId!;
      expect(sessionId.length).toBeGreaterThan(8);
      expect(gateway.stderr).not.toContain(sessionId);
      expect(gateway.stderr).toContain(`"subject":"session:${sessionId.slice(0, 8)}"`);
    } finally {
      await client.close();
    }
  });
});

describe('issue 13.15: no listener piles up per request', () => {
  it('calls through the HTTP front to an HTTP upstream add no abort listener each, in the client or taskgate', async () => {
    server = await startHttpFixture('legacy');
    gateway = await Gateway.start([], ['--upstream-url', server.url]);
    const client = new Client({ name: 'hostile', version: '1' });
    // Built as every HTTP client of the suite is (test/helpers/http-client.ts).
    const transport = httpTransport(gateway.url);
    await client.connect(transport);
    try {
      for (let round = 0; round < 50; round++) {
        await Promise.all(Array.from({ length: 10 }, () => client.ping()));
      }
      // The one signal the SDK's transport gives every fetch (security.test.ts made 10 000 calls on one).
      const signal = (transport as unknown as { _abortController: AbortController })._abortController.signal;
      expect(getEventListeners(signal, 'abort').length).toBeLessThan(10);
    } finally {
      await client.close();
    }
    expect(gateway.stderr).not.toMatch(/MaxListenersExceededWarning/);
  });
});

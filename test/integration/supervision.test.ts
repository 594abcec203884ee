/**
 * A stdio upstream that crashes is started again (issue 8): what it was doing fails at once with its exit
 * status, calls meanwhile wait for the new child a bounded time (then are refused clearly), the new child gets the client's handshake, and a server
 * that keeps crashing is retried ever more slowly up to the cap and reported. Real processes throughout.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { mkdtempSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { sample } from '../helpers/prometheus.js';
import { FIXTURES, Gateway, RawPeer, TASK_AWARE, latestUpstreamPid } from '../helpers/taskgate.js';

const EVERYTHING = fileURLToPath(
  new URL('../../node_modules/@modelcontextprotocol/server-everything/dist/index.js', import.meta.url),
);

let peer: RawPeer | undefined;
let gateway: Gateway | undefined;
afterEach(async () => {
  if (peer && peer.child.exitCode === null) peer.child.kill('SIGKILL');
  await gateway?.stop();
  peer = gateway = undefined;
});

const call = (id: string, name: string, args: Record<string, unknown>, task?: object) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: args, ...(task && { task }) },
});

/** taskgate on raw pipes, logging at info, in front of a node script (no handshake done yet). */
const startBehind = (script: string[], flags: string[], env: Record<string, string> = {}): RawPeer =>
  RawPeer.start(['--log-level', 'info', ...flags, '--', process.execPath, ...script], env);

/** Every restart delay taskgate announced, in order. */
const announcedDelays = (stderr: string): number[] =>
  [...stderr.matchAll(/"delayMs":(\d+)/g)].map((m) => Number(m[1]));

describe('a stdio upstream that crashes', () => {
  it('fails what it was doing with the signal at once, and refuses calls that waited too long while it is down', async () => {
    const p = (peer = await RawPeer.initialized('legacy', [
      '--log-level',
      'info',
      // Down for the whole test: every call below meets it gone, and waits for it 300 ms (issue 13.13).
      '--upstream-restart-delay',
      '600000',
      '--upstream-restart-max-delay',
      '600000',
      '--upstream-restart-hold',
      '300',
    ]));
    await p.logged('upstream server started');
    p.send(call('t', 'sleep', { ms: 60_000 }, {}));
    const taskId = ((await p.response('t')).result as { task: { taskId: string } }).task.taskId;
    p.send({ jsonrpc: '2.0', id: 'waiting', method: 'tasks/result', params: { taskId } });
    p.send(call('plain', 'sleep', { ms: 60_000 }));
    p.send(call('ask', 'elicit', { message: 'still there?' }));
    const elicitation = await p.messages.waitFor(
      (message) => message.method === 'elicitation/create',
      'the elicitation of the upstream',
    );
    p.send({ jsonrpc: '2.0', id: 'before', method: 'tasks/get', params: { taskId } });
    expect((await p.response('before')).result).toMatchObject({ status: 'working' });

    process.kill(latestUpstreamPid(p.stderr), 'SIGKILL');

    // Its question to the client is withdrawn, since no one is left to take the answer.
    await p.messages.waitFor(
      (message) =>
        message.method === 'notifications/cancelled' &&
        (message.params as { requestId: unknown }).requestId === elicitation.id,
      'the elicitation to be cancelled',
    );
    for (const id of ['waiting', 'plain', 'ask']) {
      const answer = await p.response(id);
      expect(answer).toMatchObject({ error: { code: -32000 } });
      expect(String((answer.error as { message: string }).message)).toMatch(/SIGKILL/);
    }
    p.send({ jsonrpc: '2.0', id: 'failed', method: 'tasks/get', params: { taskId } });
    const failed = (await p.response('failed')).result as { status: string; statusMessage: string };
    expect(failed.status).toBe('failed');
    expect(failed.statusMessage).toMatch(/killed by SIGKILL/);

    await p.logged('restarting it in 600000 ms');
    p.send(call('meanwhile', 'echo', { text: 'too early' }));
    p.send(call('task-meanwhile', 'echo', { text: 'too early' }, {}));
    const answer = await p.response('meanwhile');
    expect(answer).toMatchObject({ error: { code: -32000 } });
    expect(String((answer.error as { message: string }).message)).toMatch(
      /killed by SIGKILL, and is being restarted, and was not back within 300 ms/,
    );
    // A task call is held too: its task is created, and fails when the hold runs out.
    const heldTask = ((await p.response('task-meanwhile')).result as { task: { taskId: string } }).task;
    p.send({
      jsonrpc: '2.0',
      id: 'held-result',
      method: 'tasks/result',
      params: { taskId: heldTask.taskId },
    });
    await p.response('held-result');
    p.send({ jsonrpc: '2.0', id: 'held-get', method: 'tasks/get', params: { taskId: heldTask.taskId } });
    expect((await p.response('held-get')).result).toMatchObject({
      status: 'failed',
      statusMessage: expect.stringMatching(/is being restarted, and was not back within 300 ms/),
    });
    // Held like any request (issue 13.13), then refused like them.
    p.send({ jsonrpc: '2.0', id: 'still', method: 'ping' });
    expect(await p.response('still')).toMatchObject({ error: { code: -32000 } });

    // Exactly one answer per request.
    const ids = p.messages.items.filter((m) => 'result' in m || 'error' in m).map((m) => String(m.id));
    expect(new Set(ids).size).toBe(ids.length);
    await p.stop();
    expect((await p.exited)[0]).toBe(0);
  });

  it('comes back with the client’s handshake first, then what was held for it, and serves again', async () => {
    const blocker = join(mkdtempSync(join(tmpdir(), 'taskgate-supervision-')), 'cannot-start');
    const p = (peer = await RawPeer.initialized(
      'legacy',
      [
        '--log-level',
        'info',
        '--admin-listen',
        '127.0.0.1:0',
        '--upstream-restart-delay',
        '50',
        '--upstream-restart-max-delay',
        '200',
      ],
      { FIXTURE_REPORT: '1', FIXTURE_EXIT_ON_START_WHILE: blocker },
    ));
    await p.logged('upstream server started');
    const firstPid = latestUpstreamPid(p.stderr);
    writeFileSync(blocker, '');
    process.kill(firstPid, 'SIGKILL');
    // A new child has failed to start: while the blocker stays, none is serving, so this is held.
    await p.logged('exited with code 4');
    p.send({ jsonrpc: '2.0', method: 'notifications/roots/list_changed' });
    unlinkSync(blocker);

    await p.logged('upstream server is serving again');
    const pid = latestUpstreamPid(p.stderr);
    expect(pid).not.toBe(firstPid);
    await p.logged(`[legacy-fixture ${pid}] roots/list_changed`);
    expect(p.stderr).toContain(`[legacy-fixture ${pid}] roots/list_changed, initialize done: true`);
    expect(p.stderr.split(`[legacy-fixture ${pid}] initialized`)).toHaveLength(2);

    p.send(call('after', 'echo', { text: 'back' }));
    expect((await p.response('after')).result).toEqual({ content: [{ type: 'text', text: 'back' }] });
    p.send(call('task-after', 'echo', { text: 'as a task' }, {}));
    const next = ((await p.response('task-after')).result as { task: { taskId: string } }).task.taskId;
    p.send({ jsonrpc: '2.0', id: 'next-result', method: 'tasks/result', params: { taskId: next } });
    expect((await p.response('next-result')).result).toMatchObject({
      content: [{ type: 'text', text: 'as a task' }],
    });
    // The new child was given the client's capabilities: it may ask the client for its roots.
    p.send(call('roots', 'roots', {}));
    const rootsRequest = await p.messages.waitFor(
      (message) => message.method === 'roots/list',
      'roots/list from the restarted upstream',
    );
    p.send({ jsonrpc: '2.0', id: rootsRequest.id, result: { roots: [{ uri: 'file:///r', name: 'r' }] } });
    expect((await p.response('roots')).result).toMatchObject({
      content: [{ type: 'text', text: JSON.stringify([{ uri: 'file:///r', name: 'r' }]) }],
    });

    const metrics = await (await fetch(new URL('/metrics', await p.adminUrl()))).text();
    const started = p.stderr.split('upstream server restarted; replaying').length - 1;
    expect(started).toBeGreaterThanOrEqual(2);
    expect(sample(metrics, 'taskgate_upstream_restarts_total')).toBe(started);
    await p.stop();
    expect((await p.exited)[0]).toBe(0);
  });

  it('is told again the log level the client had set', async () => {
    const p = (peer = await RawPeer.initialized('legacy', [
      '--log-level',
      'info',
      '--upstream-restart-delay',
      '50',
    ]));
    const announced = (): number =>
      p.messages.items.filter((m) => m.method === 'notifications/message').length;
    // The fixture logs at info: heard at first, not once the client asks for errors only.
    p.send(call('a1', 'announce', { text: 'heard' }));
    await p.response('a1');
    expect(announced()).toBe(1);
    p.send({ jsonrpc: '2.0', id: 'level', method: 'logging/setLevel', params: { level: 'error' } });
    expect(await p.response('level')).toHaveProperty('result');
    p.send(call('a2', 'announce', { text: 'filtered' }));
    await p.response('a2');
    expect(announced()).toBe(1);

    await p.logged('upstream server started');
    process.kill(latestUpstreamPid(p.stderr), 'SIGKILL');
    await p.logged('upstream server is serving again');
    // The logging notification goes out before the call's answer, on the same pipe.
    p.send(call('a3', 'announce', { text: 'still filtered' }));
    expect((await p.response('a3')).result).toMatchObject({ content: [{ type: 'text', text: 'announced' }] });
    expect(announced()).toBe(1);
  });

  it('fails the tasks it ran itself, instead of letting them vanish', async () => {
    // It sends no status notifications: only the answers taskgate passes on tell it how its tasks stand.
    const p = (peer = await RawPeer.initialized('native', ['--upstream-restart-delay', '50'], {
      FIXTURE_MISBEHAVE: 'no-status-notifications',
    }));
    await p.logged('upstream server started');
    // The native fixture runs its tools as tasks itself: taskgate passes this one through.
    p.send(call('t', 'sleep', { ms: 60_000 }, {}));
    const taskId = ((await p.response('t')).result as { task: { taskId: string } }).task.taskId;
    p.send({ jsonrpc: '2.0', id: 'before', method: 'tasks/get', params: { taskId } });
    expect((await p.response('before')).result).toMatchObject({ taskId, status: 'working' });
    // One that ended, its result fetched: it stays what it was.
    p.send(call('q', 'echo', { text: 'done' }, {}));
    const quickId = ((await p.response('q')).result as { task: { taskId: string } }).task.taskId;
    p.send({ jsonrpc: '2.0', id: 'q-result', method: 'tasks/result', params: { taskId: quickId } });
    expect(await p.response('q-result')).toHaveProperty('result');

    process.kill(latestUpstreamPid(p.stderr), 'SIGKILL');

    const status = await p.messages.waitFor(
      (m) =>
        m.method === 'notifications/tasks/status' &&
        (m.params as { taskId: string; status: string }).taskId === taskId &&
        (m.params as { status: string }).status === 'failed',
      'the failed status of the upstream’s task',
    );
    expect((status.params as { statusMessage: string }).statusMessage).toMatch(/killed by SIGKILL/);
    const failedIds = p.messages.items
      .filter((m) => m.method === 'notifications/tasks/status')
      .filter((m) => (m.params as { status: string }).status === 'failed')
      .map((m) => (m.params as { taskId: string }).taskId);
    expect(failedIds).toEqual([taskId]);
    // Still so once a new server is up, which never heard of the task.
    await p.logged('upstream server is serving again');
    p.send({ jsonrpc: '2.0', id: 'get', method: 'tasks/get', params: { taskId } });
    expect((await p.response('get')).result).toMatchObject({
      taskId,
      status: 'failed',
      statusMessage: expect.stringMatching(/^Upstream server unavailable: .*SIGKILL/),
    });
    p.send({ jsonrpc: '2.0', id: 'result', method: 'tasks/result', params: { taskId } });
    expect(await p.response('result')).toMatchObject({
      error: { code: -32000, message: expect.stringMatching(/SIGKILL/) },
    });
    p.send({ jsonrpc: '2.0', id: 'cancel', method: 'tasks/cancel', params: { taskId } });
    expect(await p.response('cancel')).toMatchObject({ error: { code: -32602 } });
  });

  it('withdraws what taskgate asked the client for the client-side tasks of the gone server', async () => {
    // server-everything asks for an elicitation as a task; this client cannot take it as one, so taskgate
    // holds the task and asks the client an ordinary elicitation/create.
    const p = (peer = startBehind(
      [EVERYTHING, 'stdio'],
      ['--upstream-restart-delay', '600000', '--upstream-restart-max-delay', '600000'],
    ));
    await p.initialize();
    await p.logged('upstream server started');
    p.send(call('ask', 'trigger-elicitation-request-async', {}));
    const elicitation = await p.messages.waitFor(
      (m) => m.method === 'elicitation/create',
      'the elicitation taskgate makes for the server’s task',
      30_000,
    );
    process.kill(latestUpstreamPid(p.stderr), 'SIGKILL');
    await p.messages.waitFor(
      (m) =>
        m.method === 'notifications/cancelled' &&
        (m.params as { requestId: unknown }).requestId === elicitation.id,
      'the elicitation to be withdrawn',
    );
    expect(await p.response('ask')).toMatchObject({ error: { code: -32000 } });
  });

  it('is restarted even when it crashed before the client had sent notifications/initialized', async () => {
    const p = (peer = startBehind([FIXTURES.legacy], ['--upstream-restart-delay', '50'], {
      FIXTURE_REPORT: '1',
    }));
    p.send({
      jsonrpc: '2.0',
      id: 'init',
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'late', version: '1' } },
    });
    expect(await p.response('init')).toHaveProperty('result');
    await p.logged('upstream server started');
    process.kill(latestUpstreamPid(p.stderr), 'SIGKILL');
    await p.logged('restarting it in 50 ms');
    // taskgate gave the new child an initialized of its own: the client's, late, is not sent twice.
    p.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    await p.logged('upstream server is serving again');
    p.send(call('back', 'echo', { text: 'handshake replayed' }));
    expect((await p.response('back')).result).toEqual({
      content: [{ type: 'text', text: 'handshake replayed' }],
    });
    const pid = latestUpstreamPid(p.stderr);
    await p.logged(`[legacy-fixture ${pid}] initialized`);
    p.send({ jsonrpc: '2.0', id: 'again', method: 'ping' });
    await p.response('again');
    expect(p.stderr.split(`[legacy-fixture ${pid}] initialized`)).toHaveLength(2);
  });

  it('is retried while it cannot start, and serves once it can', async () => {
    const blocker = join(mkdtempSync(join(tmpdir(), 'taskgate-supervision-')), 'cannot-start');
    const p = (peer = await RawPeer.initialized(
      'legacy',
      ['--log-level', 'info', '--upstream-restart-delay', '50', '--upstream-restart-max-delay', '200'],
      { FIXTURE_EXIT_ON_START_WHILE: blocker },
    ));
    await p.logged('upstream server started');
    writeFileSync(blocker, '');
    process.kill(latestUpstreamPid(p.stderr), 'SIGKILL');
    // Each new child exits before it answers the replayed initialize: crash after crash, ever slower.
    await p.logged('crash-looping');
    expect(p.stderr).toMatch(/exited with code 4/);
    unlinkSync(blocker);
    await p.logged('upstream server is serving again');
    expect(announcedDelays(p.stderr).slice(0, 5)).toEqual([50, 100, 200, 200, 200]);
    p.send(call('back', 'echo', { text: 'started at last' }));
    expect((await p.response('back')).result).toEqual({
      content: [{ type: 'text', text: 'started at last' }],
    });
  });

  it('is retried ever more slowly up to the cap when it keeps crashing, reported, and taskgate still exits cleanly', async () => {
    const p = (peer = await RawPeer.initialized(
      'legacy',
      [
        '--upstream-restart-delay',
        '50',
        '--upstream-restart-max-delay',
        '200',
        '--upstream-restart-hold',
        '200',
      ],
      { FIXTURE_EXIT_ON_INITIALIZED: '9' },
    ));

    await p.logged('crash-looping');
    // Crash 1 after the client's handshake, crashes 2.. after each replayed one: 50, 100, 200, then capped.
    expect(announcedDelays(p.stderr).slice(0, 5)).toEqual([50, 100, 200, 200, 200]);
    expect(p.stderr).toMatch(/exited with code 9/);
    p.send(call('down', 'echo', { text: 'x' }));
    expect(await p.response('down')).toMatchObject({ error: { code: -32000 } });

    // Once the client has gone, taskgate ends cleanly in the middle of the loop.
    p.child.stdin.end();
    const [code] = await p.exited;
    expect(code).toBe(0);
  });

  it('behind the HTTP front, restarts the session’s own upstream and serves that session again', async () => {
    gateway = await Gateway.start([process.execPath, FIXTURES.legacy], ['--upstream-restart-delay', '50']);
    const client = new Client({ name: 'supervision', version: '1' }, { capabilities: TASK_AWARE });
    await client.connect(new StreamableHTTPClientTransport(gateway.url));
    try {
      const { task } = await client.request(
        { method: 'tools/call', params: { name: 'sleep', arguments: { ms: 60_000 }, task: {} } },
        CreateTaskResultSchema,
      );
      await expect(client.callTool({ name: 'crash', arguments: { code: 5 } })).rejects.toThrow(
        /exited with code 5/,
      );
      const failed = await client.experimental.tasks.getTask(task.taskId);
      expect(failed).toMatchObject({ status: 'failed', statusMessage: expect.stringMatching(/code 5/) });

      await gateway.logged('upstream server is serving again');
      const result = await client.callTool(
        { name: 'echo', arguments: { text: 'again' } },
        CallToolResultSchema,
      );
      expect(result.content).toEqual([{ type: 'text', text: 'again' }]);
    } finally {
      await client.close();
    }
  });
});

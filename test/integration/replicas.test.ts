/**
 * Several taskgate processes sharing one Redis, each an HTTP gateway in front of the legacy fixture (one
 * fixture process per client session), driven by task-aware SDK clients over Streamable HTTP. Each test
 * gets a fresh key prefix; the tests that stop Redis start a private redis-server of their own (the
 * machine's shared Redis is never stopped). Every replica runs config/replicas.yaml, with the test's
 * Redis, prefix and a short lease given as flags.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  McpError,
  type JSONRPCMessage,
} from '@modelcontextprotocol/sdk/types.js';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { EXECUTOR_LOST } from '../../src/tasks/store.js';
import { CheckedTransport } from '../helpers/checked-transport.js';
import {
  freshPrefix,
  privateRedisServer,
  redisForTests,
  type RedisServer,
  startRedisServer,
} from '../helpers/redis.js';
import { MODERN_VERSION } from '../helpers/modern-client.js';
import { EXTENSION_META, listen, modernRequest } from '../helpers/modern-raw.js';
import { post } from '../helpers/raw-http.js';
import { FIXTURES, Gateway, TASK_AWARE } from '../helpers/taskgate.js';
import { thrownBy } from '../helpers/thrown.js';

const redis = await redisForTests();
afterAll(() => redis?.stop());

const LEGACY = [process.execPath, FIXTURES.legacy];
const EXAMPLE = fileURLToPath(new URL('../../config/replicas.yaml', import.meta.url));
const SECRET = 'the cursor secret of every replica in these tests';
/** Short, so that a dead replica's tasks fail quickly; a lease sweep runs every min(1 s, lease / 4). */
const LEASE_MS = 1_500;
const STORE_UNAVAILABLE = -32002;

interface Peer {
  client: Client;
  transport: CheckedTransport;
}

let gateways: Gateway[] = [];
let peers: Peer[] = [];
let servers: RedisServer[] = [];
afterEach(async () => {
  for (const { transport } of peers) expect(transport.violations).toEqual([]);
  await Promise.all(peers.map(({ client }) => client.close().catch(() => undefined)));
  await Promise.all(gateways.map((gateway) => gateway.stop()));
  await Promise.all(servers.map((server) => server.stop()));
  [gateways, peers, servers] = [[], [], []];
});

/**
 * One replica, stopped after the test: a taskgate process on its own port, sharing the Redis at `url`
 * under `prefix`.
 */
async function replica(...args: Parameters<typeof startReplica>): Promise<Gateway> {
  const gateway = await startReplica(...args);
  gateways.push(gateway);
  return gateway;
}

/** Two replicas on the shared Redis under `prefix`, for a describe's tests to share: the caller stops them. */
const replicaPair = (prefix: string, extraFlags: string[] = []): Promise<[Gateway, Gateway]> =>
  Promise.all([startReplica(prefix, redis!.url, extraFlags), startReplica(prefix, redis!.url, extraFlags)]);

function startReplica(
  prefix: string,
  url = redis!.url,
  extraFlags: string[] = [],
  upstream = LEGACY,
  config = EXAMPLE,
): Promise<Gateway> {
  return Gateway.start(
    upstream,
    [
      ...extraFlags,
      '--config',
      config,
      '--store',
      url,
      '--store-key-prefix',
      prefix,
      '--store-lease-ttl',
      String(LEASE_MS),
      '--expose-task-list',
    ],
    { TASKGATE_STORE_CURSOR_SECRET: SECRET },
  );
}

/** A task-aware client with a session of its own on that replica (and so a fixture process of its own). */
async function clientOf(gateway: Gateway, token?: string): Promise<Peer> {
  const transport = new CheckedTransport(
    new StreamableHTTPClientTransport(
      gateway.url,
      token === undefined ? {} : { requestInit: { headers: { authorization: `Bearer ${token}` } } },
    ),
  );
  const client = new Client({ name: 'replicas-test', version: '1' }, { capabilities: TASK_AWARE });
  await client.connect(transport);
  const peer = { client, transport };
  peers.push(peer);
  return peer;
}

const createTask = async (peer: Peer, name: string, args: Record<string, unknown>) =>
  (
    await peer.client.request(
      { method: 'tools/call', params: { name, arguments: args, task: { ttl: 600_000 } } },
      CreateTaskResultSchema,
    )
  ).task;

const callTool = (peer: Peer, name: string, args: Record<string, unknown>) =>
  peer.client.request({ method: 'tools/call', params: { name, arguments: args } }, CallToolResultSchema);

const resultOf = (peer: Peer, taskId: string) =>
  peer.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);

const statusNotification = (taskId: string, status: string) => (message: JSONRPCMessage) =>
  'method' in message &&
  message.method === 'notifications/tasks/status' &&
  message.params?.taskId === taskId &&
  message.params.status === status;

/** config/replicas.yaml with these lines added. */
function exampleWith(lines: string[]): string {
  const path = join(mkdtempSync(join(tmpdir(), 'taskgate-replicas-')), 'config.yaml');
  writeFileSync(path, `${readFileSync(EXAMPLE, 'utf8')}\n${lines.join('\n')}\n`);
  return path;
}

/** Two identities for the replicas that identify callers: alice and bob. */
const TOKENS = ['--auth-token', 'alice-token-0123456789=alice', '--auth-token', 'bob-token-0123456789ab=bob'];

/**
 * A 2026-07-28 tasks/get of `taskId` on `url` (or on each URL it gives in turn) until `done` holds of the
 * task, a bounded number of times.
 */
async function getUntil(
  url: URL | (() => URL),
  taskId: string,
  done: (task: Record<string, unknown>) => boolean,
): Promise<Record<string, unknown>> {
  let last: unknown;
  for (let attempt = 0; attempt < 200; attempt++) {
    const got = await modernRequest(typeof url === 'function' ? url() : url, 'tasks/get', { taskId });
    expect(got.error).toBeUndefined();
    if (done(got.result!)) return got.result!;
    last = got.result;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`task ${taskId} never got there; last: ${JSON.stringify(last)}`);
}

const hasInputRequests = (task: Record<string, unknown>): boolean =>
  Object.keys((task.inputRequests as object | undefined) ?? {}).length > 0;

describe.skipIf(!redis)('replicas sharing one Redis', () => {
  // The tests that need nothing but two replicas share two: each makes sessions and tasks of its own.
  describe('on one pair of replicas', () => {
    let a: Gateway;
    let b: Gateway;
    beforeAll(async () => {
      [a, b] = await replicaPair(freshPrefix());
    });
    afterAll(() => Promise.all([a?.stop(), b?.stop()]));

    it('B serves tasks/get and a blocking tasks/result of a task running on A, woken when A completes it', async () => {
      const [onA, onB] = await Promise.all([clientOf(a), clientOf(b)]);
      const task = await createTask(onA, 'sleep', { ms: 1_000, label: 'across' });

      expect(await onB.client.experimental.tasks.getTask(task.taskId)).toMatchObject({
        taskId: task.taskId,
        status: 'working',
      });
      const result = await resultOf(onB, task.taskId);
      expect(result.content).toEqual([{ type: 'text', text: 'slept 1000 ms' }]);
      expect(result._meta?.['io.modelcontextprotocol/related-task']).toEqual({ taskId: task.taskId });
      expect(await onB.client.experimental.tasks.getTask(task.taskId)).toMatchObject({ status: 'completed' });
      // A's own client was told, as always.
      await onA.transport.received.waitFor(statusNotification(task.taskId, 'completed'), 'the status on A');
    });

    it('tasks/cancel on B stops the call running on A: the fixture behind A sees the cancellation', async () => {
      const [onA, onB] = await Promise.all([clientOf(a), clientOf(b)]);
      const task = await createTask(onA, 'sleep', { ms: 30_000, label: 'cancelled-from-B' });

      const cancelled = await onB.client.experimental.tasks.cancelTask(task.taskId);
      expect(cancelled).toMatchObject({ taskId: task.taskId, status: 'cancelled' });
      // A hears of it through Redis: it tells its client, and sends notifications/cancelled upstream.
      await onA.transport.received.waitFor(statusNotification(task.taskId, 'cancelled'), 'the status on A');
      // The fixture records the cancellation once its sleep has unwound: ask again, a bounded few times.
      let seen = '';
      for (let attempt = 0; attempt < 20 && !seen.includes('cancelled-from-B'); attempt++) {
        const answer = await callTool(onA, 'cancelled-calls', {});
        seen = (answer.content[0] as { text: string }).text;
      }
      expect(JSON.parse(seen)).toEqual(['cancelled-from-B']);
      expect(await onA.client.experimental.tasks.getTask(task.taskId)).toMatchObject({ status: 'cancelled' });
    });

    it('a 2026-07-28 client with the tasks extension: its task made on A is read, inlined and cancelled on B', async () => {
      const taskIdOf = async (label: string, ms: number): Promise<string> => {
        const made = await modernRequest(a.url, 'tools/call', { name: 'sleep', arguments: { ms, label } });
        expect(made.result).toMatchObject({ resultType: 'task', status: 'working' });
        return String(made.result!.taskId);
      };
      /** tasks/get on `url` until the task is not working, a bounded number of times. */
      const settledOn = async (url: URL, taskId: string): Promise<Record<string, unknown>> => {
        for (let attempt = 0; attempt < 200; attempt++) {
          const got = await modernRequest(url, 'tasks/get', { taskId });
          if (got.result?.status !== 'working') return got.result ?? { error: got.error };
          await new Promise((resolve) => setTimeout(resolve, 25));
        }
        throw new Error(`task ${taskId} stayed working`);
      };

      const quick = await taskIdOf('v2-across', 300);
      expect(await settledOn(b.url, quick)).toMatchObject({
        status: 'completed',
        result: { resultType: 'complete', content: [{ type: 'text', text: 'slept 300 ms' }] },
      });

      const long = await taskIdOf('v2-cancelled-from-B', 30_000);
      expect((await modernRequest(b.url, 'tasks/cancel', { taskId: long })).result).toMatchObject({
        resultType: 'complete',
      });
      expect(await settledOn(a.url, long)).toMatchObject({ status: 'cancelled' });
      // A's upstream saw the call cancelled (a plain call: no extension declared, so no task).
      const plainMeta = { ...EXTENSION_META, 'io.modelcontextprotocol/clientCapabilities': {} };
      let seen = '';
      for (let attempt = 0; attempt < 20 && !seen.includes('v2-cancelled-from-B'); attempt++) {
        const answer = await modernRequest(
          a.url,
          'tools/call',
          { name: 'cancelled-calls', arguments: {} },
          plainMeta,
        );
        seen = (answer.result?.content as { text: string }[])[0]!.text;
      }
      expect(JSON.parse(seen)).toEqual(['v2-cancelled-from-B']);
    });

    it("a 2026-07-28 extension task made on A asks for input: B shows the inputRequests, and B's tasks/update reaches A's server", async () => {
      const made = await modernRequest(a.url, 'tools/call', {
        name: 'elicit',
        arguments: { message: 'asked on A, answered on B' },
      });
      expect(made.result).toMatchObject({ resultType: 'task' });
      const taskId = String(made.result!.taskId);

      const waiting = await getUntil(b.url, taskId, hasInputRequests);
      expect(waiting.status).toBe('input_required');
      const posted = Object.entries(waiting.inputRequests as Record<string, unknown>);
      expect(posted).toHaveLength(1);
      const [key, asked] = posted[0]!;
      expect(asked).toMatchObject({
        method: 'elicitation/create',
        params: { message: 'asked on A, answered on B' },
      });

      // A key B does not know of is ignored; the one A posted reaches A's server.
      const update = await modernRequest(b.url, 'tasks/update', {
        taskId,
        inputResponses: {
          'input-never-issued': { action: 'decline' },
          [key]: { action: 'accept', content: { answer: 'from B' } },
        },
      });
      expect(update.result).toMatchObject({ resultType: 'complete' });
      const done = await getUntil(
        b.url,
        taskId,
        (task) => task.status !== 'input_required' && task.status !== 'working',
      );
      expect(done).toMatchObject({
        status: 'completed',
        result: {
          content: [
            { type: 'text', text: JSON.stringify({ action: 'accept', content: { answer: 'from B' } }) },
          ],
        },
      });
      expect(await getUntil(a.url, taskId, () => true)).toMatchObject({ status: 'completed' });
    });

    it('a listener on B hears notifications/tasks of a task running on A, as the task changes', async () => {
      const made = await modernRequest(a.url, 'tools/call', {
        name: 'elicit',
        arguments: { message: 'heard on B?' },
      });
      const taskId = String(made.result!.taskId);
      const waiting = await getUntil(a.url, taskId, hasInputRequests);
      const [key] = Object.keys(waiting.inputRequests as object);
      const stream = await listen(b.url, { taskIds: [taskId] });
      try {
        await stream.until((message) => message.method === 'notifications/subscriptions/acknowledged');
        await modernRequest(a.url, 'tasks/update', {
          taskId,
          inputResponses: { [key!]: { action: 'accept', content: { answer: 'yes' } } },
        });
        const completed = await stream.until(
          (message) =>
            message.method === 'notifications/tasks' &&
            message.params?.taskId === taskId &&
            message.params.status === 'completed',
        );
        expect(completed.params?.result).toMatchObject({
          content: [{ type: 'text', text: expect.stringContaining('yes') }],
        });
      } finally {
        stream.close();
      }
    });

    it("a plain 2026-07-28 call that asks for input on A: its MRTR retry sent to B is carried to A's waiting call", async () => {
      const plain = {
        ...EXTENSION_META,
        'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } },
      };
      const params = { name: 'elicit', arguments: { message: 'retried on B' } };
      const asked = await modernRequest(a.url, 'tools/call', params, plain);
      expect(asked.result).toMatchObject({ resultType: 'input_required' });
      const [key] = Object.keys(asked.result!.inputRequests as object);
      const retry = {
        ...params,
        requestState: asked.result!.requestState,
        inputResponses: { [key!]: { action: 'accept', content: { answer: 'via B' } } },
      };
      const answered = await modernRequest(b.url, 'tools/call', retry, plain);
      expect(answered.result).toMatchObject({
        resultType: 'complete',
        content: [{ type: 'text', text: JSON.stringify({ action: 'accept', content: { answer: 'via B' } }) }],
      });
      // Single use, wherever it is sent again; refused on A or relayed from B, it is the same 400.
      for (const url of [b.url, a.url]) {
        const again = await post(
          url,
          { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { ...retry, _meta: plain } },
          { 'mcp-protocol-version': MODERN_VERSION, 'mcp-method': 'tools/call', 'mcp-name': 'elicit' },
        );
        expect(again.status).toBe(400);
        expect(await again.json()).toMatchObject({
          id: 9,
          error: { code: -32602, message: expect.stringContaining('already used') },
        });
      }
    });

    it('issue 18: 2026-07-28 requests alternated between A and B, each to the other replica than the last, all served', async () => {
      const replicas = [a, b];
      let turn = 0;
      const next = (): URL => replicas[turn++ % 2]!.url;
      const send = (method: string, params: Record<string, unknown>, meta?: object) =>
        modernRequest(next(), method, params, meta);
      const plain = {
        ...EXTENSION_META,
        'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } },
      };

      expect((await send('server/discover', {})).result).toMatchObject({
        supportedVersions: expect.any(Array),
      });
      expect((await send('tools/list', {})).result?.tools).toEqual(
        expect.arrayContaining([expect.objectContaining({ name: 'echo' })]),
      );
      expect(
        (await send('tools/call', { name: 'echo', arguments: { text: 'alternate' } }, plain)).result,
      ).toMatchObject({ content: [{ type: 'text', text: 'alternate' }] });

      // A plain call's input round, answered on the other replica.
      const asked = await send('tools/call', { name: 'elicit', arguments: { message: 'round' } }, plain);
      const [roundKey] = Object.keys(asked.result!.inputRequests as object);
      const resumed = await send(
        'tools/call',
        {
          name: 'elicit',
          arguments: { message: 'round' },
          requestState: asked.result!.requestState,
          inputResponses: { [roundKey!]: { action: 'accept', content: { answer: 'alternated' } } },
        },
        plain,
      );
      expect(JSON.stringify(resumed.result)).toContain('alternated');

      // A task: made on one, waited on, answered and read on whichever comes next.
      const made = await send('tools/call', { name: 'elicit', arguments: { message: 'task' } });
      const taskId = String(made.result!.taskId);
      const waiting = await getUntil(next, taskId, hasInputRequests);
      const [taskKey] = Object.keys(waiting.inputRequests as object);
      await send('tasks/update', {
        taskId,
        inputResponses: { [taskKey!]: { action: 'accept', content: { answer: 'both' } } },
      });
      const done = await getUntil(next, taskId, (task) => task.status === 'completed');
      expect(JSON.stringify(done.result)).toContain('both');

      const slow = await send('tools/call', { name: 'sleep', arguments: { ms: 30_000 } });
      expect((await send('tasks/cancel', { taskId: String(slow.result!.taskId) })).result).toMatchObject({
        resultType: 'complete',
      });
      expect((await send('tasks/get', { taskId: String(slow.result!.taskId) })).result).toMatchObject({
        status: 'cancelled',
      });
    });

    it('tasks/list without an identity lists the tasks of the caller’s own session, on its own replica only', async () => {
      const [onA, otherOnA, onB] = await Promise.all([clientOf(a), clientOf(a), clientOf(b)]);
      const mine = [
        await createTask(onA, 'echo', { text: 'one' }),
        await createTask(onA, 'echo', { text: 'two' }),
      ];
      const theirs = await createTask(onB, 'echo', { text: 'three' });

      const listed = async (peer: Peer) =>
        (await peer.client.experimental.tasks.listTasks()).tasks.map((task) => task.taskId);
      expect(await listed(onA)).toEqual(mine.map((task) => task.taskId));
      expect(await listed(onB)).toEqual([theirs.taskId]);
      expect(await listed(otherOnA)).toEqual([]);
      // Listing is not reading: with the id, any session on any replica still reads the task.
      expect((await resultOf(onB, mine[0]!.taskId)).content).toEqual([{ type: 'text', text: 'one' }]);
    });
  });

  describe('on one pair of replicas that identify alice and bob', () => {
    let a: Gateway;
    let b: Gateway;
    beforeAll(async () => {
      [a, b] = await replicaPair(freshPrefix(), TOKENS);
    });
    afterAll(() => Promise.all([a?.stop(), b?.stop()]));

    it('an identified caller’s extension task is theirs on every replica: another identity gets "not found" on B', async () => {
      const alice = { authorization: 'Bearer alice-token-0123456789' };
      const bob = { authorization: 'Bearer bob-token-0123456789ab' };
      const made = await modernRequest(
        a.url,
        'tools/call',
        { name: 'sleep', arguments: { ms: 30_000 } },
        EXTENSION_META,
        alice,
      );
      const taskId = String(made.result!.taskId);
      expect(
        (await modernRequest(b.url, 'tasks/get', { taskId }, EXTENSION_META, alice)).result,
      ).toMatchObject({ status: 'working' });
      for (const method of ['tasks/get', 'tasks/update', 'tasks/cancel']) {
        const refused = await modernRequest(
          b.url,
          method,
          { taskId, inputResponses: {} },
          EXTENSION_META,
          bob,
        );
        expect(refused.error).toMatchObject({
          code: -32602,
          message: expect.stringContaining('Task not found'),
        });
      }
      expect(
        (await modernRequest(b.url, 'tasks/cancel', { taskId }, EXTENSION_META, alice)).result,
      ).toMatchObject({ resultType: 'complete' });
    });

    it('keeps tasks bound to their identity across replicas (issue 7 on the Redis store)', async () => {
      const aliceOnA = await clientOf(a, 'alice-token-0123456789');
      const aliceOnB = await clientOf(b, 'alice-token-0123456789');
      const bobOnB = await clientOf(b, 'bob-token-0123456789ab');
      const task = await createTask(aliceOnA, 'sleep', { ms: 300 });
      const bobSees = await thrownBy(bobOnB.client.experimental.tasks.getTask(task.taskId));
      expect(bobSees).toBeInstanceOf(McpError);
      expect((bobSees as McpError).code).toBe(-32602);
      expect(await thrownBy(bobOnB.client.experimental.tasks.cancelTask(task.taskId))).toBeInstanceOf(
        McpError,
      );
      expect((await bobOnB.client.experimental.tasks.listTasks()).tasks).toEqual([]);
      const result = await resultOf(aliceOnB, task.taskId);
      expect(result.content).toEqual([{ type: 'text', text: 'slept 300 ms' }]);
    });
  });

  it("in front of a 2026-07-28 task server, B serves A's server's own task: tasks/get and tasks/cancel relayed to A, tasks/update reaches it", async () => {
    const prefix = freshPrefix();
    const V2 = [process.execPath, FIXTURES.v2Tasks];
    const [a, b] = await Promise.all([
      replica(prefix, redis!.url, [], V2),
      replica(prefix, redis!.url, [], V2),
    ]);
    const made = await modernRequest(a.url, 'tools/call', {
      name: 'ask',
      arguments: { question: 'colour?' },
    });
    expect(made.result).toMatchObject({ resultType: 'task' });
    const taskId = String(made.result!.taskId);
    const waiting = await getUntil(b.url, taskId, (task) => task.status === 'input_required');
    const [key, asked] = Object.entries(waiting.inputRequests as Record<string, { method: string }>)[0]!;
    expect(asked.method).toBe('elicitation/create');
    await modernRequest(b.url, 'tasks/update', {
      taskId,
      inputResponses: { [key]: { action: 'accept', content: { colour: 'teal' } } },
    });
    const done = await getUntil(b.url, taskId, (task) => task.status === 'completed');
    expect(JSON.stringify(done.result)).toContain('teal');

    const slow = await modernRequest(a.url, 'tools/call', { name: 'slow', arguments: { ms: 30_000 } });
    const slowId = String(slow.result!.taskId);
    expect((await modernRequest(b.url, 'tasks/cancel', { taskId: slowId })).result).toMatchObject({
      resultType: 'complete',
    });
    const cancelled = await modernRequest(a.url, 'tasks/get', { taskId: slowId });
    expect(cancelled.result).toMatchObject({ status: 'cancelled' });
  });

  it('a replica killed mid-task: another reports its task failed (executor lost) within the lease; restarted, it still serves the results it completed', async () => {
    const prefix = freshPrefix();
    const [a, b] = await Promise.all([replica(prefix), replica(prefix)]);
    const [onA, onB] = await Promise.all([clientOf(a), clientOf(b)]);
    const finished = await createTask(onA, 'echo', { text: 'kept' });
    expect((await resultOf(onA, finished.taskId)).content).toEqual([{ type: 'text', text: 'kept' }]);
    const doomed = await createTask(onA, 'sleep', { ms: 20_000, label: 'doomed' });
    const waiting = thrownBy(resultOf(onB, doomed.taskId));
    // B's tasks/result is blocking on the task before A goes.
    expect(await onB.client.experimental.tasks.getTask(doomed.taskId)).toMatchObject({ status: 'working' });

    a.child.kill('SIGKILL');
    const killedAt = performance.now();
    await a.exited;
    const error = await waiting;
    const took = performance.now() - killedAt;
    expect(error).toBeInstanceOf(McpError);
    expect(error).toMatchObject({ code: -32603 });
    expect((error as McpError).message).toContain(EXECUTOR_LOST);
    // The lease, then at most one sweep (every 375 ms here), with room for a loaded machine.
    expect(took).toBeLessThan(LEASE_MS + 1_500);
    expect(await onB.client.experimental.tasks.getTask(doomed.taskId)).toMatchObject({
      status: 'failed',
      statusMessage: EXECUTOR_LOST,
    });

    const restarted = await replica(prefix);
    const again = await clientOf(restarted);
    expect(await again.client.experimental.tasks.getTask(finished.taskId)).toMatchObject({
      status: 'completed',
    });
    expect((await resultOf(again, finished.taskId)).content).toEqual([{ type: 'text', text: 'kept' }]);
  });

  it('Redis restarted mid-run: clear errors while it is down, plain calls unaffected, then recovery without a restart', async (context) => {
    const server = await privateRedisServer(context);
    servers.push(server);
    const prefix = freshPrefix();
    const [a, b] = await Promise.all([replica(prefix, server.url), replica(prefix, server.url)]);
    const [onA, onB] = await Promise.all([clientOf(a), clientOf(b)]);
    const before = await createTask(onA, 'echo', { text: 'before' });

    await server.stop();
    await a.logged('task store: Redis unreachable');
    const started = performance.now();
    const refused = await thrownBy(createTask(onA, 'echo', { text: 'during' }));
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(refused).toMatchObject({
      code: STORE_UNAVAILABLE,
      message: expect.stringContaining(
        'Task store unavailable: retry later, or call the tool without a task',
      ),
    });
    expect(await thrownBy(onB.client.experimental.tasks.getTask(before.taskId))).toMatchObject({
      code: STORE_UNAVAILABLE,
    });
    expect((await callTool(onA, 'echo', { text: 'plain' })).content).toEqual([
      { type: 'text', text: 'plain' },
    ]);

    servers = [await startRedisServer(server.port)];
    await Promise.all([a.logged('Redis connection restored'), b.logged('Redis connection restored')]);
    const after = await createTask(onA, 'sleep', { ms: 300, label: 'after' });
    expect((await resultOf(onB, after.taskId)).content).toEqual([{ type: 'text', text: 'slept 300 ms' }]);
    // The restarted Redis kept nothing (no persistence): the old task is gone, said plainly.
    expect(await thrownBy(onB.client.experimental.tasks.getTask(before.taskId))).toMatchObject({
      code: -32602,
    });
  });

  it("issue 13.12: Redis paused (SIGSTOP) for longer than the lease fails nobody's tasks, and a result that came meanwhile is recorded", async (context) => {
    // Paused: a private server, even when REDIS_URL names a shared one.
    const server = await privateRedisServer(context);
    servers.push(server);
    const prefix = freshPrefix();
    const [a, b] = await Promise.all([replica(prefix, server.url), replica(prefix, server.url)]);
    const [onA, onB] = await Promise.all([clientOf(a), clientOf(b)]);
    const raw = new Redis(server.url);
    const pid = Number(/process_id:(\d+)/.exec(await raw.info('server'))![1]);
    await raw.quit();
    const finishing = await createTask(onA, 'sleep', { ms: 1_000, label: 'ends-during-the-pause' });
    const running = await createTask(onB, 'sleep', { ms: 60_000, label: 'outlives-the-pause' });
    process.kill(pid, 'SIGSTOP');
    try {
      // The pause's length is the fault under test: two leases (one whole lease more than the lease), while
      // the sweeps and A's result queue up.
      await new Promise((resolve) => setTimeout(resolve, 2 * LEASE_MS));
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    expect((await resultOf(onB, finishing.taskId)).content).toEqual([
      { type: 'text', text: 'slept 1000 ms' },
    ]);
    // Two leases on, nobody has judged B by the lease that ran out while Redis was paused.
    await new Promise((resolve) => setTimeout(resolve, 2 * LEASE_MS));
    expect(await onA.client.experimental.tasks.getTask(running.taskId)).toMatchObject({ status: 'working' });
    expect(a.stderr + b.stderr).not.toContain('executor lease lapsed');
    await onB.client.experimental.tasks.cancelTask(running.taskId);
  });

  it('Redis down at start-up does not keep taskgate from starting; it recovers once Redis is there', async (context) => {
    // A private server, stopped before taskgate starts and started again on its port afterwards.
    const probe = await privateRedisServer(context);
    await probe.stop();
    const { port, url } = probe;
    const a = await replica(freshPrefix(), url);
    expect(a.stderr).toContain('task store: Redis cannot be reached yet');
    const onA = await clientOf(a);
    expect((await callTool(onA, 'echo', { text: 'plain' })).content).toEqual([
      { type: 'text', text: 'plain' },
    ]);
    expect(await thrownBy(createTask(onA, 'echo', { text: 'x' }))).toMatchObject({ code: STORE_UNAVAILABLE });

    servers.push(await startRedisServer(port));
    await a.logged('Redis connection restored');
    const task = await createTask(onA, 'echo', { text: 'now' });
    expect((await resultOf(onA, task.taskId)).content).toEqual([{ type: 'text', text: 'now' }]);
  });

  it('an operator (auth.rules tasks: all) on B reads and cancels the tasks another caller made on A, in both eras; others get "not found"', async () => {
    const prefix = freshPrefix();
    const config = exampleWith([
      'auth:',
      '  rules:',
      "    - { subjects: ['*'], tools: { allow: ['*'] } }",
      '    - { subjects: [olga], tasks: all }',
    ]);
    const flags = [...TOKENS, '--auth-token', 'olga-token-0123456789ab=olga'];
    const [a, b] = await Promise.all([
      replica(prefix, redis!.url, flags, LEGACY, config),
      replica(prefix, redis!.url, flags, LEGACY, config),
    ]);
    const [alice, bob, olga] = [
      'alice-token-0123456789',
      'bob-token-0123456789ab',
      'olga-token-0123456789ab',
    ].map((token) => ({ authorization: `Bearer ${token}` }));
    const legacyMade = await createTask(await clientOf(a, 'alice-token-0123456789'), 'sleep', { ms: 30_000 });
    const modernMade = String(
      (
        await modernRequest(
          a.url,
          'tools/call',
          { name: 'sleep', arguments: { ms: 30_000 } },
          EXTENSION_META,
          alice,
        )
      ).result!.taskId,
    );
    const olgaOnB = await clientOf(b, 'olga-token-0123456789ab');
    const bobOnB = await clientOf(b, 'bob-token-0123456789ab');
    for (const taskId of [legacyMade.taskId, modernMade]) {
      expect((await olgaOnB.client.experimental.tasks.getTask(taskId)).status).toBe('working');
      expect(
        (await modernRequest(b.url, 'tasks/get', { taskId }, EXTENSION_META, olga)).result,
      ).toMatchObject({
        status: 'working',
      });
      expect(((await thrownBy(bobOnB.client.experimental.tasks.getTask(taskId))) as McpError).code).toBe(
        -32602,
      );
      expect((await modernRequest(b.url, 'tasks/get', { taskId }, EXTENSION_META, bob)).error).toMatchObject({
        code: -32602,
        message: expect.stringContaining('Task not found'),
      });
    }
    expect((await olgaOnB.client.experimental.tasks.cancelTask(legacyMade.taskId)).status).toBe('cancelled');
    expect(
      (await modernRequest(b.url, 'tasks/cancel', { taskId: modernMade }, EXTENSION_META, olga)).result,
    ).toMatchObject({ resultType: 'complete' });
    await b.logged('"event":"task.others"');
  });

  it('in front of a 2026-07-28 task server, an operator on B reads and cancels another caller\'s server task on A (relayed there); others get "not found"', async () => {
    const prefix = freshPrefix();
    const config = exampleWith([
      'auth:',
      '  rules:',
      "    - { subjects: ['*'], tools: { allow: ['*'] } }",
      '    - { subjects: [olga], tasks: all }',
    ]);
    const flags = [...TOKENS, '--auth-token', 'olga-token-0123456789ab=olga'];
    const V2 = [process.execPath, FIXTURES.v2Tasks];
    const [a, b] = await Promise.all([
      replica(prefix, redis!.url, flags, V2, config),
      replica(prefix, redis!.url, flags, V2, config),
    ]);
    const [alice, bob, olga] = [
      'alice-token-0123456789',
      'bob-token-0123456789ab',
      'olga-token-0123456789ab',
    ].map((token) => ({ authorization: `Bearer ${token}` }));
    const slow = await modernRequest(
      a.url,
      'tools/call',
      { name: 'slow', arguments: { ms: 30_000 } },
      EXTENSION_META,
      alice,
    );
    expect(slow.result).toMatchObject({ resultType: 'task' });
    const taskId = String(slow.result!.taskId);
    expect((await modernRequest(b.url, 'tasks/get', { taskId }, EXTENSION_META, olga)).result).toMatchObject({
      status: 'working',
    });
    expect((await modernRequest(b.url, 'tasks/get', { taskId }, EXTENSION_META, bob)).error).toMatchObject({
      code: -32602,
      message: expect.stringContaining('Task not found'),
    });
    expect(
      (await modernRequest(b.url, 'tasks/cancel', { taskId }, EXTENSION_META, olga)).result,
    ).toMatchObject({
      resultType: 'complete',
    });
    expect((await modernRequest(a.url, 'tasks/get', { taskId }, EXTENSION_META, alice)).result).toMatchObject(
      {
        status: 'cancelled',
      },
    );
  });
});

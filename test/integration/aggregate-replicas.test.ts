/**
 * Several servers behind each of two taskgate replicas sharing one Redis (issue 32): a task that taskgate
 * runs for server "b" through replica 1 is fetched, awaited and listed through replica 2 by the same
 * identity, under the same prefixed id, once; a task server "a" runs itself (each replica has its own "a")
 * is fetched, awaited, cancelled and listed through replica 2 too (its input asked of a 2025 client there,
 * or shown to a 2026-07-28 client there and answered by it, and withdrawn from a client that stops
 * waiting), and another identity gets there what it gets for an id nobody gave out; and the client hears of
 * such a task before that server's status notifications of it, however long Redis takes to post it; and a
 * listing past the tasks of a replica that died goes a page at a time.
 *
 * Most tests share two replicas (one key prefix), each test apart by identities of its own; a test that
 * kills a replica, needs server "b" one process per session, another config or a Redis of its own, or reads
 * a replica's whole log starts its own.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  RELATED_TASK_META_KEY,
  type ElicitRequest,
  type JSONRPCMessage,
  type Task,
} from '@modelcontextprotocol/sdk/types.js';
import { Redis } from 'ioredis';
import { afterAll, afterEach, describe, expect, it, onTestFinished, vi } from 'vitest';
import { HELD_AT_MOST } from '../../src/aggregate/in-order.js';
import { CheckedTransport } from '../helpers/checked-transport.js';
import { httpTransport } from '../helpers/http-client.js';
import { EXTENSION_META, modernRequest } from '../helpers/modern-raw.js';
import { mcpErrorOf, thrownBy } from '../helpers/thrown.js';
import { freshPrefix, privateRedisServer, redisForTests } from '../helpers/redis.js';
import { FIXTURES, Gateway, TASK_AWARE } from '../helpers/taskgate.js';

const redis = await redisForTests();
const dir = mkdtempSync(join(tmpdir(), 'taskgate-aggregate-replicas-'));
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await redis?.stop();
});

const SECRET = 'the cursor secret of both replicas in this test';
const ALICE = 'alice-token-0123456789abcdef';
const CONFIG = join(dir, 'two.json');
writeFileSync(
  CONFIG,
  JSON.stringify({
    upstreams: {
      a: { command: process.execPath, args: [FIXTURES.native] },
      b: { command: process.execPath, args: [FIXTURES.legacy] },
    },
  }),
);
/**
 * CONFIG with server "b", which the tests sharing two replicas only list, as one process per replica
 * (`sharing: shared`): each of their sessions starts only its own "a".
 */
const SHARED = join(dir, 'shared.json');
writeFileSync(
  SHARED,
  JSON.stringify({
    upstreams: {
      a: { command: process.execPath, args: [FIXTURES.native] },
      b: { command: process.execPath, args: [FIXTURES.legacy], sharing: 'shared' },
    },
  }),
);
/** Server "a" minting task ids "1", "2", …: each of its processes the same ones. */
const SEQUENTIAL = join(dir, 'sequential.json');
writeFileSync(
  SEQUENTIAL,
  JSON.stringify({
    upstreams: {
      a: { command: process.execPath, args: [FIXTURES.native], env: { FIXTURE_TASK_IDS: 'sequential' } },
    },
  }),
);

/**
 * Tokens of identities every replica accepts beside ALICE's, each given to one test only: the tests
 * that share two replicas (and so their key prefix) see only their own tasks in a listing.
 */
const TOKENS = Array.from({ length: 24 }, (_, n) => `caller-${n}-token-0123456789abcdef`);
let tokensGiven = 0;
const freshToken = (): string => {
  const token = TOKENS[tokensGiven++];
  if (token === undefined) throw new Error(`more than ${TOKENS.length} identities asked for`);
  return token;
};

let gateways: Gateway[] = [];
let clients: { client: Client; transport: CheckedTransport; shared: boolean }[] = [];
afterEach(async () => {
  const [stopped, ended] = [gateways, clients];
  [gateways, clients] = [[], []];
  // The sessions of the shared replicas end with their test, and their servers with them.
  const terminated = await Promise.allSettled(
    ended
      .filter(({ shared }) => shared)
      .map(({ transport }) => (transport.inner as StreamableHTTPClientTransport).terminateSession()),
  );
  await Promise.all(ended.map(({ client }) => client.close()));
  await Promise.all(stopped.map((gateway) => gateway.stop()));
  for (const { transport } of ended) expect(transport.violations).toEqual([]);
  expect(terminated.filter(({ status }) => status === 'rejected')).toEqual([]);
});

/**
 * The two replicas (one key prefix) of the tests that need no fresh process, started by the first of them
 * and stopped when the file ends; each test is given an identity of its own (another one: `freshToken()`).
 */
const sharedGateways: Gateway[] = [];
let sharedStart: Promise<[Gateway, Gateway]> | undefined;
afterAll(async () => {
  await Promise.all(sharedGateways.map((gateway) => gateway.stop()));
});
async function sharedReplicas(): Promise<{ first: Gateway; second: Gateway; token: string }> {
  sharedStart ??= (async () => {
    const prefix = freshPrefix();
    for (const gateway of sharedGateways.splice(0)) await gateway.stop();
    for (let started = 0; started < 2; started++)
      sharedGateways.push(await startReplica(prefix, { config: SHARED }));
    return [sharedGateways[0]!, sharedGateways[1]!] as [Gateway, Gateway];
  })();
  // One that did not start is started afresh by the next test.
  const [first, second] = await sharedStart.catch((error: unknown) => {
    sharedStart = undefined;
    throw error;
  });
  return { first, second, token: freshToken() };
}

async function replica(prefix: string, options: { config?: string; url?: string } = {}): Promise<Gateway> {
  const gateway = await startReplica(prefix, options);
  gateways.push(gateway);
  return gateway;
}

function startReplica(prefix: string, { config = CONFIG, url = redis!.url } = {}): Promise<Gateway> {
  return Gateway.start(
    [],
    [
      '--config',
      config,
      '--store',
      url,
      '--store-key-prefix',
      prefix,
      '--auth-token',
      `${ALICE}=alice`,
      ...TOKENS.flatMap((token, n) => ['--auth-token', `${token}=caller-${n}`]),
    ],
    { TASKGATE_STORE_CURSOR_SECRET: SECRET },
  );
}

async function alice(gateway: Gateway, token = ALICE): Promise<Client> {
  return (await connected(gateway, token)).client;
}

async function connected(gateway: Gateway, token = ALICE): Promise<(typeof clients)[number]> {
  const transport = new CheckedTransport(
    httpTransport(gateway.url, { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
  );
  const client = new Client({ name: 'taskgate-test', version: '1.0.0' }, { capabilities: TASK_AWARE });
  await client.connect(transport);
  const entry = { client, transport, shared: sharedGateways.includes(gateway) };
  clients.push(entry);
  return entry;
}

describe.skipIf(!redis)('several servers behind two replicas on one Redis (issue 32)', () => {
  it('fetches through replica 2 a task on server b started through replica 1, and lists it once', async () => {
    const prefix = freshPrefix();
    const [first, second] = [await replica(prefix), await replica(prefix)];
    const there = await alice(first);
    const here = await alice(second);
    const { task } = await there.request(
      {
        method: 'tools/call',
        params: { name: 'b__echo', arguments: { text: 'across replicas' }, task: {} },
      },
      CreateTaskResultSchema,
    );
    expect(task.taskId).toMatch(/^b__/);
    const tasks = here.experimental.tasks;
    const result = await tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.content).toEqual([{ type: 'text', text: 'across replicas' }]);
    expect(await tasks.getTask(task.taskId)).toMatchObject({ taskId: task.taskId, status: 'completed' });
    const listed = (await tasks.listTasks()).tasks.map(({ taskId }) => taskId);
    expect(listed).toEqual([task.taskId]);
  });
  it('serves through replica 2 a task server a runs itself, made through replica 1: get, result, cancel', async () => {
    const { first, second, token } = await sharedReplicas();
    const there = await alice(first, token);
    const here = await alice(second, token);
    const made = async (args: Record<string, unknown>): Promise<string> => {
      const { task } = await there.request(
        { method: 'tools/call', params: { name: 'a__sleep', arguments: args, task: {} } },
        CreateTaskResultSchema,
      );
      return task.taskId;
    };
    const short = await made({ ms: 300 });
    expect(short).toMatch(/^a__/);
    const tasks = here.experimental.tasks;
    expect(await tasks.getTask(short)).toMatchObject({ taskId: short });
    const result = await tasks.getTaskResult(short, CallToolResultSchema);
    expect(result.content).toEqual([{ type: 'text', text: 'slept 300 ms' }]);
    expect(await tasks.getTask(short)).toMatchObject({ taskId: short, status: 'completed' });

    const long = await made({ ms: 60_000, label: 'cancelled through replica 2' });
    expect(await tasks.cancelTask(long)).toMatchObject({ taskId: long, status: 'cancelled' });
    expect(await there.experimental.tasks.getTask(long)).toMatchObject({ status: 'cancelled' });
    const cancelled = await there.callTool({ name: 'a__cancelled-calls', arguments: {} });
    expect(cancelled.content).toEqual([
      { type: 'text', text: JSON.stringify(['cancelled through replica 2']) },
    ]);
  });

  it.each(['replica 2', 'another session of replica 1'])(
    'carries to a client of %s the input a task server a runs itself asks for on replica 1, and its answer back',
    async (where) => {
      const { first, second, token } = await sharedReplicas();
      const there = await alice(first, token);
      const here = await alice(where === 'replica 2' ? second : first, token);
      const askedThere: unknown[] = [];
      there.setRequestHandler(ElicitRequestSchema, (request) => {
        askedThere.push(request.params);
        return { action: 'decline' };
      });
      const askedHere: ElicitRequest['params'][] = [];
      here.setRequestHandler(ElicitRequestSchema, (request) => {
        askedHere.push(request.params);
        return { action: 'accept', content: { answer: 'answered through replica 2' } };
      });
      const { task } = await there.request(
        { method: 'tools/call', params: { name: 'a__elicit', arguments: { message: 'who?' }, task: {} } },
        CreateTaskResultSchema,
      );
      const result = await here.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
      expect(result.content).toEqual([
        {
          type: 'text',
          text: JSON.stringify({ action: 'accept', content: { answer: 'answered through replica 2' } }),
        },
      ]);
      expect(askedHere).toMatchObject([
        { message: 'who?', _meta: { [RELATED_TASK_META_KEY]: { taskId: task.taskId } } },
      ]);
      expect(askedThere).toEqual([]);
      expect(await there.experimental.tasks.getTask(task.taskId)).toMatchObject({ status: 'completed' });
    },
  );

  it('carries to a 2026-07-28 client on replica 2 the input a task server a runs itself asks for on replica 1, and its answer back', async () => {
    const { first, second, token } = await sharedReplicas();
    const request = (gateway: Gateway, method: string, params: Record<string, unknown>) =>
      modernRequest(gateway.url, method, params, EXTENSION_META, { authorization: `Bearer ${token}` });
    const made = await request(first, 'tools/call', { name: 'a__elicit', arguments: { message: 'who?' } });
    expect(made.result).toMatchObject({ resultType: 'task' });
    const taskId = String(made.result!.taskId);
    /** tasks/get through replica 2 until `done` holds of the task, a bounded number of times. */
    const getUntil = async (done: (task: Record<string, unknown>) => boolean) => {
      let last: unknown;
      for (let attempt = 0; attempt < 200; attempt++) {
        const got = await request(second, 'tasks/get', { taskId });
        expect(got.error).toBeUndefined();
        if (done(got.result!)) return got.result!;
        last = got.result;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      throw new Error(`task ${taskId} never got there; last: ${JSON.stringify(last)}`);
    };
    const waiting = await getUntil((task) => Object.keys((task.inputRequests as object) ?? {}).length > 0);
    expect(waiting.status).toBe('input_required');
    const posted = Object.entries(waiting.inputRequests as Record<string, unknown>);
    expect(posted).toMatchObject([
      [expect.any(String), { method: 'elicitation/create', params: { message: 'who?' } }],
    ]);
    const update = await request(second, 'tasks/update', {
      taskId,
      inputResponses: {
        [posted[0]![0]]: { action: 'accept', content: { answer: 'answered through replica 2' } },
      },
    });
    expect(update.result).toMatchObject({ resultType: 'complete' });
    const done = await getUntil((task) => task.status !== 'input_required' && task.status !== 'working');
    expect(done).toMatchObject({
      status: 'completed',
      result: {
        content: [
          {
            type: 'text',
            text: JSON.stringify({ action: 'accept', content: { answer: 'answered through replica 2' } }),
          },
        ],
      },
    });
  });

  it('tells the server on replica 1 at once that the session of replica 2 it asked for input ended', async () => {
    const { first, second, token } = await sharedReplicas();
    const there = await alice(first, token);
    const here = await alice(second, token);
    let asked!: () => void;
    const askedHere = new Promise<void>((resolve) => (asked = resolve));
    // Asked, it never answers: its session is ended instead.
    here.setRequestHandler(ElicitRequestSchema, () => {
      asked();
      return new Promise<never>(() => undefined);
    });
    const { task } = await there.request(
      { method: 'tools/call', params: { name: 'a__elicit', arguments: { message: 'who?' }, task: {} } },
      CreateTaskResultSchema,
    );
    const waiting = mcpErrorOf(here.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema));
    await askedHere;
    const { transport } = clients.find(({ client }) => client === here)!;
    await (transport.inner as StreamableHTTPClientTransport).terminateSession();
    await here.close();
    await waiting;
    await vi.waitFor(
      async () =>
        expect(await there.experimental.tasks.getTask(task.taskId)).toMatchObject({ status: 'failed' }),
      { timeout: 10_000, interval: 100 },
    );
  });

  it('withdraws from the client on replica 2 the input carried to it once it stops waiting for the result', async () => {
    const { first, second, token } = await sharedReplicas();
    const there = await alice(first, token);
    const here = await alice(second, token);
    let asked!: (signal: AbortSignal) => void;
    const askedHere = new Promise<AbortSignal>((resolve) => (asked = resolve));
    // Asked, it never answers: it stops waiting for the result instead.
    here.setRequestHandler(ElicitRequestSchema, (_request, extra) => {
      asked(extra.signal);
      return new Promise<never>(() => undefined);
    });
    const { task } = await there.request(
      { method: 'tools/call', params: { name: 'a__elicit', arguments: { message: 'who?' }, task: {} } },
      CreateTaskResultSchema,
    );
    const stop = new AbortController();
    const waiting = thrownBy(
      here.request({ method: 'tasks/result', params: { taskId: task.taskId } }, CallToolResultSchema, {
        signal: stop.signal,
      }),
    );
    const elicitation = await askedHere;
    expect(elicitation.aborted).toBe(false);
    stop.abort('no longer waiting');
    await waiting;
    // The SDK aborts a request's handler when notifications/cancelled names it.
    await vi.waitFor(() => expect(elicitation.aborted).toBe(true), { timeout: 10_000, interval: 50 });
  });

  it('lists through replica 2 a task server a runs itself, made through replica 1, once', async () => {
    const { first, second, token } = await sharedReplicas();
    const there = await alice(first, token);
    const here = await alice(second, token);
    const { task } = await there.request(
      { method: 'tools/call', params: { name: 'a__echo', arguments: { text: 'listed' }, task: {} } },
      CreateTaskResultSchema,
    );
    for (const client of [here, there]) {
      const listed = (await client.experimental.tasks.listTasks()).tasks.map(({ taskId }) => taskId);
      expect(listed).toEqual([task.taskId]);
    }
    const bobs = await alice(second, freshToken());
    expect((await bobs.experimental.tasks.listTasks()).tasks).toEqual([]);
  });

  it('lists through replica 2, page after page behind its cursor, more than a page of tasks server a runs itself, made through replica 1, each once', async () => {
    const { first, second, token } = await sharedReplicas();
    const there = await alice(first, token);
    const here = await alice(second, token);
    const made: string[] = [];
    // More than the 100 a page names of them; ten calls at a time.
    for (let batch = 0; batch < 11; batch++) {
      const tasks = await Promise.all(
        Array.from({ length: 10 }, (_, at) =>
          there.request(
            {
              method: 'tools/call',
              params: { name: 'a__echo', arguments: { text: `${batch}.${at}` }, task: {} },
            },
            CreateTaskResultSchema,
          ),
        ),
      );
      made.push(...tasks.map(({ task }) => task.taskId));
    }
    const listed: string[] = [];
    let pages = 0;
    for (let cursor: string | undefined; pages === 0 || cursor !== undefined; pages++) {
      const page = await here.experimental.tasks.listTasks(cursor);
      listed.push(...page.tasks.map(({ taskId }) => taskId));
      cursor = page.nextCursor;
    }
    expect(pages).toBeGreaterThan(1);
    expect(listed.toSorted()).toEqual(made.toSorted());
  });

  it('lists through replica 2, a page at a time, more than a page of tasks of a replica that died: each page waits out one page of relays, not the whole index', async () => {
    const prefix = freshPrefix();
    const [first, second] = [await replica(prefix), await replica(prefix)];
    const there = await alice(first);
    const here = await alice(second);
    for (let batch = 0; batch < 11; batch++) {
      await Promise.all(
        Array.from({ length: 10 }, (_, at) =>
          there.request(
            {
              method: 'tools/call',
              params: { name: 'a__echo', arguments: { text: `${batch}.${at}` }, task: {} },
            },
            CreateTaskResultSchema,
          ),
        ),
      );
    }
    first.child.kill('SIGKILL');
    await first.exited;
    // Every relay to replica 1 now waits its whole time: the first page, naming none, says where to go on.
    const page = await here.experimental.tasks.listTasks();
    expect(page.tasks).toEqual([]);
    expect(page.nextCursor).toBeDefined();
    const last = await here.experimental.tasks.listTasks(page.nextCursor);
    expect(last).toMatchObject({ tasks: [] });
    expect(last.nextCursor).toBeUndefined();
  });

  it('sends a plain result bigger than what may wait behind a held answer without warning that an answer went before its task was posted', async () => {
    const first = await replica(freshPrefix());
    const there = await alice(first);
    const bytes = HELD_AT_MOST.bytes + 1024;
    const big = await there.callTool({ name: 'a__large', arguments: { bytes } });
    expect(big.content).toEqual([{ type: 'text', text: 'x'.repeat(bytes) }]);
    // A line logged after the answer went: the warning, had there been one, was logged before it.
    await thrownBy(there.callTool({ name: 'a__crash', arguments: {} }));
    await first.logged('upstream server exited with code 3');
    expect(first.stderr).not.toContain('goes before its task is posted');
  });

  it('tells apart the tasks two processes of server a both numbered 1, one per replica, and serves each where it runs', async () => {
    const prefix = freshPrefix();
    const [first, second] = [
      await replica(prefix, { config: SEQUENTIAL }),
      await replica(prefix, { config: SEQUENTIAL }),
    ];
    const there = await alice(first);
    const here = await alice(second);
    const call = async (
      client: Client,
      args: Record<string, unknown>,
      tool = 'a__sleep',
    ): Promise<string> => {
      const { task } = await client.request(
        { method: 'tools/call', params: { name: tool, arguments: args, task: {} } },
        CreateTaskResultSchema,
      );
      return task.taskId;
    };
    const long = await call(there, { ms: 60_000, label: 'cancelled through replica 2' });
    const short = await call(here, { text: 'made through replica 2' }, 'a__echo');
    expect(long).not.toBe(short);
    // A session of replica 2 of its own, whose server knows neither task.
    const third = (await alice(second)).experimental.tasks;
    expect(await third.getTask(long)).toMatchObject({ taskId: long, status: 'working' });
    const result = await third.getTaskResult(short, CallToolResultSchema);
    expect(result.content).toEqual([{ type: 'text', text: 'made through replica 2' }]);
    const listed = (await third.listTasks()).tasks.map(({ taskId }) => taskId);
    expect(listed.toSorted()).toEqual([long, short].toSorted());
    // Asked and cancelled through the replica whose own server has a task 1 too: the one on replica 1.
    expect(await here.experimental.tasks.getTask(long)).toMatchObject({ taskId: long, status: 'working' });
    expect(await here.experimental.tasks.cancelTask(long)).toMatchObject({
      taskId: long,
      status: 'cancelled',
    });
    expect(await here.experimental.tasks.getTask(short)).toMatchObject({
      taskId: short,
      status: 'completed',
    });
    const cancelled = await there.callTool({ name: 'a__cancelled-calls', arguments: {} });
    expect(cancelled.content).toEqual([
      { type: 'text', text: JSON.stringify(['cancelled through replica 2']) },
    ]);
  });

  it('answers another identity on replica 2 as for an id nobody gave out, for a task server a runs itself', async () => {
    const { first, second, token } = await sharedReplicas();
    const there = await alice(first, token);
    const bob = await alice(second, freshToken());
    const { task } = await there.request(
      { method: 'tools/call', params: { name: 'a__sleep', arguments: { ms: 60_000 }, task: {} } },
      CreateTaskResultSchema,
    );
    const unknown = 'a__' + '0'.repeat(36);
    const answers = async (taskId: string): Promise<unknown[]> =>
      Promise.all(
        [
          bob.experimental.tasks.getTask(taskId),
          bob.experimental.tasks.getTaskResult(taskId, CallToolResultSchema),
          bob.experimental.tasks.cancelTask(taskId),
        ].map(async (asked) => {
          const error = await mcpErrorOf(asked);
          return { code: error.code, message: error.message.replace(taskId.slice('a__'.length), '<id>') };
        }),
      );
    expect(await answers(task.taskId)).toEqual(await answers(unknown));
    expect(await there.experimental.tasks.getTask(task.taskId)).toMatchObject({ status: 'working' });
  });

  it("gives the client a task server a runs itself before that server's status notification of it, while Redis is slow to post it", async (context) => {
    // Paused: a private server, even when REDIS_URL names a shared one.
    const own = await privateRedisServer(context);
    onTestFinished(() => own.stop());
    const { client, transport } = await connected(await replica(freshPrefix(), { url: own.url }));
    const pauser = new Redis(own.url);
    onTestFinished(async () => void (await pauser.quit()));
    // Writes wait (the post of the task among them), reads go on; the task's work ends at once.
    const PAUSE_MS = 1_500;
    await pauser.call('CLIENT', 'PAUSE', String(PAUSE_MS), 'WRITE');
    const paused = performance.now();
    const { task } = await client.request(
      { method: 'tools/call', params: { name: 'a__echo', arguments: { text: 'told first' }, task: {} } },
      CreateTaskResultSchema,
    );
    // The answer waited out the pause: its post was held, not done before it (else nothing is tested here).
    expect(performance.now() - paused).toBeGreaterThanOrEqual(PAUSE_MS - 100);
    const isStatus = (message: JSONRPCMessage): boolean =>
      'method' in message &&
      message.method === 'notifications/tasks/status' &&
      message.params?.taskId === task.taskId;
    await transport.received.waitFor(isStatus, `a status notification of ${task.taskId}`);
    const received = transport.received.items;
    const answer = received.findIndex(
      (message) => 'result' in message && (message.result.task as Task | undefined)?.taskId === task.taskId,
    );
    expect(answer).toBeGreaterThanOrEqual(0);
    expect(received.findIndex(isStatus)).toBeGreaterThan(answer);
  });
});

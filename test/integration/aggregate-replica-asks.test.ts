/**
 * The tasks/* requests a session of one replica asks of the replica holding a server's own task (issue 28,
 * src/aggregate/replica-tasks.ts), driven in process where the HTTP front cannot reach: that front refuses
 * an id already in flight, so two asks sent with one id, and the cancellation that names it, come here
 * straight from a raw client handing the aggregator values. Two RedisTaskStores on one real Redis are the
 * two replicas (each with its own ReplicaTasks on the store's real input board), each session a real
 * Aggregator before a taskgate Session and a real SDK server of its own; the tasks are made through
 * replica 1 by an SDK Client and asked about through replica 2, whose server never heard of them.
 */
import { randomBytes } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { pino } from 'pino';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { Aggregator } from '../../src/aggregate/aggregator.js';
import { memberSessionOptions } from '../../src/aggregate/members.js';
import { Names, namesOf, ToolFilter } from '../../src/aggregate/names.js';
import { ReplicaTasks } from '../../src/aggregate/replica-tasks.js';
import { resolveConfig } from '../../src/config/load.js';
import { Policy } from '../../src/config/policy.js';
import type { Request, Response } from '../../src/protocol/messages.js';
import { Session } from '../../src/session/session.js';
import { ValueClient } from '../../src/session/value-client.js';
import { RedisTaskStore } from '../../src/tasks/redis-store.js';
import type { Channel } from '../../src/transport/channel.js';
import { memoryChannelPair } from '../../src/transport/memory-channel.js';
import { ChannelTransport } from '../helpers/channel-transport.js';
import { CheckedTransport } from '../helpers/checked-transport.js';
import { heldTool, type HeldTool } from '../helpers/held-call.js';
import { fakeServer, textResult } from '../helpers/in-process.js';
import { Inbox } from '../helpers/inbox.js';
import { freshPrefix, redisForTests } from '../helpers/redis.js';

const redis = await redisForTests();
afterAll(() => redis?.stop());

const logger = pino({ level: 'silent' });
const config = resolveConfig({});
const names = namesOf(config);
const ALICE = { identity: 'alice', subject: 'alice' };
const TASK_CLIENT = { tasks: { list: {}, cancel: {}, requests: {} } };
/** How long an ask that was withdrawn or drained may take to stop: one relay to the other replica. */
const STOPS_WITHIN_MS = 5_000;

/** One replica: its store (and input board) on the shared Redis, and the ReplicaTasks on that board. */
interface Replica {
  store: RedisTaskStore;
  tasks: ReplicaTasks;
}

/** One session of a replica: the aggregator before server "a" (a real SDK server) through its Session. */
interface ReplicaSession {
  aggregator: Aggregator;
  tool: HeldTool;
}

const opened: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of opened.splice(0).reverse()) await close();
});

async function openReplica(prefix: string, secret: Buffer): Promise<Replica> {
  const store = new RedisTaskStore({
    url: redis!.url,
    keyPrefix: prefix,
    cursorSecret: secret,
    maxTasks: 100,
    maxResultBytes: 1_000_000,
  });
  await store.ready(5_000);
  const tasks = new ReplicaTasks(store.inputs, logger);
  opened.push(async () => {
    tasks.close();
    await store.close();
  });
  return { store, tasks };
}

/** A session of alice's on `replica` serving `client`, as src/aggregate/http-sessions.ts opens one. */
async function openSession(replica: Replica, client: Channel, id: string): Promise<ReplicaSession> {
  const serverTasks = replica.tasks.session(ALICE, names);
  const tool = heldTool('work', 'optional');
  const { server } = fakeServer([tool]);
  const toServer = memoryChannelPair();
  await server.connect(new ChannelTransport(toServer.b));
  const toSession = memoryChannelPair();
  const options = memberSessionOptions(
    {
      id: `${id}/a`,
      ...ALICE,
      config,
      policy: new Policy(config),
      store: replica.store,
      logger,
      lingerForTasks: true,
      sightings: {
        upstreamTask: (task) => {
          const taskId = (task as { taskId?: unknown }).taskId;
          if (typeof taskId === 'string') serverTasks.sighted('a', taskId);
        },
        upstreamTaskForgotten: (taskId) => serverTasks.forgotten('a', taskId),
        upstreamProgress: () => undefined,
        progress: () => undefined,
      },
    },
    'a',
    (name) => names.outer('a', true, name),
    config,
  );
  const session = new Session(toSession.b, toServer.a, options, {
    upstreamGone: () => undefined,
    closed: () => undefined,
  });
  session.start();
  const aggregator = new Aggregator(
    client,
    [
      {
        name: 'a',
        prefixed: true,
        filter: new ToolFilter(undefined, undefined),
        channel: toSession.a,
        description: 'a',
        close: () => session.close(),
      },
    ],
    {
      names: new Names('__'),
      logger,
      version: '0.0.0-test',
      closed: () => undefined,
      graceMs: 1_000,
      listChangedWindowMs: 50,
      serverTasks,
    },
  );
  aggregator.start();
  opened.push(async () => {
    tool.releaseAll();
    await aggregator.close();
    await server.close();
  });
  return { aggregator, tool };
}

/** Replica 1's session with an SDK Client, which makes the tasks. */
async function maker(
  replica: Replica,
): Promise<{ client: Client; tool: HeldTool; transport: CheckedTransport }> {
  const front = memoryChannelPair();
  const { tool } = await openSession(replica, front.b, 'maker');
  const transport = new CheckedTransport(new ChannelTransport(front.a));
  const client = new Client({ name: 'maker', version: '1.0.0' }, { capabilities: TASK_CLIENT });
  await client.connect(transport);
  opened.push(() => client.close());
  return { client, tool, transport };
}

/** Replica 2's session with a raw client handing its aggregator values (it may re-use an id in flight). */
async function asker(replica: Replica) {
  const values = new ValueClient();
  const session = await openSession(replica, values, 'asker');
  const answers = new Inbox<Response>();
  values.listen({
    message: (read) => {
      if (read.ok && read.message.kind === 'response') answers.push(read.message.msg);
    },
    closed: () => undefined,
  });
  const request = (id: string | number, method: string, params: Record<string, unknown>): void =>
    session.aggregator.take({ jsonrpc: '2.0', id, method, params } as Request);
  request('init', 'initialize', {
    protocolVersion: '2025-11-25',
    capabilities: TASK_CLIENT,
    clientInfo: { name: 'asker', version: '1.0.0' },
  });
  await answers.waitFor((answer) => answer.id === 'init', 'the answer to initialize');
  session.aggregator.takeMessage({ jsonrpc: '2.0', method: 'notifications/initialized' });
  return {
    ...session,
    answers,
    request,
    cancel: (requestId: string | number): void =>
      session.aggregator.takeMessage({
        jsonrpc: '2.0',
        method: 'notifications/cancelled',
        params: { requestId, reason: 'the test' },
      }),
  };
}

interface Ask {
  method: string;
  taskId: string;
  ended: Promise<Response | undefined>;
}

/** Each ask replica 2's sessions make of the replica holding a task, as it is made, and how it ended. */
function watchAsks(replica: Replica): Inbox<Ask> {
  const asks = new Inbox<Ask>();
  const elsewhere = replica.tasks.elsewhere.bind(replica.tasks);
  vi.spyOn(replica.tasks, 'elsewhere').mockImplementation((...args) => {
    const ended = elsewhere(...args);
    asks.push({ method: args[0].method, taskId: args[1], ended });
    return ended;
  });
  return asks;
}

/** Settles with the ask's end, or rejects once `withinMs` passed without one. */
function endOf<T>(ended: Promise<T>, what: string, withinMs = STOPS_WITHIN_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not stop within ${withinMs} ms`)), withinMs);
  });
  return Promise.race([ended, late]).finally(() => clearTimeout(timer));
}

describe.skipIf(!redis)(
  "a replica's tasks/* asks about a server's own task held by another (issue 28)",
  () => {
    const twoReplicas = async () => {
      const [prefix, secret] = [freshPrefix(), randomBytes(32)];
      const [first, second] = [await openReplica(prefix, secret), await openReplica(prefix, secret)];
      const made = await maker(first);
      /** A task of server "a" made through replica 1, working until the test answers its call. */
      const task = async (label: string) => {
        const { task } = await made.client.request(
          { method: 'tools/call', params: { name: 'a__work', arguments: { label }, task: {} } },
          CreateTaskResultSchema,
        );
        const call = await made.tool.calls.waitFor((call) => call.args.label === label, `the call ${label}`);
        return {
          id: task.taskId,
          /** Its call answers `text`: the task's result, once replica 1's client reads it. */
          finish: (text: string) => {
            call.answer(textResult(text));
            return made.client.request(
              { method: 'tasks/result', params: { taskId: task.taskId } },
              CallToolResultSchema,
            );
          },
        };
      };
      return { first, second, made, task };
    };

    it('a cancellation withdraws the first of two asks sent with one id, the next one the other', async () => {
      const { second, made, task } = await twoReplicas();
      const [one, two] = [await task('one'), await task('two')];
      const here = await asker(second);
      const asks = watchAsks(second);

      here.request(7, 'tasks/result', { taskId: one.id });
      const first = await asks.waitFor((ask) => ask.taskId === one.id, 'the ask about task one');
      here.request(7, 'tasks/result', { taskId: two.id });
      await asks.waitFor((ask) => ask.taskId === two.id, 'the ask about task two');

      here.cancel(7);
      expect(await endOf(first.ended, 'the first ask, cancelled')).toBeUndefined();
      // The other, sent with the same id, still waits for its task and answers the client with its result.
      await two.finish('two is done');
      const answered = await here.answers.waitFor((answer) => answer.id === 7, 'the answer to the other ask');
      expect(answered).toMatchObject({ result: { content: [{ type: 'text', text: 'two is done' }] } });

      // Two more with one id, sent together: the second goes to the server under an id of taskgate's own.
      here.request(8, 'tasks/result', { taskId: one.id });
      here.request(8, 'tasks/result', { taskId: one.id });
      const [third, fourth] = [
        await asks.waitFor((ask) => asks.items.indexOf(ask) === 2, 'the third ask'),
        await asks.waitFor((ask) => asks.items.indexOf(ask) === 3, 'the fourth ask'),
      ];
      here.cancel(8);
      expect(await endOf(third.ended, 'the third ask, cancelled')).toBeUndefined();
      here.cancel(8);
      expect(await endOf(fourth.ended, 'the fourth ask, cancelled next')).toBeUndefined();
      // Task one ends: the client that withdrew every ask about it hears nothing of them.
      expect(await one.finish('one is done')).toMatchObject({ content: [{ text: 'one is done' }] });
      expect(here.answers.items.map((answer) => answer.id)).toEqual(['init', 7]);
      expect(made.transport.violations).toEqual([]);
    });

    it("the session's end stops every ask it has in flight, the answers never given", async () => {
      const { second, made, task } = await twoReplicas();
      const [one, two] = [await task('one'), await task('two')];
      const here = await asker(second);
      const asks = watchAsks(second);

      here.request(9, 'tasks/result', { taskId: one.id });
      here.request(10, 'tasks/get', { taskId: two.id });
      here.request(11, 'tasks/result', { taskId: two.id });
      const got = await here.answers.waitFor((answer) => answer.id === 10, 'the answer to tasks/get');
      expect(got).toMatchObject({ result: { taskId: two.id, status: 'working' } });
      const results = [
        await asks.waitFor((ask) => ask.method === 'tasks/result' && ask.taskId === one.id, 'the ask of 9'),
        await asks.waitFor((ask) => ask.method === 'tasks/result' && ask.taskId === two.id, 'the ask of 11'),
      ];

      await here.aggregator.close();
      for (const ask of results) {
        expect(await endOf(ask.ended, `the ask about ${ask.taskId}, its session closed`)).toBeUndefined();
      }
      expect(here.answers.items.map((answer) => answer.id)).toEqual(['init', 10]);
      await Promise.all([one.finish('one is done'), two.finish('two is done')]);
      expect(made.transport.violations).toEqual([]);
    });
  },
);

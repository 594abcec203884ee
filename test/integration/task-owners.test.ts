/**
 * Issue 28 "Tasks without an owner", in process: a task records its creator's identity whatever era
 * created it, and every era's tasks/* checks it the same way, on the memory store and on a real Redis.
 * 2026-07-28 callers go through the one bridge session the HTTP gateway has (which has no identity of its
 * own); 2025 callers each through a session bound to theirs. DESIGN "Secure by default": tasks bound to
 * the caller's auth context.
 */
import { randomBytes } from 'node:crypto';
import { CallToolResultSchema, CreateTaskResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { MemoryTaskStore } from '../../src/tasks/memory-store.js';
import { RedisTaskStore } from '../../src/tasks/redis-store.js';
import type { TaskStore } from '../../src/tasks/store.js';
import { heldTool, type HeldTool } from '../helpers/held-call.js';
import { callersGateway, type CallersGateway, type Identified } from '../helpers/in-process-callers.js';
import { MODERN_META } from '../helpers/in-process-bridge.js';
import { freshPrefix, redisForTests } from '../helpers/redis.js';
import { thrownBy } from '../helpers/thrown.js';

const redis = await redisForTests();
afterAll(() => redis?.stop());

const ALICE: Identified = { identity: 'token:alice', subject: 'alice' };
const BOB: Identified = { identity: 'token:bob', subject: 'bob' };

const WITH_TASKS = {
  ...MODERN_META,
  'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
};

interface Answer {
  result?: Record<string, unknown>;
  error?: { code: number; message: string };
}

const STORES: [string, () => Promise<TaskStore>][] = [
  ['the memory store', async () => new MemoryTaskStore({ maxTasks: 100, maxResultBytes: 1_000_000 })],
  [
    'a real Redis',
    async () => {
      const redisStore = new RedisTaskStore({
        url: redis!.url,
        keyPrefix: freshPrefix(),
        cursorSecret: randomBytes(32),
        maxTasks: 100,
        maxResultBytes: 1_000_000,
      });
      await redisStore.ready(5_000);
      return redisStore;
    },
  ],
];

let held: HeldTool;
let gate: CallersGateway | undefined;
let store: TaskStore | undefined;
afterEach(async () => {
  held?.releaseAll();
  expect(gate?.violations ?? []).toEqual([]);
  await gate?.close();
  await store?.close();
  gate = undefined;
  store = undefined;
});

describe.each(STORES)('a task is its creator’s, whatever era created it (%s)', (name, makeStore) => {
  const skip = name === 'a real Redis' && redis === undefined;

  const open = async (): Promise<CallersGateway> => {
    held = heldTool('held');
    store = await makeStore();
    return (gate = await callersGateway(store, [held]));
  };

  const modern = async (g: CallersGateway, method: string, params: object, as?: Identified) =>
    ((await g.modern(method, { ...params, _meta: WITH_TASKS }, as)) as { response: Answer }).response;

  /** Waits until `count` calls of the held tool have reached the server. */
  const startedCalls = (count: number) =>
    held.calls.waitFor(() => held.calls.items.length >= count, `${count} call(s) upstream`);

  const refusal = async (promise: Promise<unknown>): Promise<McpError> => {
    const error = await thrownBy(promise);
    expect(error).toBeInstanceOf(McpError);
    return error as McpError;
  };

  async function modernTask(g: CallersGateway, as: Identified): Promise<string> {
    const created = await modern(g, 'tools/call', { name: 'held', arguments: {} }, as);
    expect(created.result).toMatchObject({ resultType: 'task', status: 'working' });
    await startedCalls(1);
    return String(created.result!.taskId);
  }

  it.skipIf(skip)(
    'a 2026-07-28 caller’s task is bound to them in the store: another identity’s 2025 client gets "not found" for get, result and cancel, and the task runs on',
    async () => {
      const g = await open();
      const taskId = await modernTask(g, ALICE);
      expect((await store!.get(taskId)).identity).toBe(ALICE.identity);

      const bob = await g.legacy(BOB);
      for (const attempt of [
        bob.experimental.tasks.getTask(taskId),
        bob.experimental.tasks.getTaskResult(taskId, CallToolResultSchema),
        bob.experimental.tasks.cancelTask(taskId),
      ]) {
        const error = await refusal(attempt);
        expect(error.code).toBe(-32602);
        expect(error.message).toContain('not found');
      }
      expect((await store!.get(taskId)).status).toBe('working');
      expect((await modern(g, 'tasks/get', { taskId }, ALICE)).result).toMatchObject({ status: 'working' });
    },
  );

  it.skipIf(skip)(
    'the same identity is served in either era: Alice’s 2025 client reads and cancels her 2026-07-28 task, her 2026-07-28 requests read her 2025 one; Bob gets neither',
    async () => {
      const g = await open();
      const modernMade = await modernTask(g, ALICE);
      const alice = await g.legacy(ALICE);
      expect((await alice.experimental.tasks.getTask(modernMade)).status).toBe('working');

      const legacyMade = await createdBy(alice);
      await startedCalls(2);
      expect((await store!.get(legacyMade)).identity).toBe(ALICE.identity);
      expect((await modern(g, 'tasks/get', { taskId: legacyMade }, ALICE)).result).toMatchObject({
        status: 'working',
      });
      expect((await modern(g, 'tasks/get', { taskId: legacyMade }, BOB)).error).toMatchObject({
        code: -32602,
      });

      expect((await alice.experimental.tasks.cancelTask(modernMade)).status).toBe('cancelled');
      expect((await modern(g, 'tasks/get', { taskId: modernMade }, ALICE)).result).toMatchObject({
        status: 'cancelled',
      });
    },
  );

  it.skipIf(skip)(
    'audit lines name the subject of a 2026-07-28 creator, and another identity’s refused lookups from either front are audited with theirs',
    async () => {
      const g = await open();
      const taskId = await modernTask(g, ALICE);
      expect(g.audit).toContainEqual(expect.objectContaining({ event: 'created', taskId, subject: 'alice' }));

      expect((await modern(g, 'tasks/get', { taskId }, BOB)).error).toMatchObject({ code: -32602 });
      expect((await modern(g, 'tasks/cancel', { taskId }, BOB)).error).toMatchObject({ code: -32602 });
      const bob = await g.legacy(BOB);
      await refusal(bob.experimental.tasks.getTask(taskId));
      const denied = g.audit.filter((line) => line.event === 'denied');
      expect(denied).toEqual([
        expect.objectContaining({ taskId, method: 'tasks/get', subject: 'bob' }),
        expect.objectContaining({ taskId, method: 'tasks/cancel', subject: 'bob' }),
        expect.objectContaining({ taskId, method: 'tasks/get', subject: 'bob' }),
      ]);

      expect((await modern(g, 'tasks/cancel', { taskId }, ALICE)).result).toMatchObject({
        resultType: 'complete',
      });
      expect(g.audit).toContainEqual(
        expect.objectContaining({ event: 'cancelled', taskId, subject: 'alice' }),
      );
      expect(g.audit.filter((line) => line.subject === undefined && line.event !== 'denied')).toEqual([]);
    },
  );
});

async function createdBy(client: Client): Promise<string> {
  const created = await client.request(
    { method: 'tools/call', params: { name: 'held', arguments: {}, task: {} } },
    CreateTaskResultSchema,
  );
  return created.task.taskId;
}

/**
 * The Redis task store against a real Redis (test/helpers/redis.ts finds or starts one): the shared
 * TaskStore contract, then what only several replicas sharing one Redis can show. Every store gets a
 * fresh key prefix; stores that stand for replicas of one deployment share theirs.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import {
  CallerLimitError,
  InvalidCursorError,
  TaskLimitError,
  TaskNotFoundError,
  TaskStoreUnavailableError,
} from '../../src/tasks/errors.js';
import { resolveConfig } from '../../src/config/load.js';
import { Policy } from '../../src/config/policy.js';
import { Augmenter } from '../../src/tasks/augment.js';
import { IllegalTransitionError } from '../../src/tasks/state.js';
import { RedisTaskStore, type RedisStoreOptions } from '../../src/tasks/redis-store.js';
import type { TaskOutcome, TaskRecord, TaskStatus } from '../../src/tasks/state.js';
import { EXECUTOR_LOST, type NewTask, type TaskStore } from '../../src/tasks/store.js';
import { freePort } from '../helpers/ports.js';
import {
  freshPrefix,
  privateRedisServer,
  redisForTests,
  type RedisServer,
  startRedisServer,
} from '../helpers/redis.js';
import { describeTaskStoreContract } from '../store-contract.js';
import { thrownBy } from '../helpers/thrown.js';

const redis = await redisForTests();
afterAll(() => redis?.stop());

const SECRET = 'a cursor secret shared by the replicas';
const config = resolveConfig({});
/** The bound on every wait for something that should happen (a guard, not a sleep). */
const WITHIN_MS = 5_000;
const DAY = 86_400_000;
/** The database the expiry test uses alone. */
const EXPIRY_DB = 7;

const opened: RedisTaskStore[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((store) => store.close()));
});

/** A connected store; by default on a fresh prefix of its own. */
async function open(options: Partial<RedisStoreOptions> = {}): Promise<RedisTaskStore> {
  const store = new RedisTaskStore({
    url: redis!.url,
    keyPrefix: freshPrefix(),
    cursorSecret: SECRET,
    maxTasks: 1_000,
    maxResultBytes: 1_000_000,
    ...options,
  });
  opened.push(store);
  await store.ready(WITHIN_MS);
  return store;
}

const internals = (store: TaskStore): { prefix: string; link: { cmd: Redis; sub: Redis } } =>
  store as unknown as { prefix: string; link: { cmd: Redis; sub: Redis } };
const prefixOf = (store: TaskStore): string => internals(store).prefix;

/** The process behind the store dies: its connections drop at once and nothing is said to Redis. */
function crash(store: TaskStore): void {
  internals(store).link.cmd.disconnect();
  internals(store).link.sub.disconnect();
}

/** Two stores sharing one prefix and one secret: two replicas of one deployment. */
async function replicas(options: Partial<RedisStoreOptions> = {}): Promise<[RedisTaskStore, RedisTaskStore]> {
  const keyPrefix = freshPrefix();
  return [await open({ keyPrefix, ...options }), await open({ keyPrefix, ...options })];
}

const newTask = (overrides: Partial<NewTask> = {}): NewTask => ({
  owner: `owner-${randomUUID()}`,
  sessionId: `session-${randomUUID()}`,
  toolName: 'slow_tool',
  ttl: 3_600_000,
  pollInterval: 1_000,
  ...overrides,
});

const result = (text: string): { outcome: TaskOutcome; outcomeBytes: number } => {
  const outcome: TaskOutcome = { result: { content: [{ type: 'text', text }] } };
  return { outcome, outcomeBytes: Buffer.byteLength(JSON.stringify(outcome)) };
};

/** Resolves with the value, or fails if the promise has not settled within WITHIN_MS. */
async function within<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const guard = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within ${WITHIN_MS} ms`)), WITHIN_MS);
  });
  try {
    return await Promise.race([promise, guard]);
  } finally {
    clearTimeout(timer);
  }
}

describe.skipIf(!redis)('RedisTaskStore', () => {
  describeTaskStoreContract(
    'RedisTaskStore without a lease',
    (options) => open({ ...options, leaseTtlMs: 0 }),
    (store, options) => open({ ...options, leaseTtlMs: 0, keyPrefix: prefixOf(store) }),
  );
  // The lease runs on Redis's clock, here the contract's injected one, which stands still or jumps: a lease
  // of a day never lapses within a test, and so the lease is seen only where a store gives it up (close).
  describeTaskStoreContract(
    'RedisTaskStore with a lease',
    (options) => open({ ...options, leaseTtlMs: DAY }),
    (store, options) => open({ ...options, leaseTtlMs: DAY, keyPrefix: prefixOf(store) }),
    { executorLease: true },
  );

  describe('replicas racing on one task', () => {
    it('cancel and complete from two replicas at once end in exactly one terminal state; cancelled stays cancelled (spec: Task Cancellation 3)', async () => {
      const [a, b] = await replicas();
      const heardByA: TaskRecord[] = [];
      const heardByB: TaskRecord[] = [];
      a.onTransition((record) => heardByA.push(record));
      b.onTransition((record) => heardByB.push(record));
      const tasks = await Promise.all(Array.from({ length: 100 }, () => a.create(newTask())));
      const waiters = tasks.map((task) => b.waitForTerminal(task.taskId));
      const waitersOnA = tasks.map((task) => a.waitForTerminal(task.taskId));
      const attempts: [RedisTaskStore, TaskStatus][] = [
        [a, 'cancelled'],
        [b, 'completed'],
        [b, 'cancelled'],
        [a, 'completed'],
        [a, 'failed'],
        [b, 'cancelled'],
      ];
      const raced = await Promise.all(
        tasks.map((task, i) =>
          Promise.allSettled(
            // Each task sees the attempts in another order, so every one of them gets to go first.
            [...attempts.slice(i % attempts.length), ...attempts.slice(0, i % attempts.length)].map(
              ([store, status]) =>
                store.update(task.taskId, {
                  status,
                  statusMessage: `${status} by ${store === a ? 'A' : 'B'}`,
                  ...(status === 'completed' ? result('done') : {}),
                }),
            ),
          ),
        ),
      );
      for (const [i, outcomes] of raced.entries()) {
        const won = outcomes.filter((o) => o.status === 'fulfilled');
        expect(won).toHaveLength(1);
        const winner = (won[0] as PromiseFulfilledResult<TaskRecord>).value;
        for (const lost of outcomes.filter((o) => o.status === 'rejected')) {
          expect(lost.reason).toBeInstanceOf(IllegalTransitionError);
          expect(lost.reason).toMatchObject({ from: winner.status });
        }
        expect(await b.get(tasks[i]!.taskId)).toEqual(winner);
      }
      const finals = await within(Promise.all(waiters), 'the waiters on B');
      await within(Promise.all(waitersOnA), 'the waiters on A');
      // A created every task, so it hears every end once, its own and B's; B hears only its own.
      expect(heardByA.map((record) => record.taskId).sort()).toEqual(tasks.map((task) => task.taskId).sort());
      const wonByB = raced.filter((outcomes) =>
        outcomes.some((o) => o.status === 'fulfilled' && o.value.statusMessage?.endsWith('by B')),
      );
      expect(heardByB).toHaveLength(wonByB.length);
      for (const [i, final] of finals.entries()) expect(final).toEqual(await a.get(tasks[i]!.taskId));

      const cancelled = finals.filter((record) => record.status === 'cancelled');
      expect(cancelled.length).toBeGreaterThan(0);
      for (const record of cancelled) {
        for (const store of [a, b]) {
          expect(
            await thrownBy(store.update(record.taskId, { status: 'completed', ...result('late') })),
          ).toMatchObject({ from: 'cancelled', to: 'completed' });
        }
        const after = await a.get(record.taskId);
        expect(after.status).toBe('cancelled');
        expect(after).not.toHaveProperty('outcome');
      }
      expect(await a.stats()).toMatchObject({ live: 0, terminal: tasks.length });
    });

    it('issue 15: an input request answered at once leaves the task working: the two moves, issued without waiting, apply in order', async () => {
      const store = await open();
      const session = `session-${randomUUID()}`;
      const augmenter = new Augmenter(
        store,
        new Policy(config),
        config,
        {
          callUpstream: () => ({ wireId: 'never-answered', done: new Promise(() => undefined) }),
          cancelUpstream: () => undefined,
          notifyClient: () => undefined,
        },
        { sessionId: session },
        pino({ level: 'silent' }),
      );
      const created = await augmenter.createTask({ name: 'slow_tool', arguments: {}, task: {} });
      const { taskId } = created.task as { taskId: string };
      const seen: TaskStatus[] = [];
      store.onTransition((record) => seen.push(record.status));
      for (let round = 0; round < 20; round++) {
        // As the session does: neither call waits for the other.
        await Promise.all([augmenter.inputRequested(taskId), augmenter.inputAnswered(taskId)]);
        expect((await store.get(taskId)).status).toBe('working');
      }
      expect(seen).toEqual(Array.from({ length: 20 }, () => ['input_required', 'working']).flat());
      augmenter.close();
    });
  });

  describe('a result kept as bytes (issue 33)', () => {
    it('is read back by another replica, by get and by a waiter, as the bytes Redis holds, never decoded into text', async () => {
      const [a, b] = await replicas();
      const task = await a.create(newTask());
      const kept = Buffer.from('{"content":[{"type":"text","text":"caf\u00e9 ☕ \\u0041"}]}');
      const waiting = b.waitForTerminal(task.taskId);
      await a.update(task.taskId, { status: 'completed', resultBytes: kept, outcomeBytes: kept.length });
      for (const read of [await b.get(task.taskId), await within(waiting, 'the waiter on B')]) {
        expect(Buffer.isBuffer(read.resultBytes)).toBe(true);
        expect((read.resultBytes as Buffer).equals(kept)).toBe(true);
      }
    });
  });

  describe('waiting across replicas', () => {
    it('a waiter on A wakes when B completes the task, on the pub/sub message (spec: Result Retrieval 3)', async () => {
      // No fallback poll within the test's bound: only the message can wake the waiter in time.
      const [a, b] = await replicas({ fallbackPollMs: 3_600_000 });
      const task = await a.create(newTask());
      const waiting = a.waitForTerminal(task.taskId);
      const done = await b.update(task.taskId, { status: 'completed', ...result('from B') });
      expect(await within(waiting, 'the waiter on A')).toEqual(done);
    });

    it('wakes waiters on both replicas, whichever replica ends the task', async () => {
      const [a, b] = await replicas({ fallbackPollMs: 3_600_000 });
      const task = await b.create(newTask());
      const waiting = [a.waitForTerminal(task.taskId), b.waitForTerminal(task.taskId)];
      const failed = await a.update(task.taskId, { status: 'failed', statusMessage: 'boom' });
      expect(await within(Promise.all(waiting), 'both waiters')).toEqual([failed, failed]);
    });

    it('a slow fallback poll wakes a waiter whose message was lost', async () => {
      const keyPrefix = freshPrefix();
      const a = await open({ keyPrefix, fallbackPollMs: 50 });
      const task = await a.create(newTask());
      const waiting = a.waitForTerminal(task.taskId);
      // Finish the task behind the store's back: no script runs, so no message is published.
      const raw = new Redis(redis!.url);
      try {
        await raw.hset(`${keyPrefix}task:${task.taskId}`, 'status', 'completed');
      } finally {
        await raw.quit();
      }
      expect((await within(waiting, 'the polled waiter')).status).toBe('completed');
    });

    it('close rejects pending waits with TaskStoreUnavailableError; close twice is fine; then every call rejects', async () => {
      const store = await open();
      const task = await store.create(newTask());
      const waiting = thrownBy(store.waitForTerminal(task.taskId));
      await Promise.all([store.close(), store.close()]);
      await store.close();
      expect(await within(waiting, 'the pending wait')).toBeInstanceOf(TaskStoreUnavailableError);
      for (const call of [
        () => store.get(task.taskId),
        () => store.create(newTask()),
        () => store.update(task.taskId, { status: 'completed' }),
        () => store.list(task.owner, undefined, 10),
        () => store.waitForTerminal(task.taskId),
      ]) {
        expect(await thrownBy(call())).toBeInstanceOf(TaskStoreUnavailableError);
      }
    });
  });

  describe('executor lease', () => {
    const LEASE_MS = 400;
    const lostWith = {
      status: 'failed',
      statusMessage: EXECUTOR_LOST,
      outcome: { error: { code: -32603, message: EXECUTOR_LOST } },
    };

    it('a replica that died has its working and input_required tasks failed once its lease lapses; waiters on other replicas wake; finished tasks and live replicas keep theirs', async () => {
      const keyPrefix = freshPrefix();
      const [a, b] = [
        await open({ keyPrefix, leaseTtlMs: LEASE_MS }),
        await open({ keyPrefix, leaseTtlMs: LEASE_MS }),
      ];
      const kept = await b.create(newTask());
      const working = await a.create(newTask());
      const asking = await a.create(newTask());
      await a.update(asking.taskId, { status: 'input_required' });
      const done = await a.create(newTask());
      const completed = await a.update(done.taskId, { status: 'completed', ...result('kept') });
      const waiting = Promise.all([b.waitForTerminal(working.taskId), b.waitForTerminal(asking.taskId)]);
      crash(a);
      const crashedAt = performance.now();
      const lost = await within(waiting, 'the waiters on B');
      // A renewed its lease at most a third of it before it died.
      expect(performance.now() - crashedAt).toBeGreaterThanOrEqual((LEASE_MS * 2) / 3 - 50);
      for (const record of lost) expect(record).toMatchObject(lostWith);
      expect(await b.get(done.taskId)).toEqual(completed);

      // A second replica dies later: by the time its task is failed, more than a lease has passed since B
      // created its task, so only B's renewals can have kept that one working.
      const c = await open({ keyPrefix, leaseTtlMs: LEASE_MS });
      const later = await c.create(newTask());
      const waitingLater = b.waitForTerminal(later.taskId);
      crash(c);
      expect(await within(waitingLater, 'the waiter on B')).toMatchObject(lostWith);
      expect((await b.get(kept.taskId)).status).toBe('working');
      expect(await b.stats()).toMatchObject({ live: 1, terminal: 4 });
    });

    it('close releases the live tasks of the closing store at once, without waiting for the lease', async () => {
      const [a, b] = await replicas({ leaseTtlMs: 3_600_000 });
      const task = await a.create(newTask());
      const waiting = b.waitForTerminal(task.taskId);
      await a.close();
      expect(await within(waiting, 'the waiter on B')).toMatchObject(lostWith);
    });

    it('the executor hears of a cancellation whose message it missed once its event connection is back', async () => {
      const [a, b] = await replicas({ leaseTtlMs: 0, fallbackPollMs: 3_600_000 });
      const task = await a.create(newTask());
      const heard = new Promise<TaskRecord>((resolve) => a.onTransition(resolve));
      // Cancel behind the stores' backs, so that no message is published: only the re-read finds it.
      const raw = new Redis(redis!.url);
      try {
        await raw.hset(`${prefixOf(b)}task:${task.taskId}`, 'status', 'cancelled');
      } finally {
        await raw.quit();
      }
      internals(a).link.sub.disconnect(true);
      expect(await within(heard, "A's listener")).toMatchObject({ taskId: task.taskId, status: 'cancelled' });
    });
  });

  describe('an end that Redis was not there to take', () => {
    it('is refused, kept, and recorded once the connection is back, so the task does not stay live forever', async () => {
      const [a, b] = await replicas({ leaseTtlMs: 0 });
      const task = await a.create(newTask());
      const waiting = b.waitForTerminal(task.taskId);
      internals(a).link.cmd.disconnect(true);
      const refused = await thrownBy(a.update(task.taskId, { status: 'completed', ...result('late') }));
      expect(refused).toBeInstanceOf(TaskStoreUnavailableError);
      const done = await within(waiting, 'the waiter on B');
      expect(done).toMatchObject({ status: 'completed', outcome: result('late').outcome });
    });
  });

  describe('cursors across replicas', () => {
    it('a cursor from A is accepted by B; a modified one, or one from a store with another secret, is refused (spec: Task Listing 3)', async () => {
      const [a, b] = await replicas();
      const owner = `owner-${randomUUID()}`;
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) ids.push((await a.create(newTask({ owner }))).taskId);
      const first = await a.list(owner, undefined, 1);
      const cursor = first.nextCursor!;
      expect(cursor).toEqual(expect.any(String));
      const rest = await b.list(owner, cursor, 10);
      expect(rest.tasks.map((task) => task.taskId)).toEqual(ids.slice(1));
      const flipped = cursor.slice(0, -1) + (cursor.endsWith('A') ? 'B' : 'A');
      expect(await thrownBy(b.list(owner, flipped, 10))).toBeInstanceOf(InvalidCursorError);
      const stranger = await open({
        keyPrefix: prefixOf(a),
        cursorSecret: 'another secret, of another deployment',
      });
      expect(await thrownBy(stranger.list(owner, cursor, 10))).toBeInstanceOf(InvalidCursorError);
    });
  });

  describe('input of extension tasks across replicas', () => {
    it("what A posts B reads until it expires; B's answers reach every store of the prefix, and no other", async () => {
      const [a, b] = await replicas();
      const elsewhere = await open();
      const heard: { by: string; taskId: string; responses: unknown }[] = [];
      for (const [by, store] of [
        ['a', a],
        ['b', b],
        ['elsewhere', elsewhere],
      ] as const) {
        store.inputs.onAnswer((taskId, responses) => heard.push({ by, taskId, responses }));
      }
      const posted = { principal: 'alice', inputRequests: { 'input-1': { method: 'roots/list' } } };
      await a.inputs.post('task-1', posted, 300);
      expect(await b.inputs.read('task-1')).toEqual({ ...posted, runner: a.inputs.self });
      expect(await elsewhere.inputs.read('task-1')).toBeUndefined();

      await b.inputs.answer('task-1', { 'input-1': { roots: [] } });
      await vi.waitFor(() => expect(heard.map(({ by }) => by).sort()).toEqual(['a', 'b']), {
        timeout: WITHIN_MS,
      });
      expect(heard[0]).toMatchObject({ taskId: 'task-1', responses: { 'input-1': { roots: [] } } });

      await vi.waitFor(async () => expect(await b.inputs.read('task-1')).toBeUndefined(), {
        timeout: WITHIN_MS,
      });
    });

    it('a request relayed to the runner is answered by the handler holding its task, refused or not; one nobody holds, or sent to a replica that is not there, gets none', async () => {
      const [a, b] = await replicas();
      a.inputs.onRelayed(({ request, principal }) => {
        if (request.params?.taskId === 'refused-on-a') {
          const error = { code: -32602, message: 'Invalid params' };
          return Promise.resolve({ response: { jsonrpc: '2.0', id: request.id, error }, refused: true });
        }
        return request.params?.taskId === 'held-on-a'
          ? Promise.resolve({
              response: { jsonrpc: '2.0', id: request.id, result: { servedBy: 'a', principal } },
            })
          : undefined;
      });
      const relayed = (taskId: string, runner = a.inputs.self, timeoutMs = WITHIN_MS) =>
        b.inputs.relay(
          runner,
          { request: { jsonrpc: '2.0', id: 7, method: 'tasks/get', params: { taskId } }, principal: 'alice' },
          timeoutMs,
        );
      expect(await relayed('held-on-a')).toEqual({
        response: { jsonrpc: '2.0', id: 7, result: { servedBy: 'a', principal: 'alice' } },
        refused: false,
      });
      expect(await relayed('refused-on-a')).toEqual({
        response: { jsonrpc: '2.0', id: 7, error: { code: -32602, message: 'Invalid params' } },
        refused: true,
      });
      expect(await relayed('held-nowhere')).toBeUndefined();
      expect(await relayed('held-on-a', 'a-replica-that-is-gone', 200)).toBeUndefined();
    });

    it('a relay waits its whole time for a runner that took the request, and gives up within seconds on one that is not there', async () => {
      // Half a second, not the default 3 s, for a runner to say it took the request.
      const TAKEN_WITHIN_MS = 500;
      const [a, b] = await replicas({ relayTakenWithinMs: TAKEN_WITHIN_MS });
      a.inputs.onRelayed(async ({ request }) => {
        // Outlasts the time a runner has to say it took the request: the relay, told it did, waits on.
        await new Promise((resolve) => setTimeout(resolve, TAKEN_WITHIN_MS + 500));
        return { response: { jsonrpc: '2.0', id: request.id, result: { late: true } } };
      });
      const request = { jsonrpc: '2.0' as const, id: 1, method: 'tools/call', params: {} };
      await expect(
        within(b.inputs.relay(a.inputs.self, { request }, 60_000), 'the relay to A'),
      ).resolves.toEqual({ response: { jsonrpc: '2.0', id: 1, result: { late: true } }, refused: false });
      await expect(
        within(b.inputs.relay('nobody', { request }, 600_000), 'the relay to nobody'),
      ).resolves.toBeUndefined();
    });
  });
  it('issue 32: what A indexes under a principal B lists, the soonest to expire first, until each expires; another principal has none', async () => {
    const [a, b] = await replicas();
    await a.inputs.index('alice', 'a__long', 60_000);
    await a.inputs.index('alice', 'a__short', 300);
    await b.inputs.index('alice', 'b__middle', 30_000);
    await a.inputs.index('bob', 'a__bobs', 60_000);
    expect(await b.inputs.indexed('alice', 10)).toEqual({ taskIds: ['a__short', 'b__middle', 'a__long'] });
    expect((await a.inputs.indexed('alice', 2)).taskIds).toEqual(['a__short', 'b__middle']);
    expect(await a.inputs.indexed('carol', 10)).toEqual({ taskIds: [] });
    await vi.waitFor(
      async () => expect((await b.inputs.indexed('alice', 10)).taskIds).toEqual(['b__middle', 'a__long']),
      {
        timeout: WITHIN_MS,
      },
    );
    const raw = new Redis(redis!.url);
    try {
      const ttl = await raw.pttl(`${prefixOf(a)}indexed:alice`);
      expect(ttl).toBeGreaterThan(30_000);
      expect(ttl).toBeLessThanOrEqual(60_000);
    } finally {
      await raw.quit();
    }
  });

  it('issue 32: pages what is indexed under a principal, each task once, tasks expiring alike included, none skipped as earlier ones expire', async () => {
    const [a, b] = await replicas();
    const start = Date.now();
    // The clock held still while indexing, so that five tasks expire in the very same millisecond.
    vi.useFakeTimers({ toFake: ['Date'], now: start });
    try {
      await a.inputs.index('alice', 'late', 90_000);
      for (const taskId of ['t3', 't1', 't5', 't2', 't4']) await a.inputs.index('alice', taskId, 60_000);
      await a.inputs.index('alice', 'early', 30_000);
      const first = await b.inputs.indexed('alice', 2);
      expect(first.taskIds).toEqual(['early', 't1']);
      // 'early' expires: the next page goes on after 't1' all the same.
      vi.setSystemTime(start + 30_001);
      const pages = [first.taskIds];
      for (let from = first.next; from !== undefined && pages.length < 10;) {
        const page = await b.inputs.indexed('alice', 2, from);
        pages.push(page.taskIds);
        from = page.next;
      }
      expect(pages).toEqual([['early', 't1'], ['t2', 't3'], ['t4', 't5'], ['late']]);
    } finally {
      vi.useRealTimers();
    }
  });

  describe('limits across replicas', () => {
    it("issue 13.5: a caller's live tasks that Redis no longer holds (flushed, restarted empty) stop counting", async () => {
      const [a, b] = await replicas();
      const liveLimit = { caller: `caller-${randomUUID()}`, max: 2 };
      await a.create(newTask({ liveLimit }));
      await b.create(newTask({ liveLimit }));
      expect(await thrownBy(a.create(newTask({ liveLimit })))).toBeInstanceOf(CallerLimitError);
      // What FLUSHALL does, to this prefix only (the Redis may be shared).
      const raw = new Redis(redis!.url);
      try {
        const keys = await raw.keys(`${prefixOf(a)}*`);
        expect(keys.length).toBeGreaterThan(0);
        await raw.del(...keys);
      } finally {
        await raw.quit();
      }
      await a.create(newTask({ liveLimit }));
      await b.create(newTask({ liveLimit }));
      expect(await thrownBy(b.create(newTask({ liveLimit })))).toBeInstanceOf(CallerLimitError);
    });

    it("issue 13.5: a task failed because its replica was lost frees its caller's slot", async () => {
      const keyPrefix = freshPrefix();
      const [a, b] = [await open({ keyPrefix, leaseTtlMs: 400 }), await open({ keyPrefix, leaseTtlMs: 400 })];
      const liveLimit = { caller: `caller-${randomUUID()}`, max: 1 };
      const task = await a.create(newTask({ liveLimit }));
      expect(await thrownBy(b.create(newTask({ liveLimit })))).toBeInstanceOf(CallerLimitError);
      const lost = b.waitForTerminal(task.taskId);
      crash(a);
      expect(await within(lost, 'the waiter on B')).toMatchObject({ status: 'failed' });
      expect((await b.create(newTask({ liveLimit }))).status).toBe('working');
    });

    it('maxTasks counts the live tasks of every replica, and a full store evicts terminal tasks of any replica', async () => {
      const [a, b] = await replicas({ maxTasks: 3 });
      const first = await a.create(newTask());
      await a.create(newTask());
      await b.create(newTask());
      expect(await thrownBy(a.create(newTask()))).toBeInstanceOf(TaskLimitError);
      expect(await thrownBy(b.create(newTask()))).toBeInstanceOf(TaskLimitError);
      expect(await a.stats()).toMatchObject({ live: 3, terminal: 0 });
      await b.update(first.taskId, { status: 'completed' });
      await a.create(newTask());
      expect(await thrownBy(b.get(first.taskId))).toBeInstanceOf(TaskNotFoundError);
      expect(await b.stats()).toMatchObject({ live: 3, terminal: 0, evictions: 1 });
    });

    it('the result byte budget is shared: a result on B evicts an older one from A; one too large is refused everywhere', async () => {
      const [a, b] = await replicas({ maxResultBytes: 1_000 });
      const older = await a.create(newTask());
      const newer = await b.create(newTask());
      const big = result('x'.repeat(550));
      await a.update(older.taskId, { status: 'completed', ...big });
      await b.update(newer.taskId, { status: 'completed', ...big });
      expect(await thrownBy(a.get(older.taskId))).toBeInstanceOf(TaskNotFoundError);
      expect((await a.get(newer.taskId)).outcome).toEqual(big.outcome);
      expect(await a.stats()).toMatchObject({ terminal: 1, bytes: big.outcomeBytes, evictions: 1 });

      const live = await a.create(newTask());
      const error = await thrownBy(
        b.update(live.taskId, { status: 'completed', ...result('x'.repeat(1_000)) }),
      );
      expect(error).toBeInstanceOf(TaskLimitError);
      expect(await a.get(live.taskId)).toEqual(live);
    });
  });

  describe('expiry by Redis itself', () => {
    it('a live task has no expiry; once terminal, every key of it expires after its ttl, by PEXPIRE', async () => {
      const keyPrefix = freshPrefix();
      // A database of its own: Redis's active expiry samples the keys that have a ttl, and the contract's
      // runs leave many with long ones in the shared database, which would keep these three waiting.
      const url = new URL(redis!.url);
      url.pathname = `/${EXPIRY_DB}`;
      // Redis's own clock (no `now`), so the expiry is real.
      const store = await open({ keyPrefix, url: url.href });
      const owner = `owner-${randomUUID()}`;
      const task = await store.create(newTask({ owner, ttl: 300 }));
      const keys = [
        `${keyPrefix}task:${task.taskId}`,
        `${keyPrefix}owner:${owner}`,
        `${keyPrefix}owner-meta:${owner}`,
      ];
      const raw = new Redis(url.href);
      const events = new Redis(url.href);
      const db = EXPIRY_DB;
      const previous = ((await raw.config('GET', 'notify-keyspace-events')) as string[])[1] ?? '';
      try {
        for (const key of keys) expect(await raw.pttl(key)).toBe(-1);
        await raw.config('SET', 'notify-keyspace-events', 'Ex');
        await events.subscribe(`__keyevent@${db}__:expired`);
        const expired = new Set<string>();
        const allExpired = new Promise<void>((resolve) => {
          events.on('message', (_channel: string, key: string) => {
            expired.add(key);
            if (keys.every((k) => expired.has(k))) resolve();
          });
        });
        await store.update(task.taskId, { status: 'completed', ...result('soon gone') });
        for (const key of keys) {
          const pttl = await raw.pttl(key);
          expect(pttl, key).toBeGreaterThan(0);
          expect(pttl, key).toBeLessThanOrEqual(300);
        }
        await within(allExpired, 'the expiry of every key of the task');
      } finally {
        await raw.config('SET', 'notify-keyspace-events', previous);
        await Promise.all([raw.quit(), events.quit()]);
      }
      expect(await thrownBy(store.get(task.taskId))).toBeInstanceOf(TaskNotFoundError);
      expect((await store.list(owner, undefined, 10)).tasks).toEqual([]);
      // The next create sweeps the index entries of what Redis expired.
      await store.create(newTask());
      expect(await store.stats()).toMatchObject({ live: 1, terminal: 0, bytes: 0 });
    });
  });

  describe('Redis unreachable', () => {
    it('a store pointed at a closed port rejects at once with a clear error', async () => {
      const port = await freePort();
      const store = new RedisTaskStore({
        url: `redis://:hunter2@127.0.0.1:${port}/0`,
        cursorSecret: SECRET,
        maxTasks: 10,
        maxResultBytes: 1_000,
      });
      opened.push(store);
      const started = performance.now();
      const error = await thrownBy(store.create(newTask()));
      expect(performance.now() - started).toBeLessThan(500);
      expect(error).toBeInstanceOf(TaskStoreUnavailableError);
      expect((error as Error).message).toContain(`127.0.0.1:${port}`);
      expect((error as Error).message).not.toContain('hunter2');
      expect(await thrownBy(store.get(randomUUID()))).toBeInstanceOf(TaskStoreUnavailableError);
      expect(await thrownBy(store.ready(200))).toBeInstanceOf(TaskStoreUnavailableError);
    });

    describe('a stalled Redis (paused longer than the command timeout, its connections up)', () => {
      let server: RedisServer | undefined;
      afterEach(async () => server?.stop());

      const LEASE_MS = 600;
      const STALL_OPTIONS = { leaseTtlMs: LEASE_MS, commandTimeoutMs: 200 };

      /** Pauses the private server for `ms` (SIGSTOP: it reads nothing and answers nothing), after `during`. */
      async function stall(ms: number, during: () => Promise<void>): Promise<void> {
        const raw = new Redis(server!.url);
        const pid = Number(/process_id:(\d+)/.exec(await raw.info('server'))![1]);
        await raw.quit();
        process.kill(pid, 'SIGSTOP');
        const started = performance.now();
        try {
          await during();
          // The stall's own length is the fault under test, not a wait for something to happen.
          await new Promise((resolve) =>
            setTimeout(resolve, Math.max(0, ms - (performance.now() - started))),
          );
        } finally {
          process.kill(pid, 'SIGCONT');
        }
      }

      async function privateServer(context: { skip(): never }): Promise<RedisServer> {
        // Needs a server of its own to pause, even when REDIS_URL names a shared one.
        server = await privateRedisServer(context);
        return server;
      }

      it('issue 13.12: a result that arrives during the stall lands once Redis answers, and no replica fails the task as lost', async (context) => {
        const { url } = await privateServer(context);
        const keyPrefix = freshPrefix();
        const a = await open({ url, keyPrefix, ...STALL_OPTIONS });
        const b = await open({ url, keyPrefix, ...STALL_OPTIONS });
        const task = await a.create(newTask());
        const other = await a.create(newTask());
        // Long enough for the lease to lapse by the clock, and for B's sweeps to queue up before A's result.
        await stall(3 * LEASE_MS, async () => {
          await new Promise((resolve) => setTimeout(resolve, LEASE_MS));
          const refused = await thrownBy(a.update(task.taskId, { status: 'completed', ...result('late') }));
          expect(refused).toBeInstanceOf(TaskStoreUnavailableError);
        });
        const done = await within(b.waitForTerminal(task.taskId), 'the waiter on B');
        expect(done).toMatchObject({ status: 'completed', outcome: result('late').outcome });
        // Two leases after the stall, the replica that kept running still has its other task.
        await new Promise((resolve) => setTimeout(resolve, 2 * LEASE_MS));
        expect((await b.get(other.taskId)).status).toBe('working');
      });

      it('issue 13.2: a create that Redis confirms too late leaves no live task behind; it fails, saying so', async (context) => {
        const { url } = await privateServer(context);
        const store = await open({ url, ...STALL_OPTIONS });
        const owner = `owner-${randomUUID()}`;
        // A task of its own keeps the store renewing its lease: only the store itself can end the other.
        const running = await store.create(newTask({ owner }));
        const ended = new Promise<TaskRecord>((resolve) => store.onTransition(resolve));
        await stall(2 * STALL_OPTIONS.commandTimeoutMs, async () => {
          expect(await thrownBy(store.create(newTask({ owner })))).toBeInstanceOf(TaskStoreUnavailableError);
        });
        const late = await within(ended, 'the end of the unconfirmed task');
        expect(late).toMatchObject({
          status: 'failed',
          statusMessage: expect.stringMatching(/did not confirm/),
        });
        const { tasks } = await store.list(owner, undefined, 10);
        expect(tasks.map((t) => [t.taskId, t.status])).toEqual([
          [running.taskId, 'working'],
          [late.taskId, 'failed'],
        ]);
      });
    });

    describe('a restarted Redis', () => {
      let server: RedisServer | undefined;
      afterEach(async () => server?.stop());

      it('fails fast while Redis is down, recovers by itself when it is back, and wakes waiters whose task is gone', async (context) => {
        // Needs a server of its own to stop and start, even when REDIS_URL names a shared one.
        server = await privateRedisServer(context);
        const store = await open({ url: server.url, fallbackPollMs: 3_600_000 });
        const task = await store.create(newTask());
        const waiting = store.waitForTerminal(task.taskId);
        await server.stop();
        const down = await thrownBy(store.get(task.taskId));
        expect(down).toBeInstanceOf(TaskStoreUnavailableError);
        expect((down as Error).message).toContain(`Redis at redis://127.0.0.1:${server.port}`);
        server = await startRedisServer(server.port);
        await store.ready(WITHIN_MS);
        // The restarted server kept nothing (no persistence): the waiter learns it on resubscribing.
        expect(await within(thrownBy(waiting), 'the waiter')).toBeInstanceOf(TaskNotFoundError);
        const again = await store.create(newTask());
        expect((await store.get(again.taskId)).status).toBe('working');
      });
    });
  });
});

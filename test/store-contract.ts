/**
 * The TaskStore contract (the doc comment of src/tasks/store.ts), as one suite that every backend runs:
 *
 *   describeTaskStoreContract('MemoryTaskStore', (options) => new MemoryTaskStore(options), (store) => store);
 *
 * Only the TaskStore interface is used, plus the three options below; time is the injected clock, never
 * a sleep. Every test opens its own store and uses fresh owners, so a shared backend (Redis with a key
 * prefix per store) needs no cleanup between tests; the stores are closed after each test. A backend
 * that keeps an executor lease says so (`{ executorLease: true }`) and also runs the lease cases.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { Pieces } from '../src/protocol/pieces.js';
import {
  CallerLimitError,
  InvalidCursorError,
  TaskLimitError,
  TaskNotFoundError,
  TaskStoreUnavailableError,
} from '../src/tasks/errors.js';
import { IllegalTransitionError, StaleStatusError } from '../src/tasks/state.js';
import type { TaskOutcome, TaskRecord, TaskStatus } from '../src/tasks/state.js';
import { EXECUTOR_LOST, type NewTask, type TaskStore } from '../src/tasks/store.js';
import { thrownBy } from './helpers/thrown.js';

export interface StoreContractOptions {
  maxTasks: number;
  maxResultBytes: number;
  now: () => number;
}

export type MakeStore = (options: StoreContractOptions) => Promise<TaskStore> | TaskStore;

/**
 * Another store object over the same backend as `store`, as another process (replica) would open it. A
 * single-process store (memory) has no other process: it returns `store` itself.
 */
export type MakeReplica = (store: TaskStore, options: StoreContractOptions) => Promise<TaskStore> | TaskStore;

/** What the backend under test does beyond what every store does. */
export interface StoreFeatures {
  /** It keeps an executor lease for each store object (a store shared by several processes). */
  executorLease?: boolean;
}

const START = Date.UTC(2025, 10, 25, 10, 30, 0);
const HOUR = 3_600_000;
/** The bound on every wait for a promise that should settle (a guard, not a sleep). */
const SETTLE_WITHIN_MS = 5_000;
/**
 * The contract promises a task that ends after its ttl a "short grace period". Concretely: it is still
 * readable GRACE_AT_LEAST_MS after it ended (long enough to fetch the result of a task one saw finish)
 * and gone GRACE_AT_MOST_MS after it ended.
 */
const GRACE_AT_LEAST_MS = 1_000;
const GRACE_AT_MOST_MS = 60_000;

const STATUSES: readonly TaskStatus[] = ['working', 'input_required', 'completed', 'failed', 'cancelled'];
const TERMINAL: readonly TaskStatus[] = ['completed', 'failed', 'cancelled'];
/** The lifecycle of the spec (Task Status Lifecycle 2.1–2.3), written out independently of state.ts. */
const SPEC_NEXT: Record<TaskStatus, readonly TaskStatus[]> = {
  working: ['input_required', 'completed', 'failed', 'cancelled'],
  input_required: ['working', 'completed', 'failed', 'cancelled'],
  completed: [],
  failed: [],
  cancelled: [],
};
const clauseOf = (from: TaskStatus): string =>
  from === 'working' ? '2.1' : from === 'input_required' ? '2.2' : '2.3';

class Clock {
  time = START;
  readonly now = (): number => this.time;
  advance(ms: number): number {
    this.time += ms;
    return this.time;
  }
  /** Moves to `ms` after `from` (usually a task's createdAt). */
  at(from: number, ms: number): void {
    this.time = from + ms;
  }
}

/** An outcome whose JSON serialization is exactly `bytes` bytes long (bytes >= 60). */
function outcomeOfBytes(bytes: number): { outcome: TaskOutcome; outcomeBytes: number } {
  const shell = JSON.stringify({ result: { content: [{ type: 'text', text: '' }] } });
  const outcome: TaskOutcome = {
    result: { content: [{ type: 'text', text: 'x'.repeat(bytes - Buffer.byteLength(shell)) }] },
  };
  const outcomeBytes = Buffer.byteLength(JSON.stringify(outcome));
  if (outcomeBytes !== bytes) throw new Error(`outcomeOfBytes(${bytes}) made ${outcomeBytes} bytes`);
  return { outcome, outcomeBytes };
}

/** Resolves with the value, or fails the test if the promise has not settled within the bound. */
async function settled<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const guard = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${what} did not settle within ${SETTLE_WITHIN_MS} ms`)),
      SETTLE_WITHIN_MS,
    );
  });
  try {
    return await Promise.race([promise, guard]);
  } finally {
    clearTimeout(timer);
  }
}

/** Whether the promise has settled once pending callbacks and I/O have had one turn. */
async function hasSettled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  promise.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

export function describeTaskStoreContract(
  name: string,
  makeStore: MakeStore,
  makeReplica: MakeReplica,
  features: StoreFeatures = {},
): void {
  describe(`TaskStore contract: ${name}`, () => {
    const opened: TaskStore[] = [];

    afterEach(async () => {
      await Promise.all(opened.splice(0).map((store) => store.close()));
    });

    async function setup(limits: { maxTasks?: number; maxResultBytes?: number } = {}) {
      const clock = new Clock();
      const options = {
        maxTasks: limits.maxTasks ?? 1_000,
        maxResultBytes: limits.maxResultBytes ?? 1_000_000,
        now: clock.now,
      };
      const store = await makeStore(options);
      opened.push(store);
      /** Another replica's store object over the same backend (the store itself for a single process). */
      const replica = async (): Promise<TaskStore> => {
        const other = await makeReplica(store, options);
        opened.push(other);
        return other;
      };
      const owner = `owner-${randomUUID()}`;
      const newTask = (overrides: Partial<NewTask> = {}): NewTask => ({
        owner,
        sessionId: `session-${randomUUID()}`,
        toolName: 'slow_tool',
        ttl: HOUR,
        pollInterval: 1_000,
        ...overrides,
      });
      const create = (overrides: Partial<NewTask> = {}): Promise<TaskRecord> =>
        store.create(newTask(overrides));
      /** Creates a task and moves it to `status` by the shortest legal path. */
      const createIn = async (status: TaskStatus, overrides: Partial<NewTask> = {}): Promise<TaskRecord> => {
        const task = await create(overrides);
        if (status === 'working') return task;
        return store.update(task.taskId, { status });
      };
      const ids = async (who: string, limit = 1_000): Promise<string[]> => {
        const page = await store.list(who, undefined, limit);
        return page.tasks.map((task) => task.taskId);
      };
      return { store, clock, owner, newTask, create, createIn, ids, replica };
    }

    describe('create and get', () => {
      it('a new task starts working, with the fields it was created with (spec: Task Status Lifecycle 1)', async () => {
        const { store, clock, newTask } = await setup();
        clock.advance(1_234);
        const input = newTask({ ttl: 60_000, pollInterval: 5_000, toolName: 'get_weather' });
        const task = await store.create(input);
        expect(task).toMatchObject({
          status: 'working',
          createdAt: clock.now(),
          lastUpdatedAt: clock.now(),
          ttl: 60_000,
          pollInterval: 5_000,
          owner: input.owner,
          sessionId: input.sessionId,
          toolName: 'get_weather',
          outcomeBytes: 0,
        });
        expect(task).not.toHaveProperty('statusMessage');
        expect(task).not.toHaveProperty('outcome');
        expect(task).not.toHaveProperty('identity');
      });

      it('keeps the identity a task is bound to (spec: Security, Task Isolation)', async () => {
        const { create } = await setup();
        expect((await create({ identity: 'alice' })).identity).toBe('alice');
      });

      it('keeps the trace context of the task span, so that another replica reading it can link to it', async () => {
        const { store, create, replica } = await setup();
        const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
        const task = await create({ traceparent });
        expect(task.traceparent).toBe(traceparent);
        expect((await (await replica()).get(task.taskId)).traceparent).toBe(traceparent);
        expect((await store.update(task.taskId, { status: 'completed' })).traceparent).toBe(traceparent);
        expect(await create()).not.toHaveProperty('traceparent');
      });

      it('issue 32: keeps the server a task was made through, on every replica, on every change and in lists', async () => {
        const { store, owner, create, replica } = await setup();
        const task = await create({ server: 'files' });
        expect(task.server).toBe('files');
        expect((await (await replica()).get(task.taskId)).server).toBe('files');
        const ended = await store.update(task.taskId, { status: 'completed', outcome: { result: {} } });
        expect(ended.server).toBe('files');
        const other = await create();
        expect(other).not.toHaveProperty('server');
        const listed = (await store.list(owner, undefined, 10)).tasks;
        expect(listed.map((t) => t.server)).toEqual(['files', undefined]);
      });

      it('get returns the task as created', async () => {
        const { store, create } = await setup();
        const task = await create({ identity: 'bob' });
        expect(await store.get(task.taskId)).toEqual(task);
      });

      it('task ids are distinct non-empty strings (spec: Task ID Requirements 1, 3)', async () => {
        const { create } = await setup({ maxTasks: 1_000 });
        const tasks = [];
        for (let i = 0; i < 200; i++) tasks.push(await create());
        for (const { taskId } of tasks) {
          expect(typeof taskId).toBe('string');
          expect(taskId.length).toBeGreaterThan(0);
        }
        expect(new Set(tasks.map((task) => task.taskId)).size).toBe(200);
      });

      it('get of an unknown id throws TaskNotFoundError (spec: Error Handling, invalid taskId)', async () => {
        const { store, create } = await setup();
        await create();
        const unknown = randomUUID();
        const error = await thrownBy(store.get(unknown));
        expect(error).toBeInstanceOf(TaskNotFoundError);
        expect((error as TaskNotFoundError).taskId).toBe(unknown);
      });
    });

    describe('update', () => {
      const pairs = STATUSES.flatMap((from) =>
        STATUSES.map((to) => ({ from, to, clause: clauseOf(from), allowed: SPEC_NEXT[from].includes(to) })),
      );

      for (const { from, to, clause } of pairs.filter((pair) => pair.allowed)) {
        it(`${from} → ${to} is applied (spec: Task Status Lifecycle ${clause})`, async () => {
          const { store, createIn } = await setup();
          const task = await createIn(from);
          const updated = await store.update(task.taskId, { status: to });
          expect(updated.status).toBe(to);
          expect(await store.get(task.taskId)).toEqual(updated);
        });
      }

      for (const { from, to, clause } of pairs.filter((pair) => !pair.allowed)) {
        it(`${from} → ${to} is refused with IllegalTransitionError and changes nothing (spec: Task Status Lifecycle ${clause})`, async () => {
          const { store, clock, createIn } = await setup();
          const task = await createIn(from);
          clock.advance(1_000);
          const error = await thrownBy(store.update(task.taskId, { status: to, statusMessage: 'no' }));
          expect(error).toBeInstanceOf(IllegalTransitionError);
          expect(error).toMatchObject({ taskId: task.taskId, from, to });
          expect(await store.get(task.taskId)).toEqual(task);
        });
      }

      it('keeps createdAt, moves lastUpdatedAt to the clock, sets and clears statusMessage', async () => {
        const { store, clock, create } = await setup();
        const task = await create();
        clock.advance(5_000);
        const waiting = await store.update(task.taskId, {
          status: 'input_required',
          statusMessage: 'Need a city',
        });
        expect(waiting).toMatchObject({
          createdAt: task.createdAt,
          lastUpdatedAt: task.createdAt + 5_000,
          statusMessage: 'Need a city',
        });
        clock.advance(5_000);
        const working = await store.update(task.taskId, { status: 'working' });
        expect(working).toMatchObject({ createdAt: task.createdAt, lastUpdatedAt: task.createdAt + 10_000 });
        expect(working).not.toHaveProperty('statusMessage');
        expect(await store.get(task.taskId)).toEqual(working);
      });

      it('stores a result outcome with its size', async () => {
        const { store, create } = await setup();
        const task = await create();
        const { outcome, outcomeBytes } = outcomeOfBytes(200);
        await store.update(task.taskId, { status: 'completed', outcome, outcomeBytes });
        expect(await store.get(task.taskId)).toMatchObject({ status: 'completed', outcome, outcomeBytes });
      });

      it('stores an error outcome (spec: Result Retrieval 4)', async () => {
        const { store, create } = await setup();
        const task = await create();
        const outcome: TaskOutcome = {
          error: { code: -32602, message: 'Unknown city', data: { city: 'Atlantis' } },
        };
        await store.update(task.taskId, {
          status: 'failed',
          statusMessage: 'Tool call failed',
          outcome,
          outcomeBytes: 80,
        });
        expect(await store.get(task.taskId)).toMatchObject({ status: 'failed', outcome });
      });

      it.each(TERMINAL)(
        'a %s task never changes again, not even its outcome (spec: Task Status Lifecycle 2.3)',
        async (terminal) => {
          const { store, clock, create } = await setup();
          const task = await create();
          const first = outcomeOfBytes(100);
          const done = await store.update(task.taskId, {
            status: terminal,
            statusMessage: 'final',
            ...first,
          });
          clock.advance(1_000);
          for (const to of STATUSES) {
            const second = outcomeOfBytes(150);
            const error = await thrownBy(
              store.update(task.taskId, { status: to, statusMessage: 'again', ...second }),
            );
            expect(error).toBeInstanceOf(IllegalTransitionError);
          }
          expect(await store.get(task.taskId)).toEqual(done);
        },
      );

      it('a cancelled task stays cancelled when the work finishes afterwards (spec: Task Cancellation 3)', async () => {
        const { store, create } = await setup();
        const task = await create();
        await store.update(task.taskId, {
          status: 'cancelled',
          statusMessage: 'The task was cancelled by request.',
        });
        const error = await thrownBy(
          store.update(task.taskId, { status: 'completed', ...outcomeOfBytes(100) }),
        );
        expect(error).toMatchObject({ from: 'cancelled', to: 'completed' });
        const after = await store.get(task.taskId);
        expect(after.status).toBe('cancelled');
        expect(after).not.toHaveProperty('outcome');
      });

      it('issue 15: a change that expects a status is applied only while the task is in it; otherwise StaleStatusError, and nothing changes', async () => {
        const { store, clock, createIn } = await setup();
        const task = await createIn('input_required');
        clock.advance(1_000);
        const error = await thrownBy(store.update(task.taskId, { from: 'working', status: 'completed' }));
        expect(error).toBeInstanceOf(StaleStatusError);
        expect(error).toMatchObject({
          taskId: task.taskId,
          expected: 'working',
          actual: 'input_required',
          to: 'completed',
        });
        expect(await store.get(task.taskId)).toEqual(task);
        const moved = await store.update(task.taskId, { from: 'input_required', status: 'working' });
        expect(moved.status).toBe('working');
        expect(moved).not.toHaveProperty('from');
        expect(await store.get(task.taskId)).toEqual(moved);
      });

      it('issue 15: moves issued without waiting, each expecting the status the one before leaves, apply in order', async () => {
        const { store, create } = await setup();
        const task = await create();
        const seen: TaskStatus[] = [];
        store.onTransition((record) => seen.push(record.status));
        const moves = await Promise.allSettled([
          store.update(task.taskId, { from: 'working', status: 'input_required' }),
          store.update(task.taskId, { from: 'input_required', status: 'working' }),
          store.update(task.taskId, { from: 'working', status: 'input_required' }),
          store.update(task.taskId, { from: 'input_required', status: 'working' }),
        ]);
        expect(moves.map((move) => move.status)).toEqual(Array(4).fill('fulfilled'));
        expect(seen).toEqual(['input_required', 'working', 'input_required', 'working']);
        expect((await store.get(task.taskId)).status).toBe('working');
      });

      it('issue 15: a move that expects a live status loses to an end made first: StaleStatusError, the end stays', async () => {
        const { store, create } = await setup();
        const task = await create();
        const [cancel, move] = await Promise.allSettled([
          store.update(task.taskId, { status: 'cancelled' }),
          store.update(task.taskId, { from: 'working', status: 'input_required' }),
        ]);
        expect(cancel.status).toBe('fulfilled');
        expect(move.status === 'rejected' && move.reason).toBeInstanceOf(StaleStatusError);
        expect((await store.get(task.taskId)).status).toBe('cancelled');
      });

      it('update of an unknown id throws TaskNotFoundError', async () => {
        const { store } = await setup();
        expect(await thrownBy(store.update(randomUUID(), { status: 'completed' }))).toBeInstanceOf(
          TaskNotFoundError,
        );
      });
    });

    describe('listeners', () => {
      it('see every successful change, in order, as the updated record', async () => {
        const { store, clock, create } = await setup();
        const seen: TaskRecord[] = [];
        const alsoSeen: string[] = [];
        store.onTransition((record) => seen.push(record));
        store.onTransition((record) => alsoSeen.push(`${record.taskId}:${record.status}`));
        const a = await create();
        const b = await create();
        expect(seen).toEqual([]);
        const returned: TaskRecord[] = [];
        clock.advance(10);
        returned.push(
          await store.update(a.taskId, { status: 'input_required', statusMessage: 'Need input' }),
        );
        returned.push(await store.update(b.taskId, { status: 'failed' }));
        clock.advance(10);
        returned.push(await store.update(a.taskId, { status: 'working' }));
        returned.push(await store.update(a.taskId, { status: 'completed', ...outcomeOfBytes(100) }));
        expect(seen).toEqual(returned);
        expect(alsoSeen).toEqual([
          `${a.taskId}:input_required`,
          `${b.taskId}:failed`,
          `${a.taskId}:working`,
          `${a.taskId}:completed`,
        ]);
      });

      it('are not called for a refused change', async () => {
        const { store, create } = await setup({ maxResultBytes: 1_000 });
        const task = await create();
        const done = await create();
        await store.update(done.taskId, { status: 'completed' });
        const seen: TaskRecord[] = [];
        store.onTransition((record) => seen.push(record));
        await thrownBy(store.update(done.taskId, { status: 'working' }));
        await thrownBy(store.update(task.taskId, { status: 'completed', ...outcomeOfBytes(2_000) }));
        await thrownBy(store.update(randomUUID(), { status: 'completed' }));
        expect(seen).toEqual([]);
      });

      it('of the store that created a task hear of its end once, whichever replica ends it (cancel routing)', async () => {
        const { store, create, replica } = await setup();
        const other = await replica();
        const seen: TaskRecord[] = [];
        store.onTransition((record) => seen.push(record));
        const own = await create();
        const cancelledElsewhere = await create();
        const marker = await create();
        const heardMarker = new Promise<void>((resolve) => {
          const off = store.onTransition((record) => {
            if (record.taskId !== marker.taskId) return;
            off();
            resolve();
          });
        });
        const expected = [
          await store.update(own.taskId, { status: 'completed', ...outcomeOfBytes(100) }),
          await other.update(cancelledElsewhere.taskId, { status: 'cancelled', statusMessage: 'elsewhere' }),
          await other.update(marker.taskId, { status: 'failed', statusMessage: 'marker' }),
        ];
        // Ends are heard in the order they were made: once the marker's is, the others were, exactly once.
        await settled(heardMarker, "the creating store's listener hearing the marker");
        expect(seen).toEqual(expected);
      });

      it('stop being called once unsubscribed', async () => {
        const { store, create } = await setup();
        const task = await create();
        const seen: TaskStatus[] = [];
        const unsubscribe = store.onTransition((record) => seen.push(record.status));
        await store.update(task.taskId, { status: 'input_required' });
        unsubscribe();
        await store.update(task.taskId, { status: 'working' });
        await store.update(task.taskId, { status: 'completed' });
        expect(seen).toEqual(['input_required']);
      });
    });

    describe('list', () => {
      it("returns only the owner's tasks, in creation order (spec: Security, Task Isolation)", async () => {
        const { store, clock, owner, create, ids } = await setup();
        const other = `owner-${randomUUID()}`;
        const mine: string[] = [];
        for (let i = 0; i < 4; i++) {
          mine.push((await create()).taskId);
          await create({ owner: other });
          clock.advance(1);
        }
        const page = await store.list(owner, undefined, 100);
        expect(page.tasks.map((task) => task.taskId)).toEqual(mine);
        expect(page).not.toHaveProperty('nextCursor');
        expect(await ids(other)).toHaveLength(4);
        expect(await ids(`owner-${randomUUID()}`)).toEqual([]);
      });

      it('pages with a nextCursor while more tasks remain, and none on the last page (spec: Task Listing 1, 2)', async () => {
        const { store, owner, create } = await setup();
        const all: string[] = [];
        for (let i = 0; i < 5; i++) all.push((await create()).taskId);
        const first = await store.list(owner, undefined, 2);
        expect(first.tasks.map((task) => task.taskId)).toEqual(all.slice(0, 2));
        expect(first.nextCursor).toEqual(expect.any(String));
        const second = await store.list(owner, first.nextCursor, 2);
        expect(second.tasks.map((task) => task.taskId)).toEqual(all.slice(2, 4));
        expect(second.nextCursor).toEqual(expect.any(String));
        const last = await store.list(owner, second.nextCursor, 2);
        expect(last.tasks.map((task) => task.taskId)).toEqual(all.slice(4));
        expect(last).not.toHaveProperty('nextCursor');
      });

      it('following nextCursor visits every task exactly once when the count is a multiple of the page size', async () => {
        const { store, owner, create } = await setup();
        const all: string[] = [];
        for (let i = 0; i < 6; i++) all.push((await create()).taskId);
        const visited: string[] = [];
        let cursor: string | undefined;
        for (let pages = 0; pages < 10; pages++) {
          const page = await store.list(owner, cursor, 3);
          visited.push(...page.tasks.map((task) => task.taskId));
          cursor = page.nextCursor;
          if (cursor === undefined) break;
        }
        expect(cursor).toBeUndefined();
        expect(visited).toEqual(all);
      });

      it('lists every task that get can return, terminal ones included, as they are now (spec: Task Listing 4)', async () => {
        const { store, createIn, owner } = await setup();
        const tasks = [];
        for (const status of STATUSES) tasks.push(await createIn(status));
        const listed = (await store.list(owner, undefined, 100)).tasks;
        expect(listed).toEqual(await Promise.all(tasks.map((task) => store.get(task.taskId))));
        expect(listed.map((task) => task.status)).toEqual(STATUSES);
      });

      it('a task created after a page was served appears on a later page', async () => {
        const { store, owner, create } = await setup();
        const all: string[] = [];
        for (let i = 0; i < 3; i++) all.push((await create()).taskId);
        const first = await store.list(owner, undefined, 2);
        all.push((await create()).taskId);
        const rest = await store.list(owner, first.nextCursor, 10);
        expect(rest.tasks.map((task) => task.taskId)).toEqual(all.slice(2));
      });

      it('a cursor stays valid after the tasks before it expire', async () => {
        const { store, clock, owner, create } = await setup();
        const early = [await create({ ttl: 10_000 }), await create({ ttl: 10_000 })];
        const late = await create({ ttl: HOUR });
        for (const task of early) await store.update(task.taskId, { status: 'completed' });
        const first = await store.list(owner, undefined, 2);
        expect(first.tasks.map((task) => task.taskId)).toEqual(early.map((task) => task.taskId));
        clock.advance(10 * 60_000);
        const rest = await store.list(owner, first.nextCursor, 2);
        expect(rest.tasks.map((task) => task.taskId)).toEqual([late.taskId]);
      });

      it('issue 14.4: no page with a cursor is empty, however many of the listed tasks expired or were evicted', async () => {
        /** Walks every page of `size`: each one with a cursor holds a task; returns the ids visited. */
        const walk = async (store: TaskStore, owner: string, size: number): Promise<string[]> => {
          const visited: string[] = [];
          let cursor: string | undefined;
          for (let pages = 0; pages < 20; pages++) {
            const page = await store.list(owner, cursor, size);
            cursor = page.nextCursor;
            if (cursor !== undefined) expect(page.tasks.length).toBeGreaterThan(0);
            visited.push(...page.tasks.map((task) => task.taskId));
            if (cursor === undefined) break;
          }
          return visited;
        };
        const expiring = await setup();
        const kept = [await expiring.create()];
        for (let i = 0; i < 3; i++) await expiring.createIn('completed', { ttl: 10_000 });
        kept.push(await expiring.create());
        expiring.clock.advance(10 * 60_000);
        for (const size of [1, 2, 3]) {
          expect(await walk(expiring.store, expiring.owner, size)).toEqual(kept.map((task) => task.taskId));
        }
        // Full of two live and two finished tasks: each new one evicts a finished one.
        const evicting = await setup({ maxTasks: 4 });
        const live = [await evicting.create()];
        for (let i = 0; i < 2; i++) await evicting.createIn('completed');
        live.push(await evicting.create(), await evicting.create(), await evicting.create());
        for (const size of [1, 2, 3]) {
          expect(await walk(evicting.store, evicting.owner, size)).toEqual(live.map((task) => task.taskId));
        }
      });

      it('refuses a cursor issued to another owner (spec: Task Listing 3; Error Handling, invalid cursor)', async () => {
        const { store, owner, create } = await setup();
        const other = `owner-${randomUUID()}`;
        for (let i = 0; i < 3; i++) {
          await create();
          await create({ owner: other });
        }
        const { nextCursor } = await store.list(owner, undefined, 1);
        expect(nextCursor).toBeDefined();
        expect(await thrownBy(store.list(other, nextCursor, 1))).toBeInstanceOf(InvalidCursorError);
        expect(await thrownBy(store.list(`owner-${randomUUID()}`, nextCursor, 1))).toBeInstanceOf(
          InvalidCursorError,
        );
      });

      it('refuses a modified cursor (spec: Task Listing 3)', async () => {
        const { store, owner, create } = await setup();
        for (let i = 0; i < 3; i++) await create();
        const { nextCursor } = await store.list(owner, undefined, 1);
        const cursor = nextCursor!;
        const other = (c: string): string => (c === 'A' ? 'B' : 'A');
        const middle = Math.floor(cursor.length / 2);
        const modified = [
          other(cursor[0]!) + cursor.slice(1),
          cursor.slice(0, middle) + other(cursor[middle]!) + cursor.slice(middle + 1),
          cursor.slice(0, -1),
          cursor + 'A',
          [...cursor].reverse().join(''),
        ].filter((text) => text !== cursor);
        expect(modified).toHaveLength(5);
        for (const text of modified) {
          expect(await thrownBy(store.list(owner, text, 1)), text).toBeInstanceOf(InvalidCursorError);
        }
        expect((await store.list(owner, cursor, 1)).tasks).toHaveLength(1);
      });

      it.each([
        ['empty', ''],
        ['a word', 'garbage'],
        ['a bare number', '1'],
        ['dots', '1.2.3'],
        ['a uuid', '786512e2-9e0d-44bd-8f29-789f320fe840'],
        ['emoji', '💥'],
        ['a huge string', 'x'.repeat(10_000)],
      ])('refuses a made-up cursor: %s (spec: Error Handling, invalid cursor)', async (_, cursor) => {
        const { store, owner, create } = await setup();
        await create();
        expect(await thrownBy(store.list(owner, cursor, 10))).toBeInstanceOf(InvalidCursorError);
      });
    });

    describe('waitForTerminal', () => {
      it.each(TERMINAL)(
        'resolves at once with a task that is already %s (spec: Result Retrieval 2)',
        async (status) => {
          const { store, createIn } = await setup();
          const task = await createIn(status);
          expect(await settled(store.waitForTerminal(task.taskId), 'waitForTerminal')).toEqual(task);
        },
      );

      it('resolves when the task becomes terminal and not before (spec: Result Retrieval 3)', async () => {
        const { store, create } = await setup();
        const task = await create();
        const waiting = store.waitForTerminal(task.taskId);
        expect(await hasSettled(waiting)).toBe(false);
        await store.update(task.taskId, { status: 'input_required' });
        await store.update(task.taskId, { status: 'working' });
        expect(await hasSettled(waiting)).toBe(false);
        const done = await store.update(task.taskId, { status: 'completed', ...outcomeOfBytes(100) });
        expect(await settled(waiting, 'waitForTerminal')).toEqual(done);
      });

      it('resolves every waiter of the task', async () => {
        const { store, create } = await setup();
        const task = await create();
        const waiters = [store.waitForTerminal(task.taskId), store.waitForTerminal(task.taskId)];
        const done = await store.update(task.taskId, { status: 'failed', statusMessage: 'boom' });
        expect(await settled(Promise.all(waiters), 'both waiters')).toEqual([done, done]);
      });

      it("rejects with the signal's reason when aborted, and leaves the task and other waiters alone", async () => {
        const { store, create } = await setup();
        const task = await create();
        const controller = new AbortController();
        const aborted = store.waitForTerminal(task.taskId, controller.signal);
        const other = store.waitForTerminal(task.taskId);
        const reason = new Error('client went away');
        controller.abort(reason);
        expect(await settled(thrownBy(aborted), 'aborted wait')).toBe(reason);
        expect((await store.get(task.taskId)).status).toBe('working');
        expect(await hasSettled(other)).toBe(false);
        const done = await store.update(task.taskId, { status: 'completed' });
        expect(await settled(other, 'the other waiter')).toEqual(done);
      });

      it('rejects with the reason of a signal that was aborted before the call', async () => {
        const { store, create } = await setup();
        const task = await create();
        const reason = new Error('too late');
        const error = await settled(
          thrownBy(store.waitForTerminal(task.taskId, AbortSignal.abort(reason))),
          'wait',
        );
        expect(error).toBe(reason);
      });

      it('rejects TaskNotFoundError for an unknown id', async () => {
        const { store } = await setup();
        const error = await settled(thrownBy(store.waitForTerminal(randomUUID())), 'wait');
        expect(error).toBeInstanceOf(TaskNotFoundError);
      });
    });

    describe('close', () => {
      it('issue 15: rejects every pending wait with TaskStoreUnavailableError; twice at once and again is fine; then every call rejects the same', async () => {
        const { store, create, newTask } = await setup();
        const task = await create();
        const other = await create();
        const waits = [
          thrownBy(store.waitForTerminal(task.taskId)),
          thrownBy(store.waitForTerminal(task.taskId)),
          thrownBy(store.waitForTerminal(other.taskId, new AbortController().signal)),
        ];
        await Promise.all([store.close(), store.close()]);
        await store.close();
        for (const error of await settled(Promise.all(waits), 'the pending waits')) {
          expect(error).toBeInstanceOf(TaskStoreUnavailableError);
        }
        for (const call of [
          () => store.get(task.taskId),
          () => store.create(newTask()),
          () => store.update(task.taskId, { status: 'completed' }),
          () => store.list(task.owner, undefined, 10),
          () => store.waitForTerminal(task.taskId),
        ]) {
          expect(await settled(thrownBy(call()), 'a call after close')).toBeInstanceOf(
            TaskStoreUnavailableError,
          );
        }
      });

      if (features.executorLease)
        describe('with an executor lease', () => {
          it("fails the closing store's live tasks at once with EXECUTOR_LOST, waking waiters elsewhere; its ended tasks and other stores' tasks stay", async () => {
            const { store, create, newTask, replica } = await setup();
            const other = await replica();
            const working = await create();
            const asking = await create();
            await store.update(asking.taskId, { status: 'input_required' });
            const done = await create();
            const completed = await store.update(done.taskId, {
              status: 'completed',
              ...outcomeOfBytes(100),
            });
            const kept = await other.create(newTask());
            const waits = Promise.all([
              other.waitForTerminal(working.taskId),
              other.waitForTerminal(asking.taskId),
            ]);
            await store.close();
            for (const record of await settled(waits, 'the waiters on the other store')) {
              expect(record).toMatchObject({
                status: 'failed',
                statusMessage: EXECUTOR_LOST,
                outcome: { error: { message: EXECUTOR_LOST } },
              });
            }
            expect(await other.get(done.taskId)).toEqual(completed);
            expect((await other.get(kept.taskId)).status).toBe('working');
          });

          it('a lost task can no longer be moved or finished by anyone', async () => {
            const { store, create, replica } = await setup();
            const other = await replica();
            const task = await create();
            await store.close();
            for (const change of [
              { from: 'working', status: 'input_required' },
              { status: 'completed' },
            ] as const) {
              expect(await thrownBy(other.update(task.taskId, change))).toBeInstanceOf(
                change.from ? StaleStatusError : IllegalTransitionError,
              );
            }
            expect((await other.get(task.taskId)).statusMessage).toBe(EXECUTOR_LOST);
          });
        });
    });

    describe('ttl', () => {
      it('a terminal task is kept until ttl after its creation, then is gone (spec: TTL and Resource Management 5)', async () => {
        const { store, clock, owner, create, ids } = await setup();
        const task = await create({ ttl: 10 * 60_000 });
        clock.at(task.createdAt, 1_000);
        await store.update(task.taskId, { status: 'completed', ...outcomeOfBytes(100) });
        clock.at(task.createdAt, 10 * 60_000 - 1);
        expect((await store.get(task.taskId)).status).toBe('completed');
        expect(await ids(owner)).toEqual([task.taskId]);
        // Counted from creation: a ttl counted from the last update would still have 1 s to run.
        clock.at(task.createdAt, 10 * 60_000 + 1);
        expect(await thrownBy(store.get(task.taskId))).toBeInstanceOf(TaskNotFoundError);
        expect(await ids(owner)).toEqual([]);
        expect(await thrownBy(store.update(task.taskId, { status: 'working' }))).toBeInstanceOf(
          TaskNotFoundError,
        );
        expect(await settled(thrownBy(store.waitForTerminal(task.taskId)), 'wait')).toBeInstanceOf(
          TaskNotFoundError,
        );
      });

      it.each(['working', 'input_required'] as const)(
        'a %s task never expires, however long it runs',
        async (status) => {
          const { store, clock, owner, createIn, ids } = await setup();
          const task = await createIn(status, { ttl: 10_000 });
          clock.at(task.createdAt, 1_000 * 10_000);
          expect((await store.get(task.taskId)).status).toBe(status);
          expect(await ids(owner)).toEqual([task.taskId]);
          expect((await store.update(task.taskId, { status: 'completed' })).status).toBe('completed');
        },
      );

      it('a task that ends after its ttl stays readable for a short grace period, then goes', async () => {
        const { store, clock, owner, create, ids } = await setup();
        const task = await create({ ttl: 10_000 });
        clock.at(task.createdAt, 20_000);
        const done = await store.update(task.taskId, { status: 'completed', ...outcomeOfBytes(100) });
        expect(await store.get(task.taskId)).toEqual(done);
        clock.at(done.lastUpdatedAt, GRACE_AT_LEAST_MS);
        expect(await store.get(task.taskId)).toEqual(done);
        expect(await ids(owner)).toEqual([task.taskId]);
        clock.at(done.lastUpdatedAt, GRACE_AT_MOST_MS + 1);
        expect(await thrownBy(store.get(task.taskId))).toBeInstanceOf(TaskNotFoundError);
        expect(await ids(owner)).toEqual([]);
      });

      it('a waiter of a task that ends after its ttl gets the task', async () => {
        const { store, clock, create } = await setup();
        const task = await create({ ttl: 10_000 });
        const waiting = store.waitForTerminal(task.taskId);
        clock.at(task.createdAt, 60_000);
        const done = await store.update(task.taskId, { status: 'completed' });
        expect(await settled(waiting, 'wait')).toEqual(done);
      });

      it('each task expires on its own ttl', async () => {
        const { store, clock, owner, create, ids } = await setup();
        const short = await create({ ttl: 10_000 });
        const long = await create({ ttl: 20_000 });
        await store.update(short.taskId, { status: 'completed' });
        await store.update(long.taskId, { status: 'completed' });
        clock.at(short.createdAt, 15_000);
        expect(await ids(owner)).toEqual([long.taskId]);
        expect((await store.get(long.taskId)).status).toBe('completed');
      });
    });

    describe('limits', () => {
      it('when full, a new task evicts the least recently used terminal task (spec: Resource Management 1)', async () => {
        const { store, clock, owner, create, ids } = await setup({ maxTasks: 3 });
        const [a, b, c] = [await create(), await create(), await create()];
        clock.advance(1);
        await store.update(a!.taskId, { status: 'completed' });
        clock.advance(1);
        await store.update(b!.taskId, { status: 'completed' });
        clock.advance(1);
        const d = await create();
        expect(await thrownBy(store.get(a!.taskId))).toBeInstanceOf(TaskNotFoundError);
        expect(await ids(owner)).toEqual([b!.taskId, c!.taskId, d.taskId]);
      });

      it('reading a terminal task makes it recently used', async () => {
        const { store, clock, owner, create, ids } = await setup({ maxTasks: 3 });
        const [a, b, c] = [await create(), await create(), await create()];
        clock.advance(1);
        await store.update(a!.taskId, { status: 'completed' });
        clock.advance(1);
        await store.update(b!.taskId, { status: 'completed' });
        clock.advance(1);
        await store.get(a!.taskId);
        clock.advance(1);
        const d = await create();
        expect(await thrownBy(store.get(b!.taskId))).toBeInstanceOf(TaskNotFoundError);
        expect(await ids(owner)).toEqual([a!.taskId, c!.taskId, d.taskId]);
      });

      it('a store full of live tasks refuses new ones with TaskLimitError and keeps every task (spec: Resource Management 1.1)', async () => {
        const { store, owner, create, createIn, ids } = await setup({ maxTasks: 3 });
        const live = [await create(), await createIn('input_required'), await create()];
        for (let i = 0; i < 2; i++) expect(await thrownBy(create())).toBeInstanceOf(TaskLimitError);
        expect(await ids(owner)).toEqual(live.map((task) => task.taskId));
        for (const task of live) expect(await store.get(task.taskId)).toEqual(task);
        await store.update(live[0]!.taskId, { status: 'completed' });
        const next = await create();
        expect(await ids(owner)).toEqual([live[1]!.taskId, live[2]!.taskId, next.taskId]);
      });

      it('an outcome larger than maxResultBytes is refused with TaskLimitError and changes nothing', async () => {
        const { store, clock, create } = await setup({ maxResultBytes: 1_000 });
        const task = await create();
        const waiting = store.waitForTerminal(task.taskId);
        clock.advance(1_000);
        const error = await thrownBy(
          store.update(task.taskId, { status: 'completed', ...outcomeOfBytes(1_001) }),
        );
        expect(error).toBeInstanceOf(TaskLimitError);
        expect(await store.get(task.taskId)).toEqual(task);
        expect(await hasSettled(waiting)).toBe(false);
        const failed = await store.update(task.taskId, {
          status: 'failed',
          statusMessage: 'result too large',
        });
        expect(await settled(waiting, 'wait')).toEqual(failed);
      });

      it('issue 13.4: creations in flight for one caller all count: with a live limit of 3, ten at once make exactly 3 and refuse 7 with CallerLimitError', async () => {
        const { owner, create, ids } = await setup();
        const liveLimit = { caller: `caller-${randomUUID()}`, max: 3 };
        const outcomes = await Promise.allSettled(Array.from({ length: 10 }, () => create({ liveLimit })));
        const made = outcomes.flatMap((o) => (o.status === 'fulfilled' ? [o.value.taskId] : []));
        const refused = outcomes.flatMap((o) => (o.status === 'rejected' ? [o.reason as unknown] : []));
        expect(made).toHaveLength(3);
        expect(refused).toHaveLength(7);
        for (const error of refused) {
          expect(error).toBeInstanceOf(CallerLimitError);
          expect(error).toMatchObject({ live: 3, max: 3 });
        }
        expect((await ids(owner)).sort()).toEqual(made.sort());
      });

      it('issue 13.4: a task that ends frees its slot, whichever replica ends it; each caller has its own count', async () => {
        const { create, replica } = await setup();
        const other = await replica();
        const alice = { caller: `alice-${randomUUID()}`, max: 2 };
        const bob = { caller: `bob-${randomUUID()}`, max: 2 };
        const first = await create({ liveLimit: alice });
        const second = await create({ liveLimit: alice });
        await other.update(second.taskId, { status: 'input_required' });
        expect(await thrownBy(create({ liveLimit: alice }))).toBeInstanceOf(CallerLimitError);
        await create({ liveLimit: bob });
        await create();
        await other.update(first.taskId, { status: 'cancelled' });
        await create({ liveLimit: alice });
        expect(await thrownBy(create({ liveLimit: alice }))).toBeInstanceOf(CallerLimitError);
        await other.update(second.taskId, { status: 'completed' });
        await create({ liveLimit: alice });
      });

      it('an outcome of exactly maxResultBytes is accepted', async () => {
        const { store, create } = await setup({ maxResultBytes: 1_000 });
        const task = await create();
        const fits = outcomeOfBytes(1_000);
        const done = await store.update(task.taskId, { status: 'completed', ...fits });
        expect(done).toMatchObject({ status: 'completed', outcome: fits.outcome });
        expect(await store.get(task.taskId)).toEqual(done);
      });
    });

    describe('a result kept as bytes (issue 33)', () => {
      /** Text JSON.parse and re-serialising would change: spacing, escapes, a non-ASCII character, digits. */
      const KEPT = '{ "content" : [{"type":"text","text":"caf\u00e9 \\u0041 ☕"}], "n": 1.50 }';
      const bytesOf = ({ resultBytes: bytes }: TaskRecord): Buffer | undefined =>
        bytes === undefined ? undefined : bytes instanceof Pieces ? bytes.join() : Buffer.from(bytes);

      it('reads back as the very bytes it was given, by get, by a waiter, and by another replica', async () => {
        const { store, create, replica } = await setup();
        const other = await replica();
        const task = await create();
        const waiting = other.waitForTerminal(task.taskId);
        const kept = Buffer.from(KEPT);
        const done = await store.update(task.taskId, {
          status: 'completed',
          resultBytes: kept,
          outcomeBytes: kept.length + 40,
        });
        expect(done).toMatchObject({ status: 'completed', outcomeBytes: kept.length + 40 });
        expect(done.outcome).toBeUndefined();
        for (const read of [done, await store.get(task.taskId), await settled(waiting, 'wait')]) {
          expect(bytesOf(read)).toEqual(kept);
          expect(read.outcome).toBeUndefined();
        }
        expect(bytesOf(await other.get(task.taskId))).toEqual(kept);
      });

      it('given in the pieces it was read in, reads back as the same bytes, a character cut between pieces included', async () => {
        const { store, create, replica } = await setup();
        const other = await replica();
        const task = await create();
        const waiting = other.waitForTerminal(task.taskId);
        const kept = Buffer.from(KEPT);
        // Cut inside the three bytes of ☕ and inside the two of é, and one piece of a single byte.
        const cuts = [0, 3, kept.indexOf('\u00e9') + 1, kept.indexOf('☕') + 2, kept.length - 1, kept.length];
        const parts = cuts.slice(1).map((end, i) => kept.subarray(cuts[i], end));
        const done = await store.update(task.taskId, {
          status: 'completed',
          resultBytes: new Pieces(parts, kept.length),
          outcomeBytes: kept.length,
        });
        for (const read of [done, await store.get(task.taskId), await settled(waiting, 'wait')]) {
          expect(bytesOf(read)).toEqual(kept);
        }
        expect(bytesOf(await other.get(task.taskId))).toEqual(kept);
      });

      it('counts against maxResultBytes as its outcomeBytes: over it, TaskLimitError and nothing changed', async () => {
        const { store, create } = await setup({ maxResultBytes: 1_000 });
        const task = await create();
        const over = { status: 'completed' as const, resultBytes: Buffer.from(KEPT), outcomeBytes: 1_001 };
        expect(await thrownBy(store.update(task.taskId, over))).toBeInstanceOf(TaskLimitError);
        expect(await store.get(task.taskId)).toEqual(task);
        const fits = await store.update(task.taskId, { ...over, outcomeBytes: 1_000 });
        expect(bytesOf(await store.get(fits.taskId))).toEqual(Buffer.from(KEPT));
      });

      it('is listed with its task like any other outcome, and a terminal task keeps it', async () => {
        const { store, owner, create } = await setup();
        const task = await create();
        await store.update(task.taskId, { status: 'completed', resultBytes: KEPT, outcomeBytes: 100 });
        const page = await store.list(owner, undefined, 10);
        expect(page.tasks.map((listed) => listed.taskId)).toEqual([task.taskId]);
        expect(await thrownBy(store.update(task.taskId, { status: 'failed' }))).toBeInstanceOf(
          IllegalTransitionError,
        );
        expect(bytesOf(await store.get(task.taskId))).toEqual(Buffer.from(KEPT));
      });
    });
  });
}

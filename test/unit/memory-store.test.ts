import { afterEach, describe, expect, it, vi } from 'vitest';
import { TaskNotFoundError } from '../../src/tasks/errors.js';
import { LATE_RESULT_GRACE_MS } from '../../src/tasks/expiry.js';
import { MemoryTaskStore, type MemoryStoreOptions } from '../../src/tasks/memory-store.js';
import type { TaskOutcome } from '../../src/tasks/state.js';
import type { NewTask } from '../../src/tasks/store.js';
import { describeTaskStoreContract } from '../store-contract.js';

// One process: the store is its own only replica.
describeTaskStoreContract(
  'MemoryTaskStore',
  (options) => new MemoryTaskStore(options),
  (store) => store,
);

const START = Date.UTC(2025, 10, 25, 10, 30, 0);
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('MemoryTaskStore', () => {
  const opened: MemoryTaskStore[] = [];
  let time = START;

  afterEach(async () => {
    await Promise.all(opened.splice(0).map((store) => store.close()));
    vi.useRealTimers();
  });

  function open(options: Partial<MemoryStoreOptions> = {}): MemoryTaskStore {
    time = START;
    const store = new MemoryTaskStore({ maxTasks: 100, maxResultBytes: 1_000, now: () => time, ...options });
    opened.push(store);
    return store;
  }

  const task = (overrides: Partial<NewTask> = {}): NewTask => ({
    owner: 'owner-1',
    sessionId: 'session-1',
    toolName: 'slow_tool',
    ttl: 3_600_000,
    pollInterval: 1_000,
    ...overrides,
  });

  const outcome: TaskOutcome = { result: { content: [] } };

  /** Creates a task and completes it with an outcome counted as `bytes` bytes. */
  async function finished(
    store: MemoryTaskStore,
    bytes: number,
    overrides: Partial<NewTask> = {},
  ): Promise<string> {
    const { taskId } = await store.create(task(overrides));
    await store.update(taskId, { status: 'completed', outcome, outcomeBytes: bytes });
    return taskId;
  }

  const exists = (store: MemoryTaskStore, taskId: string): Promise<boolean> =>
    store.get(taskId).then(
      () => true,
      (error: unknown) => {
        if (error instanceof TaskNotFoundError) return false;
        throw error;
      },
    );

  it('mints version 4 UUIDs as task ids (spec: Security, 122 random bits)', async () => {
    const store = open();
    for (let i = 0; i < 20; i++) expect((await store.create(task())).taskId).toMatch(UUID_V4);
  });

  it('size counts live tasks, terminal tasks and the bytes of their outcomes', async () => {
    const store = open();
    expect(store.size).toEqual({ live: 0, terminal: 0, bytes: 0 });
    const live = await store.create(task());
    await store.create(task());
    await finished(store, 300);
    await finished(store, 200);
    expect(store.size).toEqual({ live: 2, terminal: 2, bytes: 500 });
    await store.update(live.taskId, { status: 'completed', outcome, outcomeBytes: 100 });
    expect(store.size).toEqual({ live: 1, terminal: 3, bytes: 600 });
  });

  it('evicts terminal tasks least recently used first to keep their outcomes within maxResultBytes', async () => {
    const store = open({ maxResultBytes: 1_000 });
    const a = await finished(store, 400);
    const b = await finished(store, 400);
    expect(store.evictions).toBe(0);
    const c = await finished(store, 400);
    expect(await exists(store, a)).toBe(false);
    expect([await exists(store, b), await exists(store, c)]).toEqual([true, true]);
    expect(store.size).toEqual({ live: 0, terminal: 2, bytes: 800 });
    expect(store.evictions).toBe(1);
    const listed = (await store.list('owner-1', undefined, 10)).tasks.map((record) => record.taskId);
    expect(listed).toEqual([b, c]);
  });

  it('a read protects a terminal task from the byte-budget eviction', async () => {
    const store = open({ maxResultBytes: 1_000 });
    const a = await finished(store, 400);
    const b = await finished(store, 400);
    await store.get(a);
    await finished(store, 400);
    expect([await exists(store, a), await exists(store, b)]).toEqual([true, false]);
  });

  it('one large outcome evicts as many small ones as it needs', async () => {
    const store = open({ maxResultBytes: 1_000 });
    const small = [];
    for (let i = 0; i < 5; i++) small.push(await finished(store, 150));
    const large = await finished(store, 700);
    const kept = [];
    for (const id of small) kept.push(await exists(store, id));
    expect(kept).toEqual([false, false, false, true, true]);
    expect(await exists(store, large)).toBe(true);
    expect(store.evictions).toBe(3);
    expect(store.size.bytes).toBe(1_000);
  });

  it('never evicts a live task for bytes', async () => {
    const store = open({ maxResultBytes: 1_000 });
    const live = await store.create(task());
    await finished(store, 1_000);
    await finished(store, 1_000);
    expect(await exists(store, live.taskId)).toBe(true);
    expect(store.size.live).toBe(1);
  });

  it('counts an eviction for a task pushed out by maxTasks', async () => {
    const store = open({ maxTasks: 2 });
    const old = await finished(store, 10);
    await store.create(task());
    await store.create(task());
    expect(store.evictions).toBe(1);
    expect(await exists(store, old)).toBe(false);
    expect(store.size).toMatchObject({ live: 2, terminal: 0 });
  });

  it('does not count expiry as an eviction', async () => {
    const store = open();
    const id = await finished(store, 10, { ttl: 10_000 });
    time += 10_000;
    expect(await exists(store, id)).toBe(false);
    expect(store.evictions).toBe(0);
    expect(store.size).toEqual({ live: 0, terminal: 0, bytes: 0 });
  });

  it('grace for a task that ends after its ttl is the ttl itself when shorter than LATE_RESULT_GRACE_MS', async () => {
    const store = open();
    const { taskId, createdAt } = await store.create(task({ ttl: 10_000 }));
    time = createdAt + 30_000;
    await store.update(taskId, { status: 'completed' });
    time = createdAt + 30_000 + 10_000 - 1;
    expect(await exists(store, taskId)).toBe(true);
    time += 1;
    expect(await exists(store, taskId)).toBe(false);
  });

  it('grace for a task that ends after a long ttl is LATE_RESULT_GRACE_MS', async () => {
    const store = open();
    const ttl = 10 * LATE_RESULT_GRACE_MS;
    const { taskId, createdAt } = await store.create(task({ ttl }));
    time = createdAt + 2 * ttl;
    await store.update(taskId, { status: 'completed' });
    time += LATE_RESULT_GRACE_MS - 1;
    expect(await exists(store, taskId)).toBe(true);
    time += 1;
    expect(await exists(store, taskId)).toBe(false);
  });

  it('sweeps expired terminal tasks out on its timer without anyone reading them', async () => {
    vi.useFakeTimers();
    const store = open({ sweepIntervalMs: 1_000 });
    await finished(store, 10, { ttl: 10_000 });
    await finished(store, 10, { ttl: 60_000 });
    time += 10_000;
    expect(store.size.terminal).toBe(2);
    vi.advanceTimersByTime(1_000);
    expect(store.size).toEqual({ live: 0, terminal: 1, bytes: 10 });
  });

  it('stops sweeping once closed, and close can be called twice', async () => {
    vi.useFakeTimers();
    const store = open({ sweepIntervalMs: 1_000 });
    await finished(store, 10, { ttl: 10_000 });
    time += 10_000;
    await store.close();
    await store.close();
    vi.advanceTimersByTime(5_000);
    expect(store.size.terminal).toBe(1);
    expect(vi.getTimerCount()).toBe(0);
  });
});

import { pino } from 'pino';
import { register as globalRegistry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import {
  MAX_LABEL_VALUES,
  PrometheusMetrics,
  NO_SERVER,
  NO_SUBJECT,
  OTHER_LABEL,
} from '../../src/observability/metrics.js';
import { ObservedStore } from '../../src/observability/observed-store.js';
import { observeTasks } from '../../src/observability/observe.js';
import { MemoryTaskStore } from '../../src/tasks/memory-store.js';
import type { TaskStatus } from '../../src/tasks/state.js';
import type { NewTask } from '../../src/tasks/store.js';
import { sample } from '../helpers/prometheus.js';
import { taskRecord } from '../helpers/records.js';

const silent = pino({ level: 'silent' });

const record = taskRecord;

const newTask = (toolName = 'slow'): NewTask => ({
  owner: 'o',
  sessionId: 's',
  toolName,
  ttl: 60_000,
  pollInterval: 1_000,
});

describe('PrometheusMetrics', () => {
  it('counts tasks by tool and terminal status, and times them', async () => {
    const metrics = new PrometheusMetrics({ defaultMetrics: false });
    metrics.taskCreated(record());
    metrics.taskCreated(record({ toolName: 'fast' }));
    metrics.taskChanged(record({ status: 'input_required' }));
    metrics.taskChanged(record({ status: 'completed', lastUpdatedAt: 3_500 }));
    metrics.taskChanged(record({ toolName: 'fast', status: 'failed', lastUpdatedAt: 1_040 }));
    const text = await metrics.text();
    expect(sample(text, 'taskgate_tasks_created_total', { tool: 'slow' })).toBe(1);
    expect(sample(text, 'taskgate_tasks_created_total', { tool: 'fast' })).toBe(1);
    expect(sample(text, 'taskgate_tasks_finished_total', { tool: 'slow', status: 'completed' })).toBe(1);
    expect(sample(text, 'taskgate_tasks_finished_total', { tool: 'fast', status: 'failed' })).toBe(1);
    // input_required is not an end: nothing is counted for it.
    expect(sample(text, 'taskgate_tasks_finished_total', { status: 'input_required' })).toBeUndefined();
    const completed = { tool: 'slow', status: 'completed' };
    expect(sample(text, 'taskgate_task_duration_seconds_sum', completed)).toBeCloseTo(2.5);
    expect(sample(text, 'taskgate_task_duration_seconds_bucket', { ...completed, le: '2.5' })).toBe(1);
    expect(sample(text, 'taskgate_task_duration_seconds_bucket', { ...completed, le: '1' })).toBe(0);
  });

  it('issue 32: labels the task metrics with the server only when registered for several servers', async () => {
    const one = await new PrometheusMetrics({ defaultMetrics: false }).text();
    expect(one).not.toContain('server=');
    const metrics = new PrometheusMetrics({ defaultMetrics: false, servers: true });
    metrics.taskCreated(record({ server: 'files' }));
    metrics.taskChanged(record({ server: 'files', status: 'completed', lastUpdatedAt: 3_500 }));
    metrics.taskExpired(record({ server: 'files', status: 'completed' }));
    metrics.taskCreated(record());
    const text = await metrics.text();
    expect(sample(text, 'taskgate_tasks_created_total', { tool: 'slow', server: 'files' })).toBe(1);
    expect(sample(text, 'taskgate_tasks_created_total', { tool: 'slow', server: NO_SERVER })).toBe(1);
    const done = { tool: 'slow', server: 'files', status: 'completed' };
    expect(sample(text, 'taskgate_tasks_finished_total', done)).toBe(1);
    expect(sample(text, 'taskgate_task_duration_seconds_count', done)).toBe(1);
    expect(sample(text, 'taskgate_tasks_expired_total', { tool: 'slow', server: 'files' })).toBe(1);
  });

  it('issue 32: counts live tasks by server only when registered for several servers, 0 once one has none', async () => {
    const one = new PrometheusMetrics({ defaultMetrics: false });
    let live = new Map<string | undefined, Partial<Record<TaskStatus, number>>>([
      ['files', { working: 2 }],
      [undefined, { input_required: 1 }],
    ]);
    one.observeLiveTasks(
      () => ({ working: 3 }),
      () => live,
    );
    expect(sample(await one.text(), 'taskgate_tasks_live', { status: 'working' })).toBe(3);
    expect(await one.text()).not.toContain('server=');
    const metrics = new PrometheusMetrics({ defaultMetrics: false, servers: true });
    metrics.observeLiveTasks(
      () => ({ working: 3 }),
      () => live,
    );
    let text = await metrics.text();
    expect(sample(text, 'taskgate_tasks_live', { status: 'working', server: 'files' })).toBe(2);
    expect(sample(text, 'taskgate_tasks_live', { status: 'input_required', server: NO_SERVER })).toBe(1);
    live = new Map();
    text = await metrics.text();
    expect(sample(text, 'taskgate_tasks_live', { status: 'working', server: 'files' })).toBe(0);
  });

  it('reads levels from their sources when scraped', async () => {
    const metrics = new PrometheusMetrics({ defaultMetrics: false });
    let live: Partial<Record<TaskStatus, number>> = { working: 3 };
    let sessions = 2;
    metrics.observeLiveTasks(() => live);
    metrics.observeSessions(() => sessions);
    metrics.observeStore(() => ({ live: 3, terminal: 7, bytes: 1234, evictions: 5 }));
    let text = await metrics.text();
    expect(sample(text, 'taskgate_tasks_live', { status: 'working' })).toBe(3);
    expect(sample(text, 'taskgate_tasks_live', { status: 'input_required' })).toBe(0);
    expect(sample(text, 'taskgate_sessions_open')).toBe(2);
    expect(sample(text, 'taskgate_store_tasks', { state: 'live' })).toBe(3);
    expect(sample(text, 'taskgate_store_tasks', { state: 'finished' })).toBe(7);
    expect(sample(text, 'taskgate_store_result_bytes')).toBe(1234);
    expect(sample(text, 'taskgate_store_evictions_total')).toBe(5);
    live = { working: 1, input_required: 1 };
    sessions = 0;
    text = await metrics.text();
    expect(sample(text, 'taskgate_tasks_live', { status: 'working' })).toBe(1);
    expect(sample(text, 'taskgate_tasks_live', { status: 'input_required' })).toBe(1);
    expect(sample(text, 'taskgate_sessions_open')).toBe(0);
    // The evictions counter mirrors the store's count; it does not add it up again.
    expect(sample(text, 'taskgate_store_evictions_total')).toBe(5);
  });

  it('counts waiters, refusals, expiries, upstream latency and restarts', async () => {
    const metrics = new PrometheusMetrics({ defaultMetrics: false });
    metrics.waiting(1);
    metrics.waiting(1);
    metrics.waiting(-1);
    metrics.limitRefused('max_tasks');
    metrics.limitRefused('max_sessions');
    metrics.limitRefused('max_sessions');
    metrics.taskExpired(record());
    metrics.upstreamLatency('tools/list', 0.02);
    metrics.upstreamRestarted();
    metrics.taskLookupDenied('alice');
    metrics.taskLookupDenied('alice');
    metrics.taskLookupDenied(undefined);
    const text = await metrics.text();
    expect(sample(text, 'taskgate_task_result_waiters')).toBe(1);
    expect(sample(text, 'taskgate_limit_refusals_total', { limit: 'max_tasks' })).toBe(1);
    expect(sample(text, 'taskgate_limit_refusals_total', { limit: 'max_sessions' })).toBe(2);
    expect(sample(text, 'taskgate_tasks_expired_total', { tool: 'slow' })).toBe(1);
    expect(sample(text, 'taskgate_upstream_request_duration_seconds_count', { method: 'tools/list' })).toBe(
      1,
    );
    expect(sample(text, 'taskgate_upstream_restarts_total')).toBe(1);
    expect(sample(text, 'taskgate_task_lookups_denied_total', { subject: 'alice' })).toBe(2);
    expect(sample(text, 'taskgate_task_lookups_denied_total', { subject: NO_SUBJECT })).toBe(1);
  });

  it(`keeps at most ${MAX_LABEL_VALUES} tool names, counting the rest as ${OTHER_LABEL}`, async () => {
    const metrics = new PrometheusMetrics({ defaultMetrics: false });
    for (let i = 0; i < MAX_LABEL_VALUES + 50; i++) metrics.taskCreated(record({ toolName: `tool-${i}` }));
    metrics.taskCreated(record({ toolName: 'tool-0' }));
    const text = await metrics.text();
    expect(sample(text, 'taskgate_tasks_created_total', { tool: 'tool-0' })).toBe(2);
    expect(sample(text, 'taskgate_tasks_created_total', { tool: OTHER_LABEL })).toBe(50);
    expect(
      sample(text, 'taskgate_tasks_created_total', { tool: `tool-${MAX_LABEL_VALUES}` }),
    ).toBeUndefined();
  });

  it('uses a registry of its own, with the process metrics, never the global one', async () => {
    const before = (await globalRegistry.metrics()).length;
    const text = await new PrometheusMetrics().text();
    expect(sample(text, 'process_cpu_user_seconds_total')).toBeGreaterThanOrEqual(0);
    expect(text).toContain('nodejs_heap_size_used_bytes');
    expect((await globalRegistry.metrics()).length).toBe(before);
    // Two instances side by side (tests, embedding) do not clash.
    expect(() => new PrometheusMetrics()).not.toThrow();
  });
});

describe('ObservedStore and observeTasks', () => {
  const stores: MemoryTaskStore[] = [];
  afterEach(async () => {
    await Promise.all(stores.splice(0).map((store) => store.close()));
  });
  const memory = (maxTasks = 10, maxResultBytes = 1_000): MemoryTaskStore => {
    const store = new MemoryTaskStore({ maxTasks, maxResultBytes });
    stores.push(store);
    return store;
  };

  it('counts creations and endings made through the store the sessions get', async () => {
    const metrics = new PrometheusMetrics({ defaultMetrics: false });
    const inner = memory();
    const { store, board, close } = observeTasks(inner, metrics, silent);
    const a = await store.create(newTask('slow'));
    const b = await store.create(newTask('slow'));
    await store.update(a.taskId, { status: 'completed', outcome: { result: {} }, outcomeBytes: 10 });
    await store.update(b.taskId, { status: 'cancelled' });
    const text = await metrics.text();
    expect(sample(text, 'taskgate_tasks_created_total', { tool: 'slow' })).toBe(2);
    expect(sample(text, 'taskgate_tasks_finished_total', { tool: 'slow', status: 'completed' })).toBe(1);
    expect(sample(text, 'taskgate_tasks_finished_total', { tool: 'slow', status: 'cancelled' })).toBe(1);
    expect(sample(text, 'taskgate_store_tasks', { state: 'finished' })).toBe(2);
    expect(sample(text, 'taskgate_store_result_bytes')).toBe(10 + 1);
    expect(board.snapshot().recent.map((task) => task.status)).toEqual(['cancelled', 'completed']);
    close();
    await store.create(newTask('after'));
    await inner.update((await inner.create(newTask('after'))).taskId, { status: 'failed' });
    expect(sample(await metrics.text(), 'taskgate_tasks_finished_total', { tool: 'after' })).toBeUndefined();
  });

  it('issue 32: counts a server’s own tasks (passed through) seen live, and times those seen finishing', async () => {
    const metrics = new PrometheusMetrics({ defaultMetrics: false });
    const { board, close } = observeTasks(memory(), metrics, silent);
    const sightings = board.sightingsOf('s1');
    const at = Date.now();
    const task = (taskId: string, status: TaskStatus, seconds = 0) => ({
      taskId,
      status,
      ttl: 60_000,
      createdAt: new Date(at).toISOString(),
      lastUpdatedAt: new Date(at + seconds * 1_000).toISOString(),
    });
    sightings.upstreamTask(task('own-1', 'working'), 'research');
    sightings.upstreamTask(task('own-1', 'working'), 'research');
    sightings.upstreamTask(task('own-1', 'completed', 2), 'research');
    // Seen again once finished (a later tasks/get): not counted twice.
    sightings.upstreamTask(task('own-1', 'completed', 2), 'research');
    sightings.upstreamTask(task('own-2', 'working'), 'research');
    // First seen finished: its start was not seen, so neither is counted.
    sightings.upstreamTask(task('own-3', 'failed', 1), 'research');
    const text = await metrics.text();
    expect(sample(text, 'taskgate_upstream_tasks_created_total', { tool: 'research' })).toBe(2);
    const finished = { tool: 'research', status: 'completed' };
    expect(sample(text, 'taskgate_upstream_tasks_finished_total', finished)).toBe(1);
    expect(
      sample(text, 'taskgate_upstream_tasks_finished_total', { tool: 'research', status: 'failed' }),
    ).toBeUndefined();
    expect(sample(text, 'taskgate_upstream_task_duration_seconds_sum', finished)).toBe(2);
    // taskgate's own task counters are not the servers'.
    expect(sample(text, 'taskgate_tasks_created_total', { tool: 'research' })).toBeUndefined();
    close();
  });

  it('counts refusals by the limit that refused', async () => {
    const metrics = new PrometheusMetrics({ defaultMetrics: false });
    const { store } = observeTasks(memory(1, 100), metrics, silent);
    const only = await store.create(newTask());
    await expect(store.create(newTask())).rejects.toThrow(/Too many live tasks/);
    await expect(
      store.update(only.taskId, { status: 'completed', outcome: { result: {} }, outcomeBytes: 500 }),
    ).rejects.toThrow(/larger than the budget/);
    const text = await metrics.text();
    expect(sample(text, 'taskgate_limit_refusals_total', { limit: 'max_tasks' })).toBe(1);
    expect(sample(text, 'taskgate_limit_refusals_total', { limit: 'max_result_bytes' })).toBe(1);
  });

  it('counts tasks/result waiters while they wait, and not after, however they end', async () => {
    const waiting: number[] = [];
    let now = 0;
    const store = new ObservedStore(memory(), {
      created: () => undefined,
      refused: () => undefined,
      waiting: (delta) => waiting.push((now += delta)),
    });
    const a = await store.create(newTask());
    const b = await store.create(newTask());
    const first = store.waitForTerminal(a.taskId);
    const abort = new AbortController();
    const second = store.waitForTerminal(b.taskId, abort.signal);
    expect(now).toBe(2);
    abort.abort(new Error('client cancelled'));
    await expect(second).rejects.toThrow('client cancelled');
    expect(now).toBe(1);
    await store.update(a.taskId, { status: 'completed', outcome: { result: {} } });
    await first;
    expect(now).toBe(0);
    await expect(store.waitForTerminal('no-such-task')).rejects.toThrow(/not found/);
    expect(now).toBe(0);
    expect(waiting).toEqual([1, 2, 1, 0, 1, 0]);
  });

  it('counts finished tasks that expire, by tool (memory store)', async () => {
    let time = 0;
    const metrics = new PrometheusMetrics({ defaultMetrics: false });
    const inner = new MemoryTaskStore({
      maxTasks: 10,
      maxResultBytes: 1_000,
      now: () => time,
      onExpired: (expired) => metrics.taskExpired(expired),
    });
    stores.push(inner);
    const { store } = observeTasks(inner, metrics, silent);
    const task = await store.create({ ...newTask('brief'), ttl: 1_000 });
    await store.update(task.taskId, { status: 'completed', outcome: { result: {} } });
    time = 5_000;
    await expect(store.get(task.taskId)).rejects.toThrow(/not found/);
    expect(sample(await metrics.text(), 'taskgate_tasks_expired_total', { tool: 'brief' })).toBe(1);
  });
});

/**
 * The store's status changes handed out by session (src/tasks/session-transitions.ts), over a real
 * MemoryTaskStore.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MemoryTaskStore } from '../../src/tasks/memory-store.js';
import { sessionTransitions } from '../../src/tasks/session-transitions.js';
import type { TaskRecord } from '../../src/tasks/state.js';
import type { TaskStore } from '../../src/tasks/store.js';

const stores: TaskStore[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
  vi.restoreAllMocks();
});

function open(): MemoryTaskStore {
  const store = new MemoryTaskStore({ maxTasks: 100, maxResultBytes: 1024 });
  stores.push(store);
  return store;
}

const task = (store: TaskStore, sessionId: string) =>
  store.create({ owner: 'o', sessionId, toolName: 't', ttl: 60_000, pollInterval: 1_000 });

describe('sessionTransitions', () => {
  it("tells each session's listeners of its own tasks' changes only, with one listener on the store", async () => {
    const store = open();
    const subscribed = vi.spyOn(store, 'onTransition');
    const heard: Record<string, string[]> = { a: [], b: [] };
    const listen = (session: string) =>
      sessionTransitions(store).on(session, (record: TaskRecord) => heard[session]!.push(record.status));
    listen('a');
    listen('a');
    listen('b');
    expect(subscribed).toHaveBeenCalledTimes(1);
    const ofA = await task(store, 'a');
    await store.update(ofA.taskId, { status: 'completed', outcome: { result: {} } });
    const ofB = await task(store, 'b');
    await store.update(ofB.taskId, { status: 'failed', outcome: { error: { code: 1, message: 'x' } } });
    expect(heard).toEqual({ a: ['completed', 'completed'], b: ['failed'] });
  });

  it('stops a listener when asked, and leaves the store once no session listens', async () => {
    const store = open();
    const heard: string[] = [];
    const stopA = sessionTransitions(store).on('a', (record) => heard.push(`a ${record.status}`));
    const stopB = sessionTransitions(store).on('b', (record) => heard.push(`b ${record.status}`));
    stopA();
    stopA();
    const ofA = await task(store, 'a');
    await store.update(ofA.taskId, { status: 'cancelled' });
    expect(heard).toEqual([]);
    stopB();
    const unsubscribed = vi.spyOn(store, 'onTransition');
    sessionTransitions(store).on('b', (record) => heard.push(`b ${record.status}`));
    expect(unsubscribed).toHaveBeenCalledTimes(1);
    const ofB = await task(store, 'b');
    await store.update(ofB.taskId, { status: 'cancelled' });
    expect(heard).toEqual(['b cancelled']);
  });

  it('keeps one failing listener from the others of its session', async () => {
    const store = open();
    const warned = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    const heard: string[] = [];
    sessionTransitions(store).on('a', () => {
      throw new Error('listener failed');
    });
    sessionTransitions(store).on('a', (record) => heard.push(record.status));
    const ofA = await task(store, 'a');
    await store.update(ofA.taskId, { status: 'completed', outcome: { result: {} } });
    expect(heard).toEqual(['completed']);
    expect(warned).toHaveBeenCalledWith(expect.objectContaining({ message: 'listener failed' }));
  });
});

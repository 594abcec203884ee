/**
 * The process's runner of task calls: each session sees only its own calls, a tool's timeout and shutdown
 * end a call through its stop(), and drain waits for running calls within the grace period only.
 */
import { setImmediate } from 'node:timers/promises';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ErrorCode } from '../../src/protocol/errors.js';
import { TaskRunner, type TaskCall } from '../../src/tasks/task-runner.js';

afterEach(() => {
  vi.useRealTimers();
});

/** A call that settles when told, recording how it was stopped. */
function callOf(wireId: string, extra: Partial<TaskCall> = {}) {
  const stops: { reason: string; code: number | undefined }[] = [];
  let settle!: () => void;
  const settled = new Promise<void>((resolve) => (settle = resolve));
  const call: TaskCall = {
    wireId,
    stop: (reason, code) => {
      stops.push({ reason, code });
      settle();
      return Promise.resolve();
    },
    ...extra,
  };
  return { call, settled, settle, stops };
}

describe('TaskRunner', () => {
  it('keeps each session’s calls to itself: its sole task, its calls’ ids, its progress tokens', () => {
    const runner = new TaskRunner();
    const a = runner.forSession();
    const b = runner.forSession();
    const first = callOf('w1', { progressToken: 7 });
    const second = callOf('w2', { progressToken: 7 });
    a.run('task-a', first.call, first.settled);
    b.run('task-b', second.call, second.settled);
    expect(a.soleRunningTask()).toBe('task-a');
    expect(b.soleRunningTask()).toBe('task-b');
    expect(a.taskOfCall('w2')).toBeUndefined();
    expect(b.taskOfCall('w2')).toBe('task-b');
    expect(a.taskForProgressToken(7)).toBe('task-a');
    expect(b.taskForProgressToken(7)).toBe('task-b');
    expect(a.callOf('task-a')).toBe('w1');
    expect(a.callOf('task-b')).toBeUndefined();
  });

  it('forgets a call once it has settled, and tells a session waiting for its calls to end', async () => {
    const runner = new TaskRunner();
    const session = runner.forSession();
    const { call, settled, settle } = callOf('w1', { progressToken: 'p' });
    session.run('t', call, settled);
    expect(session.size).toBe(1);
    expect(session.callOf('t')).toBe('w1');
    expect(session.taskForProgressToken('p')).toBe('t');
    let idle = false;
    const waiting = session.idle(60_000).then(() => (idle = true));
    await setImmediate();
    expect(idle).toBe(false);
    settle();
    await waiting;
    expect(session.size).toBe(0);
    expect(session.soleRunningTask()).toBeUndefined();
    expect(session.taskForProgressToken('p')).toBeUndefined();
    expect(session.callOf('t')).toBeUndefined();
  });

  it('stops a call at its tool’s timeout, saying so, and not one without a timeout', async () => {
    vi.useFakeTimers();
    const session = new TaskRunner().forSession();
    const timed = callOf('w1', { timeoutMs: 1_000 });
    const untimed = callOf('w2');
    session.run('timed', timed.call, timed.settled);
    session.run('untimed', untimed.call, untimed.settled);
    await vi.advanceTimersByTimeAsync(999);
    expect(timed.stops).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(timed.stops).toEqual([
      { reason: 'Task exceeded its timeout of 1000 ms; the tool call was cancelled', code: undefined },
    ]);
    await vi.advanceTimersByTimeAsync(3_600_000);
    expect(untimed.stops).toEqual([]);
  });

  it('counts a task’s open input requests: working again only when the last is answered', () => {
    const session = new TaskRunner().forSession();
    const { call, settled } = callOf('w1');
    session.run('t', call, settled);
    expect(session.inputOpened('t')).toBe(true);
    expect(session.inputOpened('t')).toBe(true);
    expect(session.inputClosed('t')).toBe(false);
    expect(session.inputClosed('t')).toBe(true);
    expect(session.inputOpened('not-running')).toBe(false);
    expect(session.inputClosed('not-running')).toBe(false);
  });

  it('drains: no new tasks, the calls that finish within the grace are left alone, the rest stopped as shutdown', async () => {
    vi.useFakeTimers();
    const runner = new TaskRunner();
    const [a, b] = [runner.forSession(), runner.forSession()];
    const quick = callOf('w1');
    const slow = callOf('w2');
    a.run('quick', quick.call, quick.settled);
    b.run('slow', slow.call, slow.settled);
    let drained: { finished: boolean; ended: number; completed: number } | undefined;
    void runner.drain(5_000).then((result) => (drained = result));
    expect(runner.isAccepting).toBe(false);
    expect(a.isAccepting).toBe(false);
    await vi.advanceTimersByTimeAsync(1_000);
    quick.settle();
    await vi.advanceTimersByTimeAsync(3_999);
    expect(slow.stops).toEqual([]);
    expect(drained).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(drained).toEqual({ finished: false, ended: 1, completed: 1 });
    expect(quick.stops).toEqual([]);
    expect(slow.stops).toEqual([
      { reason: 'taskgate is shutting down', code: ErrorCode.UpstreamUnavailable },
    ]);
  });

  it('drains at once when nothing runs, and as soon as the last call ends within the grace', async () => {
    vi.useFakeTimers();
    let idle: { finished: boolean; ended: number; completed: number } | undefined;
    void new TaskRunner().drain(60_000).then((result) => (idle = result));
    await vi.advanceTimersByTimeAsync(0);
    expect(idle).toEqual({ finished: true, ended: 0, completed: 0 });
    const runner = new TaskRunner();
    const { call, settled, settle } = callOf('w1');
    runner.forSession().run('t', call, settled);
    let drained: { finished: boolean; ended: number; completed: number } | undefined;
    void runner.drain(60_000).then((result) => (drained = result));
    await vi.advanceTimersByTimeAsync(10);
    expect(drained).toBeUndefined();
    settle();
    await vi.advanceTimersByTimeAsync(0);
    expect(drained).toEqual({ finished: true, ended: 0, completed: 1 });
  });
});

/**
 * Which sessions run tasks, for the HTTP front's judgement of sessions whose client left: taskgate's own
 * tasks (as the store creates and ends them) and the upstream servers' own (as the sessions see them).
 * A session is kept while one runs; its quiet time counts from when the last one ended.
 */
import { isTerminal, type TaskRecord, type TaskStatus } from '../tasks/state.js';
import type { TaskStore } from '../tasks/store.js';

export class RunningTasks {
  /** The sessions followed: those of this front (a shared store also reports other processes' tasks). */
  private readonly sessions = new Set<string>();
  /** sessionId → the keys of its tasks not yet terminal. */
  private readonly running = new Map<string, Set<string>>();
  private readonly lastEnded = new Map<string, number>();

  /** A task taskgate created, or one of its changes. */
  changed(record: TaskRecord): void {
    this.set(record.sessionId, `own ${record.taskId}`, record.status);
  }

  /** An upstream's own task as a session saw it pass (its CreateTaskResult's task, tasks/get, a notification). */
  seen(sessionId: string, task: unknown): void {
    const { taskId, status } = (task ?? {}) as { taskId?: unknown; status?: unknown };
    if (typeof taskId === 'string' && typeof status === 'string') {
      this.set(sessionId, `server ${taskId}`, status as TaskStatus);
    }
  }

  /** Infinity while one of the session's tasks runs; else when the last one ended (0: none ran). */
  endedAt(sessionId: string): number {
    return this.running.has(sessionId) ? Infinity : (this.lastEnded.get(sessionId) ?? 0);
  }

  follow(sessionId: string): void {
    this.sessions.add(sessionId);
  }

  forget(sessionId: string): void {
    this.sessions.delete(sessionId);
    this.running.delete(sessionId);
    this.lastEnded.delete(sessionId);
  }

  private set(sessionId: string, key: string, status: TaskStatus): void {
    if (!this.sessions.has(sessionId)) return;
    const tasks = this.running.get(sessionId);
    if (!isTerminal(status)) {
      if (tasks) tasks.add(key);
      else this.running.set(sessionId, new Set([key]));
      return;
    }
    if (!tasks?.delete(key)) return;
    if (tasks.size === 0) this.running.delete(sessionId);
    this.lastEnded.set(sessionId, Date.now());
  }
}

/**
 * The store as the sessions use it, telling `running` of each task created (its transitions are heard
 * with onTransition). Every other call is the inner store's own, its very promise: an extra step on the
 * way to a tasks/result answer could let a shutdown close the session first.
 */
export function noticingCreations(store: TaskStore, running: RunningTasks): TaskStore {
  return {
    create: async (task) => {
      const record = await store.create(task);
      running.changed(record);
      return record;
    },
    get: (taskId) => store.get(taskId),
    update: (taskId, change) => store.update(taskId, change),
    list: (owner, cursor, limit) => store.list(owner, cursor, limit),
    waitForTerminal: (taskId, signal) => store.waitForTerminal(taskId, signal),
    onTransition: (listener) => store.onTransition(listener),
    close: () => store.close(),
    inputs: store.inputs,
  };
}

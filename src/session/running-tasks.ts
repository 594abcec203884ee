/**
 * Which sessions run tasks, for the HTTP front's judgement of sessions whose client left: taskgate's own
 * tasks (as the store creates and ends them) and the upstream servers' own (as the sessions see them).
 * A session is kept while one runs; its quiet time counts from when the last one ended. An upstream's task
 * never seen to end counts as ended when its ttl does (its server forgets it then), or when the session
 * stops following it.
 */
import { isTerminal, type TaskRecord, type TaskStatus } from '../tasks/state.js';
import { withCreate, type TaskStore } from '../tasks/store.js';

export class RunningTasks {
  /** The sessions followed: those of this front (a shared store also reports other processes' tasks). */
  private readonly sessions = new Set<string>();
  /** sessionId → its tasks not yet terminal: key → epoch ms its ttl ends (Infinity: none known). */
  private readonly running = new Map<string, Map<string, number>>();
  private readonly lastEnded = new Map<string, number>();

  /** A task taskgate created, or one of its changes. */
  changed(record: TaskRecord): void {
    this.set(record.sessionId, `own ${record.taskId}`, record.status, Infinity);
  }

  /** An upstream's own task as a session saw it pass (its CreateTaskResult's task, tasks/get, a notification). */
  seen(sessionId: string, task: unknown): void {
    const { taskId, status, ttl, createdAt } = (task ?? {}) as Record<string, unknown>;
    if (typeof taskId === 'string' && typeof status === 'string') {
      const created = typeof createdAt === 'string' ? Date.parse(createdAt) : NaN;
      const expiresAt = typeof ttl === 'number' && Number.isFinite(created) ? created + ttl : Infinity;
      this.set(sessionId, `server ${taskId}`, status as TaskStatus, expiresAt);
    }
  }

  /** The session no longer follows an upstream's task, whose end it will not learn. */
  forgot(sessionId: string, taskId: string): void {
    this.set(sessionId, `server ${taskId}`, 'cancelled', Infinity);
  }

  /** Infinity while one of the session's tasks runs; else when the last one ended (0: none ran). */
  endedAt(sessionId: string, now = Date.now()): number {
    const tasks = this.running.get(sessionId);
    if (tasks === undefined) return this.lastEnded.get(sessionId) ?? 0;
    let ended = this.lastEnded.get(sessionId) ?? 0;
    for (const [key, expiresAt] of tasks) {
      if (expiresAt > now) continue;
      tasks.delete(key);
      ended = Math.max(ended, expiresAt);
    }
    this.lastEnded.set(sessionId, ended);
    if (tasks.size > 0) return Infinity;
    this.running.delete(sessionId);
    return ended;
  }

  follow(sessionId: string): void {
    this.sessions.add(sessionId);
  }

  forget(sessionId: string): void {
    this.sessions.delete(sessionId);
    this.running.delete(sessionId);
    this.lastEnded.delete(sessionId);
  }

  private set(sessionId: string, key: string, status: TaskStatus, expiresAt: number): void {
    if (!this.sessions.has(sessionId)) return;
    const tasks = this.running.get(sessionId);
    if (!isTerminal(status)) {
      if (tasks) tasks.set(key, expiresAt);
      else this.running.set(sessionId, new Map([[key, expiresAt]]));
      return;
    }
    if (!tasks?.delete(key)) return;
    if (tasks.size === 0) this.running.delete(sessionId);
    this.lastEnded.set(sessionId, Date.now());
  }
}

/**
 * The store as the sessions use it, telling `running` of each task created (its transitions are heard
 * with onTransition).
 */
export function noticingCreations(store: TaskStore, running: RunningTasks): TaskStore {
  return withCreate(store, async (task) => {
    const record = await store.create(task);
    running.changed(record);
    return record;
  });
}

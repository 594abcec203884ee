/**
 * The callers waiting for tasks to end, by task id: what every store's waitForTerminal hands out. Each
 * wait settles once, with the task, an error, or the reason of its signal when that aborts.
 */
import type { TaskRecord } from './state.js';

export interface Wait {
  readonly promise: Promise<TaskRecord>;
  resolve(record: TaskRecord): void;
  reject(error: unknown): void;
}

export class TaskWaiters {
  private readonly byTask = new Map<string, Set<Wait>>();

  /** `changed` is told whenever a wait starts or settles. */
  constructor(private readonly changed: () => void = () => undefined) {}

  /** How many tasks are waited for. */
  get size(): number {
    return this.byTask.size;
  }

  has(taskId: string): boolean {
    return this.byTask.has(taskId);
  }

  taskIds(): string[] {
    return [...this.byTask.keys()];
  }

  /**
   * A new wait for the task. A signal that aborts later rejects it with its reason; one that is already
   * aborted is the caller's to look at, since a task that has ended is still answered then.
   */
  add(taskId: string, signal?: AbortSignal): Wait {
    let waiting = this.byTask.get(taskId);
    if (!waiting) this.byTask.set(taskId, (waiting = new Set()));
    const waits = waiting;
    let settled = false;
    let settle: { resolve(record: TaskRecord): void; reject(error: unknown): void } | undefined;
    const promise = new Promise<TaskRecord>((resolve, reject) => (settle = { resolve, reject }));
    const end = (): boolean => {
      if (settled) return false;
      settled = true;
      signal?.removeEventListener('abort', onAbort);
      waits.delete(wait);
      if (waits.size === 0 && this.byTask.get(taskId) === waits) this.byTask.delete(taskId);
      this.changed();
      return true;
    };
    const wait: Wait = {
      promise,
      resolve: (record) => {
        if (end()) settle?.resolve(record);
      },
      reject: (error) => {
        if (end()) settle?.reject(error);
      },
    };
    const onAbort = (): void => wait.reject(signal?.reason);
    waits.add(wait);
    this.changed();
    if (signal && !signal.aborted) signal.addEventListener('abort', onAbort, { once: true });
    return wait;
  }

  resolve(taskId: string, record: TaskRecord): void {
    for (const wait of this.snapshot(taskId)) wait.resolve(record);
  }

  reject(taskId: string, error: unknown): void {
    for (const wait of this.snapshot(taskId)) wait.reject(error);
  }

  /**
   * The task's waits as they are now: settling one removes it from the set. The usual lone wait is not
   * copied out (deleting the entry a for…of is on is safe).
   */
  private snapshot(taskId: string): Iterable<Wait> {
    const waiting = this.byTask.get(taskId);
    if (waiting === undefined) return [];
    return waiting.size === 1 ? waiting : [...waiting];
  }

  rejectAll(error: unknown): void {
    for (const taskId of this.taskIds()) this.reject(taskId, error);
  }
}

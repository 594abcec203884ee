/**
 * How one Redis store object hears of tasks that end, wherever they end: the `<prefix>events` messages
 * published by the scripts, a re-read of every task that matters after Redis was away (a message may
 * have been lost meanwhile), and a slow poll of waited tasks while anyone waits (`fallbackPollMs`).
 *
 * - Waiters of a task wake once it is terminal, or reject with TaskNotFoundError once it is gone.
 * - The end of a task this store object runs (`executing`), made by another replica (a `tasks/cancel`
 *   served elsewhere, a lapsed lease), is reported once through `endedElsewhere`: the `<id> <status>
 *   <replica>` message from another replica makes it re-read the task.
 */
import { TaskNotFoundError } from './errors.js';
import { isTerminal, type TaskRecord } from './state.js';
import { TaskWaiters } from './waiters.js';

export interface TaskWatchOptions {
  executorId: string;
  fallbackPollMs: number;
  /** Reads a task without counting it as a use. */
  read(taskId: string): Promise<TaskRecord>;
  /** The end of a task run here, made elsewhere. */
  endedElsewhere(record: TaskRecord): void;
}

export class TaskWatch {
  readonly waiters = new TaskWaiters(() => this.schedulePoll());
  /** Live tasks created through this store object: their end, made elsewhere, is reported. */
  readonly executing = new Set<string>();
  /** Tasks being re-read → whether another read was asked for meanwhile. */
  private readonly checking = new Map<string, boolean>();
  /** Tasks being re-read whose end, if found, was made elsewhere (or may have been: after a reconnection). */
  private readonly endedElsewhere = new Set<string>();
  private poller: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(private readonly options: TaskWatchOptions) {}

  /** `<id> <status> <replica>` (a task ended) or `<id> gone`. */
  onEvent(message: string): void {
    const [taskId, status, by] = message.split(' ');
    if (taskId === undefined) return;
    if (status === 'gone') {
      this.executing.delete(taskId);
      this.waiters.reject(taskId, new TaskNotFoundError(taskId));
      return;
    }
    const elsewhere = by !== this.options.executorId && this.executing.has(taskId);
    if (elsewhere) this.endedElsewhere.add(taskId);
    if (elsewhere || this.waiters.has(taskId)) this.check(taskId);
  }

  /**
   * Whatever was published while a connection was away is lost: looks at every waited task now, and at
   * every task run here (another replica may have ended it meanwhile).
   */
  missedEvents(): void {
    for (const taskId of this.executing) {
      this.endedElsewhere.add(taskId);
      this.check(taskId);
    }
    for (const taskId of this.waiters.taskIds()) this.check(taskId);
  }

  /** Rejects every wait with `error`; nothing is re-read any more. */
  stop(error: unknown): void {
    this.stopped = true;
    this.waiters.rejectAll(error);
    clearInterval(this.poller);
    this.poller = undefined;
  }

  /**
   * Re-reads a task: wakes its waiters if it is terminal or gone, and reports its end when it was made
   * elsewhere; a failed read waits for the next reconnection or poll. A check asked for while one is in
   * flight runs again after it.
   */
  check(taskId: string): void {
    if (this.stopped) return;
    if (this.checking.has(taskId)) {
      this.checking.set(taskId, true);
      return;
    }
    this.checking.set(taskId, false);
    void this.options
      .read(taskId)
      .then(
        (record) => {
          if (!isTerminal(record.status)) return;
          if (this.endedElsewhere.delete(taskId) && this.executing.delete(taskId)) {
            this.options.endedElsewhere(record);
          }
          this.waiters.resolve(taskId, record);
        },
        (error: unknown) => {
          if (!(error instanceof TaskNotFoundError)) return;
          this.endedElsewhere.delete(taskId);
          this.executing.delete(taskId);
          this.waiters.reject(taskId, error);
        },
      )
      .finally(() => {
        const again = this.checking.get(taskId) === true;
        this.checking.delete(taskId);
        if (again && (this.waiters.has(taskId) || this.endedElsewhere.has(taskId))) this.check(taskId);
      });
  }

  /** The fallback poll runs only while someone waits. */
  private schedulePoll(): void {
    if (this.waiters.size > 0 && !this.poller && !this.stopped) {
      this.poller = setInterval(() => {
        for (const taskId of this.waiters.taskIds()) this.check(taskId);
      }, this.options.fallbackPollMs);
      this.poller.unref();
    } else if (this.waiters.size === 0 && this.poller) {
      clearInterval(this.poller);
      this.poller = undefined;
    }
  }
}

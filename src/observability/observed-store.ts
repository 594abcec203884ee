/**
 * A task store as the sessions use it, watched from outside: creations (which `onTransition` does not
 * report), refusals by a limit, and tasks/result requests waiting on a task. It changes nothing about
 * what the store does; every backend gets the same watch.
 */
import { TaskLimitError } from '../tasks/errors.js';
import type { TaskRecord, TransitionChange } from '../tasks/state.js';
import type { NewTask, TaskInputBoard, TaskPage, TaskStore, TransitionListener } from '../tasks/store.js';
import type { LimitName } from './metrics.js';

export interface StoreWatcher {
  /** Makes the creation itself, around the store's own (telemetry opens the task's span there). */
  creating?(task: NewTask, create: (task: NewTask) => Promise<TaskRecord>): Promise<TaskRecord>;
  created(record: TaskRecord): void;
  /** A task read or changed in answer to a request (telemetry links the request's span to the task's). */
  seen?(record: TaskRecord): void;
  refused(limit: LimitName): void;
  /** A waitForTerminal started (+1) or settled (-1). */
  waiting(delta: 1 | -1): void;
}

export class ObservedStore implements TaskStore {
  readonly inputs: TaskInputBoard | undefined;

  constructor(
    readonly inner: TaskStore,
    private readonly watcher: StoreWatcher,
  ) {
    this.inputs = inner.inputs;
  }

  async create(task: NewTask): Promise<TaskRecord> {
    let record: TaskRecord;
    try {
      record = await (this.watcher.creating === undefined
        ? this.inner.create(task)
        : this.watcher.creating(task, (traced) => this.inner.create(traced)));
    } catch (error) {
      if (error instanceof TaskLimitError) this.watcher.refused('max_tasks');
      throw error;
    }
    this.watcher.created(record);
    return record;
  }

  get(taskId: string): Promise<TaskRecord> {
    const got = this.inner.get(taskId);
    return this.watcher.seen === undefined ? got : got.then((record) => this.saw(record));
  }

  async update(taskId: string, change: TransitionChange): Promise<TaskRecord> {
    try {
      return this.saw(await this.inner.update(taskId, change));
    } catch (error) {
      if (error instanceof TaskLimitError) this.watcher.refused('max_result_bytes');
      throw error;
    }
  }

  list(owner: string, cursor: string | undefined, limit: number): Promise<TaskPage> {
    return this.inner.list(owner, cursor, limit);
  }

  waitForTerminal(taskId: string, signal?: AbortSignal): Promise<TaskRecord> {
    this.watcher.waiting(1);
    let waiting: Promise<TaskRecord>;
    try {
      waiting = this.inner.waitForTerminal(taskId, signal);
    } catch (error) {
      this.watcher.waiting(-1);
      throw error;
    }
    // then(), not finally(): finally() takes two more turns of the microtask queue before the waiter
    // hears, for each of 10 000 tasks/result released at once.
    return waiting.then(
      (record) => {
        this.watcher.waiting(-1);
        return this.saw(record);
      },
      (error: unknown) => {
        this.watcher.waiting(-1);
        throw error;
      },
    );
  }

  onTransition(listener: TransitionListener): () => void {
    return this.inner.onTransition(listener);
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  private saw(record: TaskRecord): TaskRecord {
    this.watcher.seen?.(record);
    return record;
  }
}

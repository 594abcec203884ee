/**
 * The default store: one process, bounded. Live tasks sit in a plain map and are never evicted; terminal
 * tasks sit in an LRU bounded by count and by the bytes of their outcomes. Once closed, it rejects every
 * pending wait and every call with TaskStoreUnavailableError, as the Redis store does.
 */
import { LRUCache } from 'lru-cache';
import { CursorCodec } from './cursor.js';
import { CallerLimitError, TaskLimitError, TaskNotFoundError, TaskStoreUnavailableError } from './errors.js';
import { expiresAt } from './expiry.js';
import { isTerminal, transition, type TaskRecord, type TransitionChange } from './state.js';
import type { NewTask, TaskPage, TaskStore, TransitionListener } from './store.js';
import { newTaskId } from './task-id.js';
import { TaskWaiters } from './waiters.js';

export interface MemoryStoreOptions {
  maxTasks: number;
  maxResultBytes: number;
  /** How often expired terminal tasks are swept out (they are also dropped lazily when read). */
  sweepIntervalMs?: number;
  now?: () => number;
  /** Told of each finished task dropped because its ttl ran out (for metrics). */
  onExpired?: (record: TaskRecord) => void;
}

export class MemoryTaskStore implements TaskStore {
  /** One process: the bridge holding a task is the only one that can be asked about its input. */
  readonly inputs = undefined;
  private readonly live = new Map<string, TaskRecord>();
  private readonly terminal: LRUCache<string, TaskRecord>;
  /** owner → (taskId → position), in creation order, for tasks/list. */
  private readonly byOwner = new Map<string, Map<string, number>>();
  /** Live tasks created with a liveLimit, by caller, and the caller of each. */
  private readonly liveByCaller = new Map<string, Set<string>>();
  private readonly callerOf = new Map<string, string>();
  private readonly waiters = new TaskWaiters();
  private readonly listeners = new Set<TransitionListener>();
  private readonly cursors = new CursorCodec();
  private readonly now: () => number;
  private readonly sweeper: NodeJS.Timeout;
  private nextPosition = 1;
  private closing: Promise<void> | undefined;
  evictions = 0;

  constructor(private readonly options: MemoryStoreOptions) {
    this.now = options.now ?? Date.now;
    this.terminal = new LRUCache<string, TaskRecord>({
      max: options.maxTasks,
      maxSize: options.maxResultBytes,
      sizeCalculation: (record) => Math.max(1, record.outcomeBytes),
      dispose: (record, taskId, reason) => {
        if (reason === 'evict') {
          this.evictions++;
          this.forget(record.owner, taskId);
        }
      },
    });
    this.sweeper = setInterval(() => this.sweep(), options.sweepIntervalMs ?? 5_000);
    this.sweeper.unref();
  }

  get size(): { live: number; terminal: number; bytes: number } {
    return { live: this.live.size, terminal: this.terminal.size, bytes: this.terminal.calculatedSize };
  }

  async create(task: NewTask): Promise<TaskRecord> {
    this.refuseIfClosed();
    const limit = task.liveLimit;
    const callerLive = limit && this.liveByCaller.get(limit.caller);
    if (limit && (callerLive?.size ?? 0) >= limit.max) {
      throw new CallerLimitError(callerLive?.size ?? 0, limit.max);
    }
    if (this.live.size + this.terminal.size >= this.options.maxTasks) {
      if (this.terminal.size === 0) {
        throw TaskLimitError.liveTasks(this.options.maxTasks);
      }
      this.terminal.pop();
    }
    const now = this.now();
    const record: TaskRecord = {
      taskId: newTaskId(),
      status: 'working',
      createdAt: now,
      lastUpdatedAt: now,
      ttl: task.ttl,
      pollInterval: task.pollInterval,
      owner: task.owner,
      sessionId: task.sessionId,
      toolName: task.toolName,
      outcomeBytes: 0,
      ...(task.identity === undefined ? {} : { identity: task.identity }),
      ...(task.traceparent === undefined ? {} : { traceparent: task.traceparent }),
      ...(task.server === undefined ? {} : { server: task.server }),
    };
    this.live.set(record.taskId, record);
    let owned = this.byOwner.get(task.owner);
    if (!owned) this.byOwner.set(task.owner, (owned = new Map()));
    owned.set(record.taskId, this.nextPosition++);
    if (limit) {
      if (callerLive) callerLive.add(record.taskId);
      else this.liveByCaller.set(limit.caller, new Set([record.taskId]));
      this.callerOf.set(record.taskId, limit.caller);
    }
    return record;
  }

  async get(taskId: string): Promise<TaskRecord> {
    this.refuseIfClosed();
    return this.read(taskId);
  }

  async update(taskId: string, change: TransitionChange): Promise<TaskRecord> {
    this.refuseIfClosed();
    const next = transition(this.read(taskId), change, this.now());
    if (next.outcomeBytes > this.options.maxResultBytes) {
      throw TaskLimitError.resultBytes(next.outcomeBytes, this.options.maxResultBytes);
    }
    if (isTerminal(next.status)) {
      this.live.delete(taskId);
      this.uncount(taskId);
      this.terminal.set(taskId, next);
    } else {
      this.live.set(taskId, next);
    }
    for (const listener of this.listeners) {
      try {
        listener(next);
      } catch (error) {
        // The change is made: a failing listener must not keep it from the waiters.
        process.emitWarning(error as Error);
      }
    }
    if (isTerminal(next.status)) this.waiters.resolve(taskId, next);
    return next;
  }

  async list(owner: string, cursor: string | undefined, limit: number): Promise<TaskPage> {
    this.refuseIfClosed();
    const after = cursor === undefined ? 0 : this.cursors.decode(owner, cursor);
    const tasks: TaskRecord[] = [];
    let lastPosition = 0;
    let more = false;
    for (const [taskId, position] of this.byOwner.get(owner) ?? []) {
      if (position <= after) continue;
      const record = this.peek(taskId);
      if (!record) continue;
      if (tasks.length === limit) {
        more = true;
        break;
      }
      tasks.push(record);
      lastPosition = position;
    }
    return more ? { tasks, nextCursor: this.cursors.encode(owner, lastPosition) } : { tasks };
  }

  /**
   * Not async: the wait's own promise is returned, so that a tasks/result answer takes no extra turn
   * after the update that ends the task (a shutdown closes sessions right after failing their tasks).
   */
  waitForTerminal(taskId: string, signal?: AbortSignal): Promise<TaskRecord> {
    try {
      this.refuseIfClosed();
      const record = this.read(taskId);
      if (isTerminal(record.status)) return Promise.resolve(record);
      signal?.throwIfAborted();
    } catch (error) {
      return Promise.reject(error as Error);
    }
    return this.waiters.add(taskId, signal).promise;
  }

  onTransition(listener: TransitionListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Safe to call twice. */
  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    clearInterval(this.sweeper);
    this.waiters.rejectAll(closedError());
  }

  private refuseIfClosed(): void {
    if (this.closing) throw closedError();
  }

  /** The task if it exists and has not expired; expired tasks are deleted on the way. */
  private peek(taskId: string): TaskRecord | undefined {
    const live = this.live.get(taskId);
    if (live) return live;
    const done = this.terminal.get(taskId);
    if (done && this.expired(done)) {
      this.terminal.delete(taskId);
      this.forget(done.owner, taskId);
      this.options.onExpired?.(done);
      return undefined;
    }
    return done;
  }

  private read(taskId: string): TaskRecord {
    const record = this.peek(taskId);
    if (!record) throw new TaskNotFoundError(taskId);
    return record;
  }

  private expired(record: TaskRecord): boolean {
    return this.now() >= expiresAt(record);
  }

  private sweep(): void {
    const expired = [...this.terminal.entries()].filter(([, record]) => this.expired(record));
    for (const [taskId, record] of expired) {
      this.terminal.delete(taskId);
      this.forget(record.owner, taskId);
      this.options.onExpired?.(record);
    }
  }

  /** A task that ends leaves its caller's live count. */
  private uncount(taskId: string): void {
    const caller = this.callerOf.get(taskId);
    if (caller === undefined) return;
    this.callerOf.delete(taskId);
    const live = this.liveByCaller.get(caller);
    live?.delete(taskId);
    if (live?.size === 0) this.liveByCaller.delete(caller);
  }

  private forget(owner: string, taskId: string): void {
    const owned = this.byOwner.get(owner);
    owned?.delete(taskId);
    if (owned?.size === 0) this.byOwner.delete(owner);
    if (this.waiters.has(taskId)) this.waiters.reject(taskId, new TaskNotFoundError(taskId));
  }
}

const closedError = (): TaskStoreUnavailableError =>
  new TaskStoreUnavailableError('Task store closed (in this process)');

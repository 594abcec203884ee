/**
 * Per-caller limits: live tasks and token-bucket rates, keyed by identity (or by session where there is
 * none). Each refusal names the limit, and touches no other caller.
 */
import { LRUCache } from 'lru-cache';
import type { Config } from '../config/schema.js';
import { ErrorCode, ProtocolError } from '../protocol/errors.js';
import { isTerminal, type TaskRecord } from '../tasks/state.js';
import type { TaskStore } from '../tasks/store.js';

class TokenBucket {
  private tokens: number;
  private updatedAt: number;

  constructor(
    private readonly rate: number,
    private readonly burst: number,
    now: number,
  ) {
    this.tokens = burst;
    this.updatedAt = now;
  }

  /** Takes one token; the milliseconds until one is available when there is none. */
  take(now: number): number {
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.updatedAt) / 1000) * this.rate);
    this.updatedAt = now;
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return 0;
    }
    return Math.ceil(((1 - this.tokens) / this.rate) * 1000);
  }
}

export type LimitKind = 'live tasks' | 'task creation rate' | 'task request rate';

export class Limits {
  private readonly creation = new LRUCache<string, TokenBucket>({ max: 10_000 });
  private readonly requests = new LRUCache<string, TokenBucket>({ max: 10_000 });
  /** Live tasks by caller, and the caller of each, as this process created them. */
  private readonly live = new Map<string, number>();
  private readonly callerOf = new Map<string, string>();
  private readonly unsubscribe: () => void;

  constructor(
    private readonly config: Config['limits'],
    store: TaskStore,
    private readonly onRefused: (kind: LimitKind, caller: string) => void = () => undefined,
    private readonly now: () => number = Date.now,
  ) {
    this.unsubscribe = store.onTransition((record) => {
      if (isTerminal(record.status)) this.ended(record);
    });
  }

  /** Before a task-augmented call: the caller's creation rate and live tasks. */
  admitTask(caller: string): void {
    const live = this.live.get(caller) ?? 0;
    if (live >= this.config.maxLiveTasks) {
      this.refuse(
        'live tasks',
        caller,
        `Limit reached: ${live} live tasks for this caller (limits.maxLiveTasks); wait for one to end`,
      );
    }
    this.throttle(
      this.creation,
      caller,
      this.config.taskCreationRate,
      this.config.taskCreationBurst,
      'task creation rate',
    );
  }

  /** Before tasks/get, tasks/result, tasks/list, tasks/cancel. */
  admitTaskRequest(caller: string): void {
    this.throttle(
      this.requests,
      caller,
      this.config.taskRequestRate,
      this.config.taskRequestBurst,
      'task request rate',
    );
  }

  /** A task was created for the caller. */
  started(caller: string, taskId: string): void {
    this.callerOf.set(taskId, caller);
    this.live.set(caller, (this.live.get(caller) ?? 0) + 1);
  }

  close(): void {
    this.unsubscribe();
  }

  private ended(record: TaskRecord): void {
    const caller = this.callerOf.get(record.taskId);
    if (caller === undefined) return;
    this.callerOf.delete(record.taskId);
    const left = (this.live.get(caller) ?? 1) - 1;
    if (left > 0) this.live.set(caller, left);
    else this.live.delete(caller);
  }

  private throttle(
    buckets: LRUCache<string, TokenBucket>,
    caller: string,
    rate: number,
    burst: number,
    kind: LimitKind,
  ): void {
    let bucket = buckets.get(caller);
    if (!bucket) buckets.set(caller, (bucket = new TokenBucket(rate, burst, this.now())));
    const wait = bucket.take(this.now());
    if (wait > 0) {
      const setting = kind === 'task creation rate' ? 'limits.taskCreationRate' : 'limits.taskRequestRate';
      this.refuse(
        kind,
        caller,
        `Rate limit: too many requests for this caller (${setting}: ${rate}/s); retry in ${wait} ms`,
      );
    }
  }

  private refuse(kind: LimitKind, caller: string, message: string): never {
    this.onRefused(kind, caller);
    throw new ProtocolError(ErrorCode.LimitExceeded, message);
  }
}

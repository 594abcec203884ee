/**
 * Per-caller limits: live tasks and token-bucket rates, keyed by identity (or by session where there is
 * none). Each refusal names the limit, and touches no other caller. Live tasks are counted by the task
 * store, in the step that creates a task (so creations in flight cannot all pass, and a store that lost
 * its tasks no longer counts them); the rates are counted here.
 */
import { LRUCache } from 'lru-cache';
import type { Config } from '../config/schema.js';
import { ErrorCode, ProtocolError } from '../protocol/errors.js';
import { CallerLimitError } from '../tasks/errors.js';
import type { LiveLimit } from '../tasks/store.js';

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

  constructor(
    private readonly config: Config['limits'],
    private readonly onRefused: (kind: LimitKind, caller: string) => void = () => undefined,
    private readonly now: () => number = Date.now,
  ) {}

  /** Before a task-augmented call: the caller's creation rate. */
  admitTask(caller: string): void {
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

  /**
   * Creates a task for the caller within limits.maxLiveTasks: `create` hands the bound to the store, which
   * checks and counts it atomically; its refusal becomes the one that names the setting.
   */
  async withinLiveTasks<T>(caller: string, create: (limit: LiveLimit) => Promise<T>): Promise<T> {
    try {
      return await create({ caller, max: this.config.maxLiveTasks });
    } catch (error) {
      if (!(error instanceof CallerLimitError)) throw error;
      this.refuse(
        'live tasks',
        caller,
        `Limit reached: ${error.live} live tasks for this caller (limits.maxLiveTasks); wait for one to end`,
      );
    }
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

/**
 * Per-caller limits: live tasks and token-bucket rates, keyed by identity (or by session where there is
 * none). Each refusal names the limit, and touches no other caller. Live tasks are counted by the task
 * store, in the step that creates a task (so creations in flight cannot all pass, and a store that lost
 * its tasks no longer counts them); the rates are counted here. A limit that is not set (over stdio,
 * unless the operator sets it) refuses nothing.
 */
import { LRUCache } from 'lru-cache';
import type { Config } from '../config/schema.js';
import type { LimitName } from '../observability/metrics.js';
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

/** The per-caller limits, by the names metrics and the audit log give them. */
export type LimitKind = Extract<LimitName, 'max_live_tasks' | 'task_creation_rate' | 'task_request_rate'>;

const SETTING: Record<Exclude<LimitKind, 'max_live_tasks'>, string> = {
  task_creation_rate: 'taskCreationRate',
  task_request_rate: 'taskRequestRate',
};

export class Limits {
  private readonly creation = new LRUCache<string, TokenBucket>({ max: 10_000 });
  private readonly requests = new LRUCache<string, TokenBucket>({ max: 10_000 });
  private readonly parts = new Map<string, Limits>();

  constructor(
    private readonly config: Config['limits'],
    private readonly onRefused: (kind: LimitKind, caller: string) => void = () => undefined,
    private readonly now: () => number = Date.now,
    /** Where the settings are, for the refusals to name them. */
    private readonly settings = 'limits',
    /** Appended to each caller: what these limits count, they count apart from any other Limits. */
    private readonly scope = '',
  ) {}

  /**
   * Other settings with the same hooks, counting every caller apart from what this one counts (a server of
   * `upstreams` with limits of its own): `settings` names them in refusals, `scope` keeps the counts apart.
   * One scope is one object, so that the calls of all a caller's sessions count together.
   */
  apart(config: Config['limits'], settings: string, scope: string): Limits {
    let limits = this.parts.get(scope);
    if (limits === undefined) {
      limits = new Limits(config, this.onRefused, this.now, settings, `${this.scope}\u001f${scope}`);
      this.parts.set(scope, limits);
    }
    return limits;
  }

  /** Before a task-augmented call: the caller's creation rate. */
  admitTask(caller: string): void {
    this.throttle(
      this.creation,
      caller,
      this.config.taskCreationRate,
      this.config.taskCreationBurst,
      'task_creation_rate',
    );
  }

  /** Before tasks/get, tasks/result, tasks/list, tasks/cancel. */
  admitTaskRequest(caller: string): void {
    this.throttle(
      this.requests,
      caller,
      this.config.taskRequestRate,
      this.config.taskRequestBurst,
      'task_request_rate',
    );
  }

  /**
   * Creates a task for the caller within limits.maxLiveTasks: `create` hands the bound to the store, which
   * checks and counts it atomically; its refusal becomes the one that names the setting.
   */
  async withinLiveTasks<T>(caller: string, create: (limit?: LiveLimit) => Promise<T>): Promise<T> {
    const max = this.config.maxLiveTasks;
    if (max === undefined) return create();
    try {
      return await create({ caller: caller + this.scope, max });
    } catch (error) {
      if (!(error instanceof CallerLimitError)) throw error;
      this.refuse(
        'max_live_tasks',
        caller,
        `Limit reached: ${error.live} live tasks for this caller (${this.settings}.maxLiveTasks); wait for one to end`,
      );
    }
  }

  private throttle(
    buckets: LRUCache<string, TokenBucket>,
    caller: string,
    rate: number | undefined,
    burst: number | undefined,
    kind: Exclude<LimitKind, 'max_live_tasks'>,
  ): void {
    // The effective config sets both of a bucket or neither.
    if (rate === undefined || burst === undefined) return;
    const key = caller + this.scope;
    let bucket = buckets.get(key);
    if (!bucket) buckets.set(key, (bucket = new TokenBucket(rate, burst, this.now())));
    const wait = bucket.take(this.now());
    if (wait > 0) {
      this.refuse(
        kind,
        caller,
        `Rate limit: too many requests for this caller (${this.settings}.${SETTING[kind]}: ${rate}/s); retry in ${wait} ms`,
      );
    }
  }

  private refuse(kind: LimitKind, caller: string, message: string): never {
    this.onRefused(kind, caller);
    throw new ProtocolError(ErrorCode.LimitExceeded, message);
  }
}

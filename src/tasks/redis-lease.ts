/**
 * The executor lease of one Redis store object (see redis-store.ts): renewed every third of it while the
 * store runs tasks, and a sweep every `min(1 s, lease / 4)` that fails the live tasks of executors whose
 * lease lapsed (the `lapse` script, which judges leases only once Redis has served a whole lease without
 * a gap). `release` gives this executor's own tasks up at once, as a store does when it closes.
 */
import type { Logger } from 'pino';
import { ErrorCode } from '../protocol/errors.js';
import { TaskStoreUnavailableError } from './errors.js';
import { accepted } from './redis-codec.js';
import type { RedisLink } from './redis-link.js';
import { TRANSITIONS_JSON } from './redis-scripts.js';
import { EXECUTOR_LOST } from './store.js';

/** Lease sweeps are this often at most, and at least four times per lease. */
const MAX_LAPSE_SWEEP_MS = 1_000;
/** What a task whose executor was lost fails with, as the outcome its tasks/result answers. */
const LOST_OUTCOME = JSON.stringify({ error: { code: ErrorCode.InternalError, message: EXECUTOR_LOST } });

export interface LeaseOptions {
  executorId: string;
  /** > 0: a store without a lease makes no ExecutorLease. */
  leaseTtlMs: number;
  maxTasks: number;
  maxResultBytes: number;
  /** Whether the store runs live tasks: only then is the lease renewed. */
  runsTasks: () => boolean;
  logger?: Pick<Logger, 'warn' | 'info'> | undefined;
}

export class ExecutorLease {
  private readonly timers: NodeJS.Timeout[];
  private stopped = false;

  constructor(
    private readonly link: RedisLink,
    private readonly options: LeaseOptions,
  ) {
    const { leaseTtlMs } = options;
    const sweepEvery = Math.min(MAX_LAPSE_SWEEP_MS, Math.max(1, Math.floor(leaseTtlMs / 4)));
    this.timers = [
      setInterval(() => this.renew(), Math.max(1, Math.floor(leaseTtlMs / 3))),
      setInterval(() => this.sweepLapsed(), sweepEvery),
    ];
    for (const timer of this.timers) timer.unref();
  }

  /** Renews this executor's lease, while it runs tasks; a failure waits for the next turn. */
  renew(): void {
    if (this.stopped || !this.options.runsTasks() || !this.link.connected) return;
    const { executorId, leaseTtlMs } = this.options;
    this.link
      .run('renew', [], [executorId, String(leaseTtlMs), String(this.gapMs)])
      .catch((error: unknown) => this.backgroundFailed('renewing the executor lease', error));
  }

  /**
   * Stops the timers and fails this executor's live tasks at once rather than a lease later; if Redis
   * cannot be told, the lease lapses and another replica does it.
   */
  async release(): Promise<void> {
    this.stopped = true;
    for (const timer of this.timers) clearInterval(timer);
    if (!this.options.runsTasks() || !this.link.connected) return;
    await this.link.script('lapse', [], this.lapseArgs(this.options.executorId)).catch(() => undefined);
  }

  /**
   * Fails the live tasks of replicas whose lease lapsed; the script itself waits until Redis has served a
   * whole lease without a gap. While Redis is stalled it is only asked whether it answers again.
   */
  private sweepLapsed(): void {
    if (this.stopped || !this.link.listening) return;
    if (this.link.isStalled) {
      this.link.redis(() => this.link.cmd.ping()).catch(() => undefined);
      return;
    }
    this.link.run('lapse', [], this.lapseArgs('')).then(
      (reply) => {
        const failed = Number(accepted(reply, { ...this.options, taskId: '' })[0]);
        if (failed > 0) {
          this.options.logger?.warn(
            { tasks: failed },
            'task store: failed the live tasks of a replica whose executor lease lapsed',
          );
        }
      },
      (error: unknown) => this.backgroundFailed('sweeping lapsed executor leases', error),
    );
  }

  private lapseArgs(executor: string): string[] {
    const lost = {
      message: EXECUTOR_LOST,
      outcome: LOST_OUTCOME,
      outcomeBytes: Buffer.byteLength(LOST_OUTCOME),
      by: this.options.executorId,
    };
    return [
      TRANSITIONS_JSON,
      String(this.options.maxResultBytes),
      JSON.stringify(lost),
      executor,
      String(this.options.leaseTtlMs),
      String(this.gapMs),
    ];
  }

  /**
   * A gap this long in renewals and sweeps means Redis (or every replica) was away: well above the sweep
   * period, and short enough that no lease renewed before the gap has lapsed when it is noticed.
   */
  private get gapMs(): number {
    return Math.floor(this.options.leaseTtlMs / 2);
  }

  /** An unreachable Redis is logged where the connection is watched; anything else is worth a warning. */
  private backgroundFailed(what: string, error: unknown): void {
    if (error instanceof TaskStoreUnavailableError) return;
    this.options.logger?.warn({ err: (error as Error).message }, `task store: ${what} failed`);
  }
}

/**
 * The ends of tasks run by one Redis store object that Redis was not there to take (an outage, a
 * stall): the update is still refused, but the end is kept here and sent again once Redis is back, so
 * that a result arriving during an outage is not lost and the task does not stay live forever. A
 * create that was sent but not confirmed may still be made by Redis: its end (failed, UNCONFIRMED) is
 * kept the same way, so that such a task never stays live with no call behind it.
 */
import { ErrorCode } from '../protocol/errors.js';
import type { TransitionChange } from './state.js';

/**
 * What a task fails with whose creation Redis did not confirm in time although it may have made it (a
 * stalled Redis runs what it was sent once it wakes): its call never started, so it must not stay live.
 */
const UNCONFIRMED = "The task store did not confirm this task's creation in time, so its call never started";
const UNCONFIRMED_OUTCOME = { error: { code: ErrorCode.StoreUnavailable, message: UNCONFIRMED } };
export const UNCONFIRMED_END: TransitionChange = {
  status: 'failed',
  statusMessage: UNCONFIRMED,
  outcome: UNCONFIRMED_OUTCOME,
  outcomeBytes: Buffer.byteLength(JSON.stringify(UNCONFIRMED_OUTCOME)),
};

export class DeferredEnds {
  private readonly ends = new Map<string, TransitionChange>();

  keep(taskId: string, change: TransitionChange): void {
    this.ends.set(taskId, change);
  }

  /** Redis took a change of the task: nothing is kept for it any more. */
  sent(taskId: string): void {
    this.ends.delete(taskId);
  }

  /**
   * Sends every kept end again through `update`. One refused again while Redis is still away is kept
   * again by `update` itself; any other refusal means the task ended otherwise meanwhile.
   */
  flush(update: (taskId: string, change: TransitionChange) => Promise<unknown>): void {
    for (const [taskId, change] of [...this.ends]) {
      this.ends.delete(taskId);
      update(taskId, change).catch(() => undefined);
    }
  }
}

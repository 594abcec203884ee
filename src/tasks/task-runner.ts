/**
 * The calls of taskgate's own tasks running in this process, every session's, each with what can end it
 * before its answer: its tool's timeout, a cancel, shutdown. Indexed per session (SessionCalls), since a
 * session's questions — which task an upstream request or a progress token is for, whether its tasks
 * have ended — are about its own calls only.
 *
 * Graceful shutdown: once asked to stop, taskgate accepts no new session and no new task, lets running
 * tasks finish within a grace period, then fails the rest ("taskgate is shutting down") so that every
 * waiter is released, and only then closes.
 */
import { ErrorCode } from '../protocol/errors.js';
import { idKey, type RequestId } from '../protocol/messages.js';

export interface TaskCall {
  /** The id the task's tools/call went upstream with. */
  wireId: RequestId;
  /** The progress token the call carries, when it has one. */
  progressToken?: string | number;
  /** The tool's own timeout (policy), when it has one. */
  timeoutMs?: number;
  /**
   * Ends the task now, failed with `reason` (and `code`), and cancels the call upstream if that ended it.
   * Settles once done.
   */
  stop(reason: string, code?: number): Promise<void>;
}

interface Running extends TaskCall {
  /** Side-channel requests (elicitation, sampling) sent to the client and not yet answered. */
  openInputRequests: number;
}

export class TaskRunner {
  private accepting = true;
  /** Every running call, by task id. */
  private readonly calls = new Map<string, Running>();
  private whenIdle: (() => void) | undefined;

  get isAccepting(): boolean {
    return this.accepting;
  }

  /** How many task calls run, every session's. */
  get size(): number {
    return this.calls.size;
  }

  /** A new session's index of its running calls. */
  forSession(): SessionCalls {
    return new SessionCalls(this);
  }

  /**
   * Stops accepting, waits up to `graceMs` for running tasks, then ends those still running: `completed`
   * is how many finished meanwhile, `ended` how many it ended.
   */
  async drain(graceMs: number): Promise<{ finished: boolean; ended: number; completed: number }> {
    this.accepting = false;
    const running = this.calls.size;
    if (running > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, graceMs);
        this.whenIdle = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    const left = [...this.calls.values()];
    await Promise.all(
      left.map((call) => call.stop('taskgate is shutting down', ErrorCode.UpstreamUnavailable)),
    );
    return { finished: left.length === 0, ended: left.length, completed: running - left.length };
  }

  /** @internal for SessionCalls */
  added(taskId: string, call: Running): void {
    this.calls.set(taskId, call);
  }

  /** @internal for SessionCalls */
  removed(taskId: string): void {
    this.calls.delete(taskId);
    if (this.calls.size === 0) this.whenIdle?.();
  }
}

/** One session's running task calls. */
export class SessionCalls {
  private readonly running = new Map<string, Running>();
  private readonly byProgressToken = new Map<string | number, string>();
  private whenIdle: (() => void) | undefined;

  constructor(private readonly runner: TaskRunner) {}

  get isAccepting(): boolean {
    return this.runner.isAccepting;
  }

  get size(): number {
    return this.running.size;
  }

  /** The task's call runs until `settled` (its answer handled); its timeout, if it has one, starts now. */
  run(taskId: string, call: TaskCall, settled: Promise<unknown>): void {
    const running: Running = { ...call, openInputRequests: 0 };
    const tokenKey = call.progressToken === undefined ? undefined : idKey(call.progressToken);
    this.running.set(taskId, running);
    if (tokenKey !== undefined) this.byProgressToken.set(tokenKey, taskId);
    this.runner.added(taskId, running);
    const { timeoutMs } = call;
    const timer =
      timeoutMs === undefined
        ? undefined
        : setTimeout(
            () => void call.stop(`Task exceeded its timeout of ${timeoutMs} ms; the tool call was cancelled`),
            timeoutMs,
          ).unref();
    void settled.then(() => {
      clearTimeout(timer);
      this.runner.removed(taskId);
      this.running.delete(taskId);
      if (tokenKey !== undefined && this.byProgressToken.get(tokenKey) === taskId) {
        this.byProgressToken.delete(tokenKey);
      }
      if (this.running.size === 0) this.whenIdle?.();
    });
  }

  /** The task ended: its call's progress is no longer its (the call itself runs until it is settled). */
  ended(taskId: string): void {
    const token = this.running.get(taskId)?.progressToken;
    if (token !== undefined && this.byProgressToken.get(idKey(token)) === taskId) {
      this.byProgressToken.delete(idKey(token));
    }
  }

  /** The id the task's call went upstream with, while it runs. */
  callOf(taskId: string): RequestId | undefined {
    return this.running.get(taskId)?.wireId;
  }

  /** The task whose progress notifications carry this token, if one is running. */
  taskForProgressToken(token: string | number): string | undefined {
    return this.byProgressToken.get(idKey(token));
  }

  /** The running task whose upstream call went with this id. */
  taskOfCall(wireId: RequestId): string | undefined {
    for (const [taskId, call] of this.running) if (call.wireId === wireId) return taskId;
    return undefined;
  }

  /** The one running task, when exactly one runs: the only safe owner of an unlabelled upstream request. */
  soleRunningTask(): string | undefined {
    if (this.running.size !== 1) return undefined;
    return this.running.keys().next().value;
  }

  /** One more input request open for the task; false when it does not run (any more). */
  inputOpened(taskId: string): boolean {
    const call = this.running.get(taskId);
    if (!call) return false;
    call.openInputRequests++;
    return true;
  }

  /** One input request answered: true when the task's call runs and none is left open. */
  inputClosed(taskId: string): boolean {
    const call = this.running.get(taskId);
    if (!call) return false;
    call.openInputRequests = Math.max(0, call.openInputRequests - 1);
    return call.openInputRequests === 0;
  }

  /** Ends every call of the session still running, each task failed with `reason` (and `code`). */
  async stopAll(reason: string, code?: number): Promise<void> {
    await Promise.all([...this.running.values()].map((call) => call.stop(reason, code)));
  }

  /** Resolves once none of the session's calls runs any more, or after `boundMs` at the latest. */
  idle(boundMs: number): Promise<void> {
    if (this.running.size === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, Math.min(boundMs, 2 ** 31 - 1)).unref();
      this.whenIdle = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}

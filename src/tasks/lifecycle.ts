/**
 * Graceful shutdown: once asked to stop, taskgate accepts no new session and no new task, lets running
 * tasks finish within a grace period, then fails the rest ("taskgate is shutting down") so that every
 * waiter is released, and only then closes.
 */
export class Lifecycle {
  private accepting = true;
  /** Running task calls, each with the way to end it now. */
  private readonly running = new Map<string, (reason: string) => Promise<void>>();
  private idle: (() => void) | undefined;

  get isAccepting(): boolean {
    return this.accepting;
  }

  track(taskId: string, end: (reason: string) => Promise<void>): void {
    this.running.set(taskId, end);
  }

  untrack(taskId: string): void {
    this.running.delete(taskId);
    if (this.running.size === 0) this.idle?.();
  }

  /** Stops accepting, waits up to `graceMs` for running tasks, then ends those still running. */
  async drain(graceMs: number): Promise<{ finished: boolean; ended: number }> {
    this.accepting = false;
    if (this.running.size > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, graceMs);
        this.idle = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    const left = [...this.running.values()];
    await Promise.all(left.map((end) => end('taskgate is shutting down')));
    return { finished: left.length === 0, ended: left.length };
  }
}

/**
 * The client's requests not answered yet, and when the session may close for them: once the client's
 * input has ended (or the session was asked to close once answered), as soon as none is left but
 * tasks/result waiting on tasks, which may wait as long as a task runs.
 */
import { idKey, type RequestId } from '../protocol/messages.js';
import type { ServedRequests } from './served-requests.js';

export class OpenRequests {
  private readonly open = new Set<string | number>();
  /** Why the client's input ended, once it has. */
  private ended: string | undefined;
  /** The client has sent a request (it knows the session is there). */
  private asked = false;
  private closeWhenAnswered = false;

  constructor(
    /** The client's requests answered here: the tasks/result among them are the ones not waited for. */
    private readonly served: ServedRequests,
    private readonly close: () => void,
  ) {}

  get size(): number {
    return this.open.size;
  }

  /** Why the client's input ended, once it has. */
  get inputEnded(): string | undefined {
    return this.ended;
  }

  /** A request of the client's arrived; `held`: kept until initialize is answered, not yet taken. */
  opened(id: RequestId, held = false): void {
    this.open.add(idKey(id));
    if (!held) this.asked = true;
  }

  isOpen(id: RequestId): boolean {
    return this.open.has(idKey(id));
  }

  /** The request is answered (or cancelled); the session closes if it was the last one it waited for. */
  answered(id: RequestId): void {
    const wasOpen = this.open.delete(idKey(id));
    // onlyTasksAwaited walks every open request: asked only when the answer could close the session, or
    // 10 000 waiting tasks/result would each walk the others as they are answered.
    if (wasOpen && (this.ended !== undefined || this.closeWhenAnswered) && this.onlyTasksAwaited) {
      this.close();
    }
  }

  /**
   * Closes the session once the client has had an answer (an upstream that never started: the client's
   * initialize gets the reason, whenever it comes), or after `graceMs` if it asks nothing.
   */
  closeOnceAnswered(graceMs: number): void {
    if (this.asked && this.onlyTasksAwaited) return this.close();
    this.closeWhenAnswered = true;
    setTimeout(this.close, graceMs).unref();
  }

  /** The client's input ended: true when nothing it asked is left to answer. */
  endInput(reason: string): boolean {
    this.ended = reason;
    return this.onlyTasksAwaited;
  }

  /**
   * Nothing the client asked is still on its way, except tasks/result waiting on tasks: those may wait for
   * as long as a task runs, for a client that may be gone (its vanishing looks the same), so they are not
   * waited for.
   */
  private get onlyTasksAwaited(): boolean {
    const waiting = this.served;
    if (this.open.size > waiting.blockingCount) return false;
    for (const key of this.open) if (!waiting.isBlocking(key)) return false;
    return true;
  }
}

/**
 * What the client sends while its initialize is unanswered (a client piping its input does not wait for
 * the answer): held, in order, until that answer has gone to the client, so that each message is decided
 * with what the upstream declared (its tasks, for one) like any later one. Responses are not held: an
 * answer must not wait, and the upstream asks nothing before it is initialized. Past the bound, a message
 * is taken at once.
 */
import { idKey, type RequestId } from '../protocol/messages.js';

const MAX_HELD = 1_000;
const MAX_HELD_BYTES = 16 * 1024 * 1024;

interface Held {
  raw: Buffer;
  parsed: object | undefined;
}

export class EarlyMessages {
  /** The initialize waiting for its answer. */
  private awaited: string | number | undefined;
  private held: Held[] = [];
  private bytes = 0;
  private replaying = false;

  constructor(private readonly take: (raw: Buffer, parsed: object | undefined) => void) {}

  initializeSent(id: RequestId): void {
    this.awaited = idKey(id);
  }

  /** Whether a message now would be held: initialize is unanswered, or what waited is still to go. */
  get holding(): boolean {
    return !this.replaying && (this.awaited !== undefined || this.held.length > 0);
  }

  /** Keeps the message for later, while holding; else false. */
  hold(raw: Buffer, parsed: object | undefined): boolean {
    if (!this.holding) return false;
    if (this.held.length >= MAX_HELD || this.bytes + raw.length > MAX_HELD_BYTES) return false;
    this.held.push({ raw, parsed });
    this.bytes += raw.length;
    return true;
  }

  /** A client request was answered: the answer to initialize lets what waited go on, right after it. */
  answered(id: RequestId): void {
    if (this.awaited === undefined || idKey(id) !== this.awaited) return;
    this.awaited = undefined;
    if (this.held.length > 0) queueMicrotask(() => this.replay());
  }

  private replay(): void {
    this.replaying = true;
    try {
      // A second initialize among them holds the rest again, until its own answer.
      while (this.awaited === undefined && this.held.length > 0) {
        const { raw, parsed } = this.held.shift()!;
        this.bytes -= raw.length;
        this.take(raw, parsed);
      }
    } finally {
      this.replaying = false;
    }
  }
}

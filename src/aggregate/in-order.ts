/**
 * A server's messages to the client in the order the server sent them, while one of its answers is held
 * (issue 32): with a store shared by replicas, the CreateTaskResult of a task the server runs itself goes
 * once the task is posted on the board (replica-tasks.ts), and the server's later messages (its
 * `notifications/tasks/status` of that task above all) wait behind it, so the client never hears of a
 * task it has not been given. One queue per server, only while something of it is held; the other servers'
 * messages are not held.
 *
 * Bounded: past HELD_AT_MOST messages or bytes behind a held answer, the held answers go at once (their
 * posts go on, and the post of one may land after the client has it: another replica asked in between
 * answers as for an unknown task), then what waited behind them. A post that fails releases its answer as
 * one that lands does (logged by replica-tasks.ts): the task is then reached from its own session only.
 */
import type { Logger } from 'pino';

/** Messages, and bytes of them, one server's queue keeps behind its held answers at most. */
export const HELD_AT_MOST = { messages: 1_000, bytes: 4 * 1024 * 1024 };

interface Entry {
  send: () => void;
  bytes: number;
  /** It may go once those before it have (false: an answer held). */
  ready: boolean;
}

interface Queue {
  entries: Entry[];
  bytes: number;
}

export class InOrder {
  /** By server name; a server is here only while one of its answers is held. */
  private readonly queues = new Map<string, Queue>();

  constructor(private readonly logger: Logger) {}

  /** One of `server`'s messages (of `bytes`): sent now, unless one of its answers is held. */
  send(server: string, bytes: number, send: () => void): void {
    const queue = this.queues.get(server);
    if (queue === undefined) return send();
    this.queued(server, queue, { send, bytes, ready: true });
  }

  /**
   * How `server`'s answer is sent: one that creates a task, with a shared store, is held (hold), since its
   * task may be the server's own, told of once posted; any other (a plain result, however big) goes in order.
   */
  answer(server: string, bytes: number, createsTask: boolean, send: () => void): () => void {
    if (createsTask) return this.hold(server, bytes, send);
    return () => this.send(server, bytes, send);
  }

  /**
   * One of `server`'s answers, held: its later messages wait for it. It goes (with what waited behind it)
   * once the function returned is called; calling it again, or after the bound let it go, does nothing.
   */
  hold(server: string, bytes: number, send: () => void): () => void {
    let queue = this.queues.get(server);
    if (queue === undefined) this.queues.set(server, (queue = { entries: [], bytes: 0 }));
    const entry = { send, bytes, ready: false };
    this.queued(server, queue, entry);
    return () => {
      entry.ready = true;
      this.flush(server);
    };
  }

  private queued(server: string, queue: Queue, entry: Entry): void {
    queue.entries.push(entry);
    queue.bytes += entry.bytes;
    if (queue.entries.length <= HELD_AT_MOST.messages && queue.bytes <= HELD_AT_MOST.bytes) return;
    this.logger.warn(
      { server, messages: queue.entries.length, bytes: queue.bytes },
      `the server "${server}" sent more than the queue behind its answer waiting for the store holds: the answer goes before its task is posted`,
    );
    for (const waiting of queue.entries) waiting.ready = true;
    this.flush(server);
  }

  /** Sends what may go of `server`'s queue, in order; the queue goes once nothing of it is held. */
  private flush(server: string): void {
    const queue = this.queues.get(server);
    if (queue === undefined) return;
    while (queue.entries[0]?.ready === true) {
      const entry = queue.entries.shift()!;
      queue.bytes -= entry.bytes;
      entry.send();
    }
    if (queue.entries.length === 0) this.queues.delete(server);
  }
}

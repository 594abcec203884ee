/**
 * Requests sent to one peer and not yet answered, keyed by the id they carry on that peer's wire.
 *
 * Forwarded requests keep their own id whenever it is free, so the common case rewrites nothing. taskgate's
 * own requests, and forwarded ones whose id is already taken (by one of ours, or reused by a misbehaving
 * peer), get a fresh id that cannot collide: ids never clash in either direction.
 *
 * With a deadline, an entry not answered within it is taken out and handed to `expired`: the one place
 * where a request, forwarded or taskgate's own, stops waiting for a peer that does not answer.
 */
import { randomBytes } from 'node:crypto';
import { idKey, type RequestId } from '../protocol/messages.js';

const MAX_TIMER_MS = 2 ** 31 - 1;

export interface Deadline<Entry> {
  /** How long an entry may wait for its answer, counted from when it was registered (sent). */
  afterMs: number;
  expired(wireId: RequestId, entry: Entry, afterMs: number): void;
}

export class PendingRequests<Entry> {
  private readonly byWireId = new Map<string | number, Entry>();
  private readonly timers = new Map<string | number, NodeJS.Timeout>();
  private readonly prefix = `taskgate-${randomBytes(4).toString('hex')}-`;
  private counter = 0;

  constructor(private readonly deadline?: Deadline<Entry>) {}

  /**
   * Registers a forwarded request; returns the id to send it with (its own unless taken). `timeoutMs`
   * replaces the table's deadline for this one.
   */
  forward(id: RequestId, entry: Entry, timeoutMs?: number): RequestId {
    const key = idKey(id);
    if (!this.byWireId.has(key)) {
      this.register(key, id, entry, timeoutMs);
      return id;
    }
    return this.own(entry, timeoutMs);
  }

  /** Registers a request of taskgate's own; returns its fresh id. */
  own(entry: Entry, timeoutMs?: number): RequestId {
    let id: string;
    do id = this.prefix + (this.counter++).toString(36);
    while (this.byWireId.has(idKey(id)));
    this.register(idKey(id), id, entry, timeoutMs);
    return id;
  }

  private register(key: string | number, id: RequestId, entry: Entry, timeoutMs: number | undefined): void {
    this.byWireId.set(key, entry);
    const deadline = this.deadline;
    if (deadline === undefined) return;
    const afterMs = timeoutMs ?? deadline.afterMs;
    // Node's timers fire at once past 2^31 ms: a longer deadline (a task's ttl of weeks) waits that long.
    const delay = Math.min(afterMs, MAX_TIMER_MS);
    const timer = setTimeout(() => {
      if (this.byWireId.get(key) !== entry) return;
      this.byWireId.delete(key);
      this.timers.delete(key);
      deadline.expired(id, entry, afterMs);
    }, delay).unref();
    this.timers.set(key, timer);
  }

  private forget(key: string | number): void {
    this.byWireId.delete(key);
    const timer = this.timers.get(key);
    if (timer === undefined) return;
    clearTimeout(timer);
    this.timers.delete(key);
  }

  get(id: RequestId): Entry | undefined {
    return this.byWireId.get(idKey(id));
  }

  take(id: RequestId): Entry | undefined {
    const key = idKey(id);
    const entry = this.byWireId.get(key);
    if (entry !== undefined) this.forget(key);
    return entry;
  }

  /**
   * Removes the first entry that matches, looked for under `likely` first (a forwarded request mostly
   * keeps its id), else by a linear scan (for rare paths such as cancellation): its wire id.
   */
  takeMatching(likely: RequestId, matches: (entry: Entry) => boolean): RequestId | undefined {
    const direct = this.get(likely);
    const id = direct !== undefined && matches(direct) ? likely : this.findId(matches);
    if (id !== undefined) this.take(id);
    return id;
  }

  /** The wire id of the first entry that matches (a linear scan). */
  findId(matches: (entry: Entry) => boolean): RequestId | undefined {
    for (const [key, entry] of this.byWireId) {
      if (matches(entry)) return typeof key === 'number' ? key : key.slice(2);
    }
    return undefined;
  }

  /** Removes the entries that match and returns them with their wire ids. */
  takeWhere(matches: (entry: Entry) => boolean): [RequestId, Entry][] {
    const taken: [RequestId, Entry][] = [];
    for (const [key, entry] of this.byWireId) {
      if (!matches(entry)) continue;
      this.forget(key);
      taken.push([typeof key === 'number' ? key : key.slice(2), entry]);
    }
    return taken;
  }

  /** Removes and returns every pending entry (the peer is gone). */
  drain(): Entry[] {
    const entries = [...this.byWireId.values()];
    this.byWireId.clear();
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    return entries;
  }

  get size(): number {
    return this.byWireId.size;
  }
}

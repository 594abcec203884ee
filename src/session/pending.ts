/**
 * Requests sent to one peer and not yet answered, keyed by the id they carry on that peer's wire.
 *
 * Forwarded requests keep their own id whenever it is free, so the common case rewrites nothing. taskgate's
 * own requests, and forwarded ones whose id is already taken (by one of ours, or reused by a misbehaving
 * peer), get a fresh id that cannot collide: ids never clash in either direction.
 */
import { randomBytes } from 'node:crypto';
import { idKey, type RequestId } from '../protocol/messages.js';

export class PendingRequests<Entry> {
  private readonly byWireId = new Map<string | number, Entry>();
  private readonly prefix = `taskgate-${randomBytes(4).toString('hex')}-`;
  private counter = 0;

  /** Registers a forwarded request; returns the id to send it with (its own unless taken). */
  forward(id: RequestId, entry: Entry): RequestId {
    const key = idKey(id);
    if (!this.byWireId.has(key)) {
      this.byWireId.set(key, entry);
      return id;
    }
    return this.own(entry);
  }

  /** Registers a request of taskgate's own; returns its fresh id. */
  own(entry: Entry): RequestId {
    let id: string;
    do id = this.prefix + (this.counter++).toString(36);
    while (this.byWireId.has(idKey(id)));
    this.byWireId.set(idKey(id), entry);
    return id;
  }

  get(id: RequestId): Entry | undefined {
    return this.byWireId.get(idKey(id));
  }

  take(id: RequestId): Entry | undefined {
    const key = idKey(id);
    const entry = this.byWireId.get(key);
    if (entry !== undefined) this.byWireId.delete(key);
    return entry;
  }

  /** The wire id of the first entry that matches (a linear scan: for rare paths such as cancellation). */
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
      this.byWireId.delete(key);
      taken.push([typeof key === 'number' ? key : key.slice(2), entry]);
    }
    return taken;
  }

  /** Removes and returns every pending entry (the peer is gone). */
  drain(): Entry[] {
    const entries = [...this.byWireId.values()];
    this.byWireId.clear();
    return entries;
  }

  get size(): number {
    return this.byWireId.size;
  }
}

/**
 * The correlation engine: the one place that keeps what is in flight with a peer taskgate talks to (the
 * upstream over stdio or HTTP, a shared upstream's connection, a 2026-07-28 upstream behind the
 * translator, the client). Every such table is a `Correlation`; what it owns:
 *
 * - **Wire ids.** A forwarded request keeps its own id whenever that is free (the common case rewrites
 *   nothing); taskgate's own requests, forwarded ones whose id is taken, and every request of a table that
 *   renumbers (many origins on one connection) get a fresh id that cannot collide. Ids never clash in
 *   either direction; 1 and "1" are two ids, and an id beyond 2^53 (an alias inside: exact-ids.ts) is
 *   kept as it is.
 * - **Origins.** A forwarded request remembers who sent it and the id it had there, so that the origin's
 *   cancellation finds it (`withdraw`) and an origin that goes finds everything it had (`wireIdsOf`).
 * - **Deadlines.** An entry not answered in time is taken out and handed to `expired`: the one place where a
 *   request stops waiting for a peer that does not answer. One timer per table, not one per request, armed
 *   only while a deadline is in flight: it sleeps until the earliest deadline and a sweep expires all that
 *   are past. An entry is failed at its deadline, SWEEP_MIN_MS late at most (deadlines are seconds:
 *   `upstream.requestTimeout`).
 * - **Cancellation both ways.** `cancellation` is the notifications/cancelled a peer is sent; `Inbound`
 *   keeps the peer's own requests carried to an origin, so its cancellation (or the origin's going) reaches
 *   the right one.
 * - **Progress.** `ProgressTokens` maps the tokens on a peer's wire to the origin that gave them, for as
 *   long as what they report on lasts, and remembers (bounded) the ones that ended.
 * - **A gone peer.** `drain` hands back every entry, for each to be settled with the error it is owed
 *   (`goneError`).
 */
import { randomBytes } from 'node:crypto';
import { ErrorCode } from './errors.js';
import { idKey, type JsonObject, type Notification, type RequestId } from './messages.js';

type Key = string | number;

/**
 * The longest the timer sleeps when a request arms it. It is left armed when the table empties, so that
 * requests one after the other (the common case) arm it about once in this time rather than one each, and
 * it outlives the last deadline by this much at most. A longer sleep, which a sweep arms for the earliest
 * deadline left, ends as soon as no deadline is in flight.
 */
const SHORT_SLEEP_MS = 1_000;
/** The shortest sleep after a sweep: deadlines close together expire in one sweep, this late at most. */
const SWEEP_MIN_MS = 10;
/** Node's timers fire at once past 2^31 ms: a longer deadline (a task's ttl of weeks) is slept to in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** Node's timers count whole milliseconds: one can fire this much before performance.now() is there. */
const TIMER_SLACK_MS = 1;

/** The origin of a table whose requests all come from one sender (a session's one client). */
const SOLE: unique symbol = Symbol('the sole origin');

export interface Deadline<Entry> {
  /** How long an entry may wait for its answer, counted from when it was registered (sent); none: unbounded. */
  afterMs?: number;
  expired(wireId: RequestId, entry: Entry, afterMs: number): void;
}

export interface CorrelationOptions<Entry> {
  deadline?: Deadline<Entry>;
  /** Every request gets a fresh id (one connection carries many origins, whose ids would collide). */
  renumber?: boolean;
  /** A fresh id from a counter; `own`: for one of taskgate's own requests. Default `taskgate-<hex>-<n>`. */
  mint?: (counter: number, own: boolean) => RequestId;
}

interface Slot<Entry, Origin> {
  id: RequestId;
  entry: Entry;
  origin: Origin | typeof SOLE | undefined;
  originKey: Key | undefined;
  /** When it expires (performance.now()); Infinity: never. */
  due: number;
  /** Its deadline as it was given, for `expired`. */
  afterMs: number;
}

export class Correlation<Entry, Origin = never> {
  private readonly byWireId = new Map<Key, Slot<Entry, Origin>>();
  /** Origin → the key of the id it gave → the key of the wire id it went as. */
  private readonly byOrigin = new Map<Origin | typeof SOLE, Map<Key, Key>>();
  private readonly mint: (counter: number, own: boolean) => RequestId;
  private counter = 0;
  private timer: NodeJS.Timeout | undefined;
  /** When the timer fires (performance.now()); Infinity while it is not armed. */
  private sweepAt = Infinity;
  /** The timer sleeps longer than SHORT_SLEEP_MS. */
  private sleepsLong = false;
  /** How many entries in flight have a deadline. */
  private timed = 0;
  private readonly sweeper = () => this.sweep();

  constructor(private readonly options: CorrelationOptions<Entry> = {}) {
    const prefix = `taskgate-${randomBytes(4).toString('hex')}-`;
    this.mint = options.mint ?? ((counter) => prefix + counter.toString(36));
  }

  /**
   * Registers a forwarded request from `origin` (the table's sole one when left out): the id to send it
   * with, its own unless taken (or the table renumbers). `timeoutMs` replaces the deadline for this one.
   */
  forward(id: RequestId, entry: Entry, origin?: Origin, timeoutMs?: number): RequestId {
    const from = origin === undefined ? SOLE : origin;
    const key = idKey(id);
    if (this.options.renumber || this.byWireId.has(key)) return this.fresh(entry, false, from, id, timeoutMs);
    this.register(key, id, entry, from, id, timeoutMs);
    return id;
  }

  /** Registers a request of taskgate's own: its fresh id. */
  own(entry: Entry, timeoutMs?: number): RequestId {
    return this.fresh(entry, true, undefined, undefined, timeoutMs);
  }

  private fresh(
    entry: Entry,
    own: boolean,
    origin: Origin | typeof SOLE | undefined,
    originId: RequestId | undefined,
    timeoutMs: number | undefined,
  ): RequestId {
    let id: RequestId;
    do id = this.mint(this.counter++, own);
    while (this.byWireId.has(idKey(id)));
    this.register(idKey(id), id, entry, origin, originId, timeoutMs);
    return id;
  }

  private register(
    key: Key,
    id: RequestId,
    entry: Entry,
    origin: Origin | typeof SOLE | undefined,
    originId: RequestId | undefined,
    timeoutMs: number | undefined,
  ): void {
    const originKey = originId === undefined ? undefined : idKey(originId);
    const slot: Slot<Entry, Origin> = { id, entry, origin, originKey, due: Infinity, afterMs: 0 };
    this.byWireId.set(key, slot);
    // A request that went as its own id is found by it (wireKeyOf): only a renumbered one is indexed, which
    // spares the common case two Maps' set and delete (a delete that empties a Map shrinks it, in V8's runtime).
    if (
      origin !== undefined &&
      originKey !== undefined &&
      originKey !== key &&
      !this.isOwnId(originKey, origin)
    ) {
      let ids = this.byOrigin.get(origin);
      if (ids === undefined) this.byOrigin.set(origin, (ids = new Map()));
      // The first of two requests an origin sent with one id is the one its cancellation finds first.
      if (!ids.has(originKey)) ids.set(originKey, key);
    }
    const afterMs = timeoutMs ?? this.options.deadline?.afterMs;
    if (this.options.deadline === undefined || afterMs === undefined) return;
    const now = performance.now();
    slot.due = now + afterMs;
    slot.afterMs = afterMs;
    this.timed++;
    if (slot.due < this.sweepAt) this.arm(now, Math.min(afterMs, SHORT_SLEEP_MS));
  }

  /** The timer, to fire in `delay` ms, in place of any armed. */
  private arm(now: number, delay: number): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.sweepAt = now + delay;
    this.sleepsLong = delay > SHORT_SLEEP_MS;
    this.timer = setTimeout(this.sweeper, delay).unref();
  }

  private disarm(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.sweepAt = Infinity;
  }

  /** Takes out what is past its deadline, arms the timer for what is left, then hands each over. */
  private sweep(): void {
    this.timer = undefined;
    this.sweepAt = Infinity;
    const now = performance.now();
    let next = Infinity;
    const expired: Slot<Entry, Origin>[] = [];
    for (const [key, slot] of this.byWireId) {
      if (slot.due <= now + TIMER_SLACK_MS) {
        this.forget(key, slot);
        expired.push(slot);
      } else if (slot.due < next) next = slot.due;
    }
    if (next !== Infinity) this.arm(now, Math.min(Math.max(next - now, SWEEP_MIN_MS), MAX_TIMER_MS));
    for (const slot of expired) this.options.deadline!.expired(slot.id, slot.entry, slot.afterMs);
  }

  private forget(key: Key, slot: Slot<Entry, Origin>): void {
    this.byWireId.delete(key);
    if (slot.due !== Infinity && --this.timed === 0 && this.sleepsLong) this.disarm();
    this.unindex(key, slot);
  }

  /** `origin`'s request `originKey` is in flight as its own id. */
  private isOwnId(originKey: Key, origin: Origin | typeof SOLE): boolean {
    const slot = this.byWireId.get(originKey);
    return slot !== undefined && slot.origin === origin && slot.originKey === originKey;
  }

  private unindex(key: Key, slot: Slot<Entry, Origin>): void {
    if (slot.origin === undefined || slot.originKey === undefined || slot.originKey === key) return;
    const ids = this.byOrigin.get(slot.origin);
    if (ids?.get(slot.originKey) !== key) return;
    ids.delete(slot.originKey);
    if (ids.size === 0) this.byOrigin.delete(slot.origin);
  }

  get(wireId: RequestId): Entry | undefined {
    return this.byWireId.get(idKey(wireId))?.entry;
  }

  /** The entry an answer with this id answers, no longer in flight. */
  take(wireId: RequestId): Entry | undefined {
    const key = idKey(wireId);
    const slot = this.byWireId.get(key);
    if (slot === undefined) return undefined;
    this.forget(key, slot);
    return slot.entry;
  }

  /** The wire id of the request `origin` sent as `id`, while it is in flight. */
  wireIdOf(id: RequestId, origin?: Origin): RequestId | undefined {
    const key = this.wireKeyOf(id, origin);
    return key === undefined ? undefined : this.byWireId.get(key)!.id;
  }

  private wireKeyOf(id: RequestId, origin: Origin | undefined): Key | undefined {
    const from = origin === undefined ? SOLE : origin;
    const originKey = idKey(id);
    // A renumbered one indexed under this id was sent before any that went as the id itself.
    const indexed = this.byOrigin.get(from)?.get(originKey);
    if (indexed !== undefined) return indexed;
    if (this.isOwnId(originKey, from)) return originKey;
    // A second request sent with one id while the first was in flight is not indexed: found by a scan.
    for (const [key, slot] of this.byWireId) {
      if (slot.origin === from && slot.originKey === originKey) return key;
    }
    return undefined;
  }

  /** The wire ids of what `origin` has in flight (a linear scan: for an origin that goes). */
  wireIdsOf(origin: Origin): RequestId[] {
    const ids: RequestId[] = [];
    for (const slot of this.byWireId.values()) if (slot.origin === origin) ids.push(slot.id);
    return ids;
  }

  /**
   * The origin stops waiting for the request that went as `wireId`; the request stays in flight (its
   * answer is nobody's, or is taken by taskgate itself).
   */
  letGo(wireId: RequestId): void {
    const key = idKey(wireId);
    const slot = this.byWireId.get(key);
    if (slot === undefined) return;
    this.unindex(key, slot);
    slot.origin = undefined;
    slot.originKey = undefined;
  }

  /**
   * The origin cancelled its request `id`: it is no longer awaited. Its wire id and entry, for the peer to
   * be told (`cancellation`), if it was in flight.
   */
  withdraw(id: RequestId, origin?: Origin): [RequestId, Entry] | undefined {
    const key = this.wireKeyOf(id, origin);
    if (key === undefined) return undefined;
    const slot = this.byWireId.get(key)!;
    this.forget(key, slot);
    return [slot.id, slot.entry];
  }

  /** Removes the entries that match and returns them with their wire ids. */
  takeWhere(matches: (entry: Entry) => boolean): [RequestId, Entry][] {
    const taken: [RequestId, Entry][] = [];
    for (const [key, slot] of this.byWireId) {
      if (!matches(slot.entry)) continue;
      this.forget(key, slot);
      taken.push([slot.id, slot.entry]);
    }
    return taken;
  }

  /** The peer is gone: every entry, taken out, each to be settled with what it is owed (`goneError`). */
  drain(): Entry[] {
    const entries = [...this.byWireId.values()].map((slot) => slot.entry);
    this.disarm();
    this.timed = 0;
    this.byWireId.clear();
    this.byOrigin.clear();
    return entries;
  }

  get size(): number {
    return this.byWireId.size;
  }

  /** @internal How many origin ids are indexed (tests: none once all are settled). */
  get indexed(): number {
    let count = 0;
    for (const ids of this.byOrigin.values()) count += ids.size;
    return count;
  }
}

/** The notifications/cancelled that tells a peer its request `requestId` is no longer awaited. */
export function cancellation(requestId: RequestId, reason: string, meta?: JsonObject): Notification {
  const params: JsonObject = { requestId, reason };
  if (meta !== undefined) params._meta = meta;
  return { jsonrpc: '2.0', method: 'notifications/cancelled', params };
}

/**
 * An origin's notifications/cancelled, carried to the peer: the same, naming the request by its wire id
 * (and with the peer's `_meta`, for one that wants its own on every message).
 */
export function carriedCancellation(
  notification: Notification,
  wireId: RequestId,
  meta?: JsonObject,
): Notification {
  const params: JsonObject = { ...notification.params, requestId: wireId };
  if (meta !== undefined) params._meta = meta;
  return { ...notification, params };
}

/** Who went away: the upstream server, or the client a request was put to. */
export type GonePeer = 'upstream' | 'client';

/** The JSON-RPC error a request is owed whose peer went away before answering it. */
export function goneError(peer: GonePeer, reason: string): { code: number; message: string } {
  return peer === 'upstream'
    ? { code: ErrorCode.UpstreamUnavailable, message: `Upstream server unavailable: ${reason}` }
    : { code: ErrorCode.ClientUnavailable, message: reason };
}

/**
 * A peer's own requests carried to an origin (a server's request to the session it is for), by the id
 * the peer gave them: answered, cancelled by the peer, or owed an error when their origin goes.
 */
export class Inbound<Origin> {
  private readonly byId = new Map<Key, { id: RequestId; origin: Origin }>();

  held(id: RequestId, origin: Origin): void {
    this.byId.set(idKey(id), { id, origin });
  }

  /**
   * `origin` answered: the request is over if it was the one asked. False when it was not (another
   * origin's, or none): that answer is not the peer's to have, and whoever was asked still has it.
   */
  answered(id: RequestId, origin: Origin): boolean {
    const key = idKey(id);
    if (this.byId.get(key)?.origin !== origin) return false;
    this.byId.delete(key);
    return true;
  }

  /** The peer cancelled its request: the origin that has it, to be told. */
  cancelled(id: RequestId): Origin | undefined {
    const key = idKey(id);
    const held = this.byId.get(key);
    this.byId.delete(key);
    return held?.origin;
  }

  /** The origin went: the ids of the peer's requests it will never answer (each owed `goneError`). */
  takeOrigin(origin: Origin): RequestId[] {
    const ids: RequestId[] = [];
    for (const [key, held] of this.byId) {
      if (held.origin !== origin) continue;
      this.byId.delete(key);
      ids.push(held.id);
    }
    return ids;
  }

  clear(): void {
    this.byId.clear();
  }

  get size(): number {
    return this.byId.size;
  }
}

/** How many ended tokens a ProgressTokens remembers at most. */
export const ENDED_TOKENS_KEPT = 1024;

/**
 * Progress tokens on a peer's wire, each to the origin that gave it (and the token it gave, when the
 * wire's was minted: a connection shared by many origins renumbers them). A token lasts as long as what
 * it reports on (a request, or the task it made); once ended, progress with it is over (`isOver`).
 */
export class ProgressTokens<Owner> {
  private readonly live = new Map<Key, { owner: Owner; token: string | number }>();
  private readonly ended = new Set<Key>();

  /** Progress with `wireToken` goes to `owner`, as `token` (the owner's own; the wire's by default). */
  open(wireToken: string | number, owner: Owner, token: string | number = wireToken): void {
    const key = idKey(wireToken);
    this.live.set(key, { owner, token });
    this.ended.delete(key);
  }

  /** Who progress with `wireToken` goes to, and as what token. */
  ownerOf(wireToken: string | number): { owner: Owner; token: string | number } | undefined {
    return this.live.get(idKey(wireToken));
  }

  /**
   * What `wireToken` reported on is over (remembered as ended even when nobody heard it any more); `owner`:
   * only if it is still that one's.
   */
  end(wireToken: string | number, owner?: Owner): void {
    const key = idKey(wireToken);
    if (owner !== undefined && this.live.get(key)?.owner !== owner) return;
    this.live.delete(key);
    this.ended.delete(key);
    if (this.ended.size >= ENDED_TOKENS_KEPT) this.ended.delete(this.ended.values().next().value!);
    this.ended.add(key);
  }

  /** Progress with `wireToken` comes after the end of what it reported on. */
  isOver(wireToken: string | number): boolean {
    const key = idKey(wireToken);
    return this.ended.has(key) && !this.live.has(key);
  }

  /** The owner went: its tokens route nowhere (forgotten, not remembered as ended). */
  dropOwner(matches: (owner: Owner) => boolean): void {
    for (const [key, live] of this.live) if (matches(live.owner)) this.live.delete(key);
  }

  /** The peer went: nothing it reports on lasts. */
  clear(): void {
    this.live.clear();
  }

  get size(): number {
    return this.live.size;
  }
}

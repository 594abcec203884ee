/**
 * A pool the callers of one bridge share (open listens, calls waiting for input, extension tasks), with a
 * share for each (issue 28 "Quotas per caller"): no caller can refuse or push out another that holds no
 * more than its share. Each entry counts once and weighs the bytes it keeps.
 *
 * - A caller past its own cap (entries or bytes) makes room from its own entries, oldest first, where the
 *   pool may give entries up (`evictOwn`); otherwise it is refused.
 * - A full pool makes room from the caller holding the most, if that one holds more than its fair share
 *   (the pool divided among the callers holding entries, the newcomer included) and more than the
 *   newcomer would with the new entry; otherwise the newcomer is refused: everyone holds no more than
 *   their share.
 */

export interface ShareLimits {
  /** Entries in the pool at most, and per caller. */
  maxEntries: number;
  maxEntriesPerCaller: number;
  /** Bytes the pool's entries keep at most, and per caller. */
  maxBytes: number;
  maxBytesPerCaller: number;
}

export interface CallerSharesOptions<E> {
  limits: ShareLimits;
  /** What the pool holds, for refusals ("open subscriptions", "calls waiting for input"). */
  what: string;
  /** Whether a caller past its own cap gives up its oldest entry, rather than being refused. */
  evictOwn: boolean;
  /** An entry taken out of the pool to make room: its owner ends it. */
  evicted(entry: E, why: string): void;
}

interface Held {
  caller: string;
  bytes: number;
}

export class CallerShares<E> {
  private readonly held = new Map<E, Held>();
  /** Each caller's entries, oldest first, and the bytes they keep. */
  private readonly byCaller = new Map<string, { entries: Set<E>; bytes: number }>();
  private bytes = 0;

  constructor(private readonly options: CallerSharesOptions<E>) {}

  /** Takes the entry in for `caller`, making room as above; or says why it is refused. */
  add(caller: string, entry: E, bytes = 0): { refused: string } | undefined {
    const { limits, what } = this.options;
    if (bytes > limits.maxBytesPerCaller) {
      return { refused: `it would keep ${bytes} bytes, more than a caller's ${limits.maxBytesPerCaller}` };
    }
    for (;;) {
      const mine = this.byCaller.get(caller);
      const count = mine?.entries.size ?? 0;
      const kept = mine?.bytes ?? 0;
      if (count + 1 > limits.maxEntriesPerCaller || kept + bytes > limits.maxBytesPerCaller) {
        const why = `the caller has its share of ${what} (${limits.maxEntriesPerCaller}, ${limits.maxBytesPerCaller} bytes)`;
        if (!this.options.evictOwn || mine === undefined) return { refused: why };
        this.evict(mine.entries.values().next().value as E, why);
        continue;
      }
      const byBytes = this.bytes + bytes > limits.maxBytes;
      if (!byBytes && this.held.size + 1 <= limits.maxEntries) break;
      const victim = this.overShare(caller, byBytes, byBytes ? kept + bytes : count + 1);
      if (victim === undefined) {
        return {
          refused: `all ${limits.maxEntries} ${what} (${limits.maxBytes} bytes) are held by callers within their share`,
        };
      }
      this.evict(victim, `${what} are full, and another caller was within its share`);
    }
    this.held.set(entry, { caller, bytes });
    const mine = this.byCaller.get(caller) ?? { entries: new Set<E>(), bytes: 0 };
    mine.entries.add(entry);
    mine.bytes += bytes;
    this.byCaller.set(caller, mine);
    this.bytes += bytes;
    return undefined;
  }

  /** Weighs the entry anew, if its caller's share and the pool have room for it; false leaves it as it was. */
  resize(entry: E, bytes: number): boolean {
    const held = this.held.get(entry);
    if (held === undefined) return false;
    const more = bytes - held.bytes;
    const mine = this.byCaller.get(held.caller)!;
    const { limits } = this.options;
    if (more > 0 && (mine.bytes + more > limits.maxBytesPerCaller || this.bytes + more > limits.maxBytes)) {
      return false;
    }
    held.bytes = bytes;
    mine.bytes += more;
    this.bytes += more;
    return true;
  }

  remove(entry: E): void {
    const held = this.held.get(entry);
    if (held === undefined) return;
    this.held.delete(entry);
    this.bytes -= held.bytes;
    const mine = this.byCaller.get(held.caller)!;
    mine.entries.delete(entry);
    mine.bytes -= held.bytes;
    if (mine.entries.size === 0) this.byCaller.delete(held.caller);
  }

  get size(): number {
    return this.held.size;
  }

  /**
   * The oldest entry of the caller holding the most (entries, or bytes), if it holds more than its share
   * and than the newcomer would (`wants`).
   */
  private overShare(newcomer: string, byBytes: boolean, wants: number): E | undefined {
    const { limits } = this.options;
    const callers = this.byCaller.size + (this.byCaller.has(newcomer) ? 0 : 1);
    const share = Math.floor((byBytes ? limits.maxBytes : limits.maxEntries) / callers);
    let most: { entries: Set<E>; bytes: number } | undefined;
    let mostHeld = Math.max(share, wants);
    for (const [caller, mine] of this.byCaller) {
      const held = byBytes ? mine.bytes : mine.entries.size;
      if (caller !== newcomer && held > mostHeld) {
        most = mine;
        mostHeld = held;
      }
    }
    return most?.entries.values().next().value;
  }

  private evict(entry: E, why: string): void {
    this.remove(entry);
    this.options.evicted(entry, why);
  }
}

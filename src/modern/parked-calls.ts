/**
 * Calls waiting for a modern client's retry (MRTR). A 2025 server asked for input during the call; the
 * client was answered `input_required` with a sealed requestState naming the parked call, and the call
 * stays open upstream until the retry brings the answers. Each state is consumed once; a call nobody
 * comes back for is given up after the wait. The calls waiting, and the bytes of input they keep, are
 * shared by callers (caller-shares.ts): past its share a caller's own oldest call is given up, never
 * another's within its share.
 */
import { randomUUID } from 'node:crypto';
import { CallerShares, type ShareLimits } from './caller-shares.js';

interface Parked<Call> {
  key: string;
  call: Call;
  timer: NodeJS.Timeout | undefined;
}

export class ParkedCalls<Call> {
  private readonly parked = new Map<string, Parked<Call>>();
  private readonly shares: CallerShares<Parked<Call>>;

  constructor(
    private readonly waitMs: number,
    limits: ShareLimits,
    /** The call was parked too long, or pushed out to make room: give it up. */
    private readonly abandoned: (call: Call, why: string) => void,
  ) {
    this.shares = new CallerShares({
      limits,
      what: 'calls waiting for input',
      evictOwn: true,
      evicted: (entry, why) => this.expire(entry.key, why),
    });
  }

  /** Parks the call for `caller`, keeping `bytes` of input; returns the key its requestState names. */
  park(call: Call, caller: string, bytes: number): { key: string } | { refused: string } {
    const key = randomUUID();
    const entry: Parked<Call> = { key, call, timer: undefined };
    const refused = this.shares.add(caller, entry, bytes);
    if (refused !== undefined) return refused;
    entry.timer = setTimeout(
      () => this.expire(key, `no retry came within ${this.waitMs} ms`),
      this.waitMs,
    ).unref();
    this.parked.set(key, entry);
    return { key };
  }

  /** The call parked under `key`, taken out: a second retry with the same state finds nothing. */
  take(key: string): Call | undefined {
    const entry = this.parked.get(key);
    if (entry === undefined) return undefined;
    clearTimeout(entry.timer);
    this.parked.delete(key);
    this.shares.remove(entry);
    return entry.call;
  }

  get size(): number {
    return this.parked.size;
  }

  close(): Call[] {
    const entries = [...this.parked.values()];
    for (const entry of entries) this.take(entry.key);
    return entries.map(({ call }) => call);
  }

  private expire(key: string, why: string): void {
    const call = this.take(key);
    if (call !== undefined) this.abandoned(call, why);
  }
}

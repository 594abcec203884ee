/**
 * Calls waiting for a modern client's retry (MRTR). A 2025 server asked for input during the call; the
 * client was answered `input_required` with a sealed requestState naming the parked call, and the call
 * stays open upstream until the retry brings the answers. Each state is consumed once; a call nobody
 * comes back for is given up after the wait, and there are never more than `max` parked at a time.
 */
import { randomUUID } from 'node:crypto';

export class ParkedCalls<Call> {
  private readonly parked = new Map<string, { call: Call; timer: NodeJS.Timeout }>();

  constructor(
    private readonly waitMs: number,
    private readonly max: number,
    /** The call was parked too long, or pushed out by newer ones: give it up. */
    private readonly abandoned: (call: Call, why: string) => void,
  ) {}

  /** Parks the call; returns the key its requestState names. */
  park(call: Call): string {
    if (this.parked.size >= this.max) {
      const [oldest] = this.parked.keys();
      if (oldest !== undefined) this.expire(oldest, `more than ${this.max} calls were waiting for input`);
    }
    const key = randomUUID();
    const timer = setTimeout(
      () => this.expire(key, `no retry came within ${this.waitMs} ms`),
      this.waitMs,
    ).unref();
    this.parked.set(key, { call, timer });
    return key;
  }

  /** The call parked under `key`, taken out: a second retry with the same state finds nothing. */
  take(key: string): Call | undefined {
    const entry = this.parked.get(key);
    if (entry === undefined) return undefined;
    clearTimeout(entry.timer);
    this.parked.delete(key);
    return entry.call;
  }

  get size(): number {
    return this.parked.size;
  }

  close(): Call[] {
    const calls = [...this.parked.values()].map(({ call, timer }) => {
      clearTimeout(timer);
      return call;
    });
    this.parked.clear();
    return calls;
  }

  private expire(key: string, why: string): void {
    const call = this.take(key);
    if (call !== undefined) this.abandoned(call, why);
  }
}

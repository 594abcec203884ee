import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Correlation } from '../../src/protocol/correlation.js';
import type { RequestId } from '../../src/protocol/messages.js';

/** When each expired entry was handed over, in fake ms since the table was made. */
interface Expiry {
  wireId: RequestId;
  at: number;
  afterMs: number;
}

function table(afterMs?: number) {
  const start = performance.now();
  const expired: Expiry[] = [];
  const pending = new Correlation<string>({
    deadline: {
      ...(afterMs === undefined ? {} : { afterMs }),
      expired: (wireId, _entry, ms) => expired.push({ wireId, at: performance.now() - start, afterMs: ms }),
    },
  });
  return { pending, expired };
}

describe('the correlation engine’s one deadline timer (issue 33)', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    // In this order: a spy set on a fake setTimeout, restored after the real timers were, would put the
    // fake one back as the worker's setTimeout, and no timer of the files after this one would ever fire.
    vi.restoreAllMocks();
    vi.useRealTimers();
  });

  // Node's timers count whole milliseconds (one fires up to 1 ms before performance.now() says its time is
  // up): a sweep takes what is due within that millisecond, as a timer of its own would have.
  it('fails each request at its deadline, not a millisecond before, and at most 10 ms after, whenever it was sent', () => {
    const { pending, expired } = table(1_000);
    const sentAt = [0, 3, 250, 999, 1_000, 1_004, 1_700];
    for (const [i, at] of sentAt.entries()) {
      vi.advanceTimersByTime(at - (sentAt[i - 1] ?? 0));
      pending.forward(i, `r${i}`);
    }
    pending.own('short', 40);
    vi.advanceTimersByTime(3_000);
    expect(expired.map(({ wireId }) => wireId).sort()).toEqual(
      [0, 1, 2, 3, 4, 5, 6, expect.any(String)].sort(),
    );
    for (const { wireId, at, afterMs } of expired) {
      const due = typeof wireId === 'number' ? sentAt[wireId]! + 1_000 : 1_700 + 40;
      expect(afterMs).toBe(typeof wireId === 'number' ? 1_000 : 40);
      expect(at).toBeGreaterThanOrEqual(due - 1);
      expect(at).toBeLessThanOrEqual(due + 10);
    }
    expect(pending.size).toBe(0);
  });

  it('expires deadlines a millisecond apart in a few sweeps, not one each', () => {
    const { pending, expired } = table(500);
    for (let i = 0; i < 200; i++) {
      pending.forward(i, `r${i}`);
      vi.advanceTimersByTime(1);
    }
    vi.advanceTimersByTime(1_000);
    expect(expired).toHaveLength(200);
    expect(new Set(expired.map(({ at }) => at)).size).toBeLessThanOrEqual(21);
  });

  it('never fails a request answered, withdrawn or drained in time, nor a later one under its freed id', () => {
    const { pending, expired } = table(1_000);
    pending.forward('answered', 'a');
    pending.forward('withdrawn', 'w');
    pending.forward('kept', 'k');
    vi.advanceTimersByTime(600);
    expect(pending.take('answered')).toBe('a');
    expect(pending.withdraw('withdrawn')).toEqual(['withdrawn', 'w']);
    pending.forward('answered', 'again');
    vi.advanceTimersByTime(500);
    expect(expired.map(({ wireId, at }) => [wireId, at])).toEqual([['kept', 1_000]]);
    vi.advanceTimersByTime(600);
    expect(expired.map(({ wireId, at }) => [wireId, at])).toEqual([
      ['kept', 1_000],
      ['answered', 1_600],
    ]);
    pending.forward('drained', 'd');
    expect(pending.drain()).toEqual(['d']);
    vi.advanceTimersByTime(10_000);
    expect(expired).toHaveLength(2);
  });

  it('arms one timer for requests sent one after another, not one each', () => {
    const { pending } = table(300_000);
    const setTimeout = vi.spyOn(globalThis, 'setTimeout');
    for (let i = 0; i < 1_000; i++) {
      pending.forward(i, 'call');
      pending.take(i);
    }
    expect(setTimeout).toHaveBeenCalledTimes(1);
  });

  it('leaves no timer once nothing is in flight: within a second after a short wait, at once after a long one', () => {
    const { pending, expired } = table(300_000);
    expect(vi.getTimerCount()).toBe(0);
    pending.forward(1, 'quick');
    expect(vi.getTimerCount()).toBe(1);
    pending.take(1);
    vi.advanceTimersByTime(1_000);
    expect(vi.getTimerCount()).toBe(0);
    // A sweep that finds a request far from its deadline sleeps until then, and wakes no sooner for nothing.
    pending.forward(2, 'slow');
    pending.forward(3, 'slower');
    vi.advanceTimersByTime(1_000);
    expect(vi.getTimerCount()).toBe(1);
    pending.take(2);
    expect(vi.getTimerCount()).toBe(1);
    pending.take(3);
    expect(vi.getTimerCount()).toBe(0);
    pending.forward(4, 'withdrawn');
    pending.withdraw(4);
    pending.forward(5, 'drained');
    pending.drain();
    expect(vi.getTimerCount()).toBe(0);
    // A table whose requests have no deadline arms nothing.
    const untimed = table();
    untimed.pending.forward(6, 'unbounded');
    expect(vi.getTimerCount()).toBe(0);
    expect(expired).toEqual([]);
  });

  it('wakes for a sooner deadline than the one it sleeps for', () => {
    const { pending, expired } = table(300_000);
    pending.forward('long', 'l');
    vi.advanceTimersByTime(1_000);
    pending.own('own', 200);
    vi.advanceTimersByTime(200);
    expect(expired.map(({ at, afterMs }) => [at, afterMs])).toEqual([[1_200, 200]]);
    expect(pending.get('long')).toBe('l');
  });
});

import { afterEach, describe, expect, it, vi } from 'vitest';
import type { RequestId } from '../../src/protocol/messages.js';
import { PendingRequests } from '../../src/session/pending.js';

interface Entry {
  name: string;
}
const entry = (name: string): Entry => ({ name });

/** The prefix of taskgate's own ids, learned from one of them ("taskgate-<hex>-<counter>"). */
function ownPrefix(pending: PendingRequests<Entry>): string {
  const sample = pending.own(entry('sample'));
  pending.take(sample);
  expect(sample).toMatch(/^taskgate-[0-9a-f]{8}-[0-9a-z]+$/);
  return String(sample).replace(/[0-9a-z]+$/, '');
}

describe('PendingRequests', () => {
  it.each<RequestId>([1, 0, -3, 2.5, 'abc', '', 'taskgate-x'])('forwards a free id %j unchanged', (id) => {
    const pending = new PendingRequests<Entry>();
    const a = entry('a');
    const wireId = pending.forward(id, a);
    expect(wireId).toBe(id);
    expect(pending.get(id)).toBe(a);
  });

  it('gives a fresh id to a forwarded request whose id is taken, and keeps the first one', () => {
    const pending = new PendingRequests<Entry>();
    const [first, second] = [entry('first'), entry('second')];
    pending.forward(7, first);
    const wireId = pending.forward(7, second);
    expect(wireId).not.toBe(7);
    expect(typeof wireId).toBe('string');
    expect(pending.get(7)).toBe(first);
    expect(pending.get(wireId)).toBe(second);
    expect(pending.size).toBe(2);
  });

  it('treats 1 and "1" as different ids', () => {
    const pending = new PendingRequests<Entry>();
    const [number, string] = [entry('number'), entry('string')];
    expect(pending.forward(1, number)).toBe(1);
    expect(pending.forward('1', string)).toBe('1');
    expect(pending.get(1)).toBe(number);
    expect(pending.get('1')).toBe(string);
    expect(pending.take(1)).toBe(number);
    expect(pending.get('1')).toBe(string);
    expect(pending.get(1)).toBeUndefined();
  });

  it('does not confuse a string id with the internal key of another', () => {
    const pending = new PendingRequests<Entry>();
    const [plain, prefixed] = [entry('plain'), entry('prefixed')];
    expect(pending.forward('x', plain)).toBe('x');
    expect(pending.forward('s:x', prefixed)).toBe('s:x');
    expect(pending.get('x')).toBe(plain);
    expect(pending.get('s:x')).toBe(prefixed);
  });

  it('mints distinct string ids for its own requests', () => {
    const pending = new PendingRequests<Entry>();
    const ids = Array.from({ length: 1_000 }, (_, i) => pending.own(entry(`own-${i}`)));
    for (const id of ids) expect(typeof id).toBe('string');
    expect(new Set(ids).size).toBe(1_000);
    expect(pending.size).toBe(1_000);
    expect(pending.get(ids[500]!)).toEqual(entry('own-500'));
  });

  it('uses a different prefix in each instance', () => {
    const a = new PendingRequests<Entry>().own(entry('a'));
    const b = new PendingRequests<Entry>().own(entry('b'));
    expect(a).not.toBe(b);
  });

  it('never mints an id that a peer has taken first, even one guessed on purpose', () => {
    const pending = new PendingRequests<Entry>();
    const prefix = ownPrefix(pending);
    const guesses = Array.from({ length: 20 }, (_, i) => `${prefix}${i.toString(36)}`);
    for (const guess of guesses) expect(pending.forward(guess, entry(`peer ${guess}`))).toBe(guess);
    const ours = Array.from({ length: 20 }, () => pending.own(entry('ours')));
    for (const id of ours) expect(guesses).not.toContain(id);
    for (const guess of guesses) expect(pending.get(guess)).toEqual(entry(`peer ${guess}`));
    expect(pending.size).toBe(40);
  });

  it('gives a fresh id to a forwarded request that reuses one of our pending ids', () => {
    const pending = new PendingRequests<Entry>();
    const mine = entry('mine');
    const ours = pending.own(mine);
    const theirs = entry('theirs');
    const wireId = pending.forward(ours, theirs);
    expect(wireId).not.toBe(ours);
    expect(pending.get(ours)).toBe(mine);
    expect(pending.get(wireId)).toBe(theirs);
  });

  it('get leaves the entry, take removes it and frees the id', () => {
    const pending = new PendingRequests<Entry>();
    const [a, b] = [entry('a'), entry('b')];
    pending.forward('req', a);
    expect(pending.get('req')).toBe(a);
    expect(pending.get('req')).toBe(a);
    expect(pending.take('req')).toBe(a);
    expect(pending.take('req')).toBeUndefined();
    expect(pending.get('req')).toBeUndefined();
    expect(pending.size).toBe(0);
    expect(pending.forward('req', b)).toBe('req');
  });

  it('take and get of an unknown id return undefined', () => {
    const pending = new PendingRequests<Entry>();
    pending.forward(1, entry('a'));
    expect(pending.get(2)).toBeUndefined();
    expect(pending.take('2')).toBeUndefined();
    expect(pending.size).toBe(1);
  });

  it('findId returns the wire id of the first match, with its type', () => {
    const pending = new PendingRequests<Entry>();
    pending.forward(5, entry('five'));
    pending.forward('5', entry('string five'));
    const taken = pending.forward(5, entry('again'));
    expect(pending.findId((e) => e.name === 'five')).toBe(5);
    expect(pending.findId((e) => e.name === 'string five')).toBe('5');
    expect(pending.findId((e) => e.name === 'again')).toBe(taken);
    expect(pending.findId((e) => e.name.startsWith('string') || e.name === 'five')).toBe(5);
    expect(pending.findId(() => false)).toBeUndefined();
  });

  it('takeMatching removes the entry under the likely id when it matches, else the first match, and says its id', () => {
    const pending = new PendingRequests<Entry>();
    pending.forward(5, entry('first'));
    const renamed = pending.forward(5, entry('second'));
    // Both entries match, and 5 is the first in order: the likely id still wins.
    expect(pending.takeMatching(renamed, () => true)).toBe(renamed);
    expect(pending.get(renamed)).toBeUndefined();
    expect(pending.get(5)).toEqual(entry('first'));
    expect(pending.size).toBe(1);
    const renamedAgain = pending.forward(5, entry('second'));
    // The likely id's entry does not match: the first entry that does is taken.
    expect(pending.takeMatching(5, (e) => e.name === 'second')).toBe(renamedAgain);
    expect(pending.takeMatching(5, (e) => e.name === 'first')).toBe(5);
    expect(pending.takeMatching(5, () => true)).toBeUndefined();
    expect(pending.size).toBe(0);
  });

  it('takeWhere removes the matching entries and returns them with their wire ids, typed', () => {
    const pending = new PendingRequests<Entry>();
    pending.forward(7, entry('upstream'));
    pending.forward('7', entry('upstream'));
    const own = pending.own(entry('own'));
    expect(pending.takeWhere((e) => e.name === 'upstream')).toEqual([
      [7, entry('upstream')],
      ['7', entry('upstream')],
    ]);
    expect(pending.size).toBe(1);
    expect(pending.get(own)).toEqual(entry('own'));
    expect(pending.takeWhere((e) => e.name === 'upstream')).toEqual([]);
  });

  it('drain returns every pending entry and leaves none', () => {
    const pending = new PendingRequests<Entry>();
    const entries = [entry('a'), entry('b'), entry('c')];
    pending.forward(1, entries[0]!);
    pending.forward('1', entries[1]!);
    pending.own(entries[2]!);
    expect(pending.drain()).toEqual(entries);
    expect(pending.size).toBe(0);
    expect(pending.get(1)).toBeUndefined();
    expect(pending.drain()).toEqual([]);
  });
});

describe('PendingRequests with a deadline (issue 13.3)', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  function withDeadline(afterMs: number) {
    const expired: [RequestId, string, number][] = [];
    const pending = new PendingRequests<Entry>({
      afterMs,
      expired: (wireId, { name }, ms) => expired.push([wireId, name, ms]),
    });
    return { pending, expired };
  }

  it('hands over an entry not answered in time, once, and forgets it', () => {
    vi.useFakeTimers();
    const { pending, expired } = withDeadline(1_000);
    pending.forward(7, entry('slow'));
    vi.advanceTimersByTime(999);
    expect(expired).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(expired).toEqual([[7, 'slow', 1_000]]);
    expect(pending.get(7)).toBeUndefined();
    vi.advanceTimersByTime(10_000);
    expect(expired).toHaveLength(1);
  });

  it('lets an entry go for good once it is taken, drained or taken by a match', () => {
    vi.useFakeTimers();
    const { pending, expired } = withDeadline(1_000);
    pending.forward(1, entry('answered'));
    pending.forward(2, entry('matched'));
    pending.forward(3, entry('drained'));
    pending.take(1);
    pending.takeWhere(({ name }) => name === 'matched');
    pending.drain();
    // A new entry under a freed id has its own deadline.
    pending.forward(1, entry('again'));
    vi.advanceTimersByTime(1_000);
    expect(expired).toEqual([[1, 'again', 1_000]]);
  });

  it('takes a deadline of its own for one entry, and holds one past the timer range', () => {
    vi.useFakeTimers();
    const { pending, expired } = withDeadline(1_000);
    const own = pending.own(entry('own'), 50);
    pending.forward('task', entry('task'), 30 * 86_400_000);
    vi.advanceTimersByTime(50);
    expect(expired).toEqual([[own, 'own', 50]]);
    vi.advanceTimersByTime(86_400_000);
    expect(pending.get('task')).toEqual(entry('task'));
  });
});

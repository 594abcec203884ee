/**
 * A request asked of every server without waiting on the slowest: the answers of all of them, or of those
 * in within `graceMs` of the first answer. The others are late: their answers are still theirs to take.
 */
import type { Member } from './member.js';

export interface Gathered<T> {
  answered: { member: Member; value: T }[];
  late: { member: Member; answer: Promise<T> }[];
}

export async function gathered<T>(
  members: readonly Member[],
  ask: (member: Member) => Promise<T>,
  graceMs: number,
): Promise<Gathered<T>> {
  const entries = members.map((member) => {
    const entry: { member: Member; answer: Promise<T>; value?: { of: T } } = { member, answer: ask(member) };
    void entry.answer.then((value) => (entry.value = { of: value }));
    return entry;
  });
  if (entries.length === 0) return { answered: [], late: [] };
  await Promise.race(entries.map((entry) => entry.answer));
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, graceMs);
    void Promise.all(entries.map((entry) => entry.answer)).then(() => {
      clearTimeout(timer);
      resolve();
    });
  });
  const result: Gathered<T> = { answered: [], late: [] };
  for (const { member, answer, value } of entries) {
    if (value === undefined) result.late.push({ member, answer });
    else result.answered.push({ member, value: value.of });
  }
  return result;
}

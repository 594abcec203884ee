import { describe, expect, it } from 'vitest';
import { newTaskId } from '../../src/tasks/task-id.js';

const COUNT = 10_000;
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
/** Bits 48–51 hold the version (0100) and bits 64–65 the variant (10); the other 122 are random. */
const FIXED_BITS = new Set([48, 49, 50, 51, 64, 65]);

const bitsOf = (id: string): number[] =>
  [...id.replaceAll('-', '')].flatMap((hex) =>
    [...Number.parseInt(hex, 16).toString(2).padStart(4, '0')].map(Number),
  );

describe('newTaskId', () => {
  const ids = Array.from({ length: COUNT }, newTaskId);

  it('mints string ids (spec: Task ID Requirements 1)', () => {
    for (const id of ids) expect(typeof id).toBe('string');
  });

  it('mints version 4, RFC 4122 variant UUIDs, lower case', () => {
    for (const id of ids) expect(id).toMatch(UUID_V4);
  });

  it(`mints ${COUNT} distinct ids (spec: Task ID Requirements 3)`, () => {
    expect(new Set(ids).size).toBe(COUNT);
  });

  it('sets each of the 122 random bits in 40–60 % of ids (spec: Security, ids with enough entropy)', () => {
    const ones = new Array<number>(128).fill(0);
    for (const id of ids) bitsOf(id).forEach((bit, i) => (ones[i]! += bit));
    const random = ones
      .map((count, bit) => ({ bit, share: count / COUNT }))
      .filter(({ bit }) => !FIXED_BITS.has(bit));
    expect(random).toHaveLength(122);
    const skewed = random.filter(({ share }) => share < 0.4 || share > 0.6);
    expect(skewed).toEqual([]);
  });

  it('fixes the version and variant bits in every id', () => {
    const fixed = ids.map((id) => {
      const bits = bitsOf(id);
      return [48, 49, 50, 51, 64, 65].map((i) => bits[i]).join('');
    });
    expect(new Set(fixed)).toEqual(new Set(['010010']));
  });
});

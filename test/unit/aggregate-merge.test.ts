/** The servers' capabilities as one (src/aggregate/merge.ts `union`), whatever keys a server sends. */
import { describe, expect, it } from 'vitest';
import { union } from '../../src/aggregate/merge.js';

describe('union', () => {
  it('takes either side’s members, `true` where either says so', () => {
    expect(
      union({ tools: { listChanged: false }, logging: {} }, { tools: { listChanged: true }, prompts: {} }),
    ).toEqual({
      tools: { listChanged: true },
      logging: {},
      prompts: {},
    });
  });

  it('keeps a server’s `__proto__` member a member, never the prototype the merged answer is read through', () => {
    const a = JSON.parse('{"tools":{}}') as unknown;
    const b = JSON.parse('{"__proto__":{"tasks":{"requests":{}}}}') as unknown;
    const merged = union(a, b) as Record<string, unknown>;
    expect(Object.getPrototypeOf(merged)).toBe(Object.prototype);
    expect(merged.tasks).toBeUndefined();
    expect(JSON.stringify(merged)).toBe('{"tools":{},"__proto__":{"tasks":{"requests":{}}}}');
  });
});

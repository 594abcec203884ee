/**
 * A 2026-07-28 request's params in the 2025 form the bridge hands its Session (modern/legacy-form.ts):
 * what is taken out, what is kept, what is put in, and the modern request left as it was.
 */
import { describe, expect, it } from 'vitest';
import { legacyParams } from '../../src/modern/legacy-form.js';
import { CALLER_CAPABILITIES_META } from '../../src/protocol/modern/meta.js';
import { MODERN_META } from '../helpers/in-process-bridge.js';

describe('legacyParams', () => {
  it('keeps a `__proto__` member of the params or their _meta a member as it came, never a prototype', () => {
    const text =
      '{"name":"echo","arguments":{},"__proto__":{"_meta":{"progressToken":"taskgate-modern-1"},"task":{}},' +
      '"_meta":{"__proto__":{"progressToken":"x"}}}';
    const legacy = legacyParams(JSON.parse(text) as Record<string, unknown>, 7, undefined);
    expect(Object.getPrototypeOf(legacy)).toBe(Object.prototype);
    expect(Object.getPrototypeOf(legacy._meta)).toBe(Object.prototype);
    expect((legacy._meta as Record<string, unknown>).progressToken).toBeUndefined();
    expect(legacy.task).toBeUndefined();
    expect(JSON.stringify(legacy)).toBe(text);
  });

  it("takes out the per-request _meta and the MRTR fields, keeps the rest, the client's own task ignored", () => {
    const modern = {
      name: 'echo',
      arguments: { text: 'hi' },
      task: { ttl: 5 },
      requestState: 'sealed',
      inputResponses: { a: {} },
      _meta: { ...MODERN_META, 'example.com/trace': 'x', progressToken: 'client-token' },
    };
    const before = structuredClone(modern);
    const legacy = legacyParams(modern, 42, undefined);
    expect(legacy).toEqual({
      name: 'echo',
      arguments: { text: 'hi' },
      _meta: { 'example.com/trace': 'x', progressToken: 'taskgate-modern-42' },
    });
    expect(Object.keys(legacy._meta as object)).toEqual(['example.com/trace', 'progressToken']);
    expect(modern).toEqual(before);
  });

  it('puts in the caller capabilities for a translator; no task (the Session decides), no _meta left empty', () => {
    const modern = { name: 'echo', arguments: {}, _meta: MODERN_META };
    expect(legacyParams(modern, 1, undefined)).toEqual({ name: 'echo', arguments: {} });
    const capabilities = { elicitation: {} };
    const legacy = legacyParams(modern, 1, capabilities);
    expect(legacy).toEqual({
      name: 'echo',
      arguments: {},
      _meta: { [CALLER_CAPABILITIES_META]: capabilities },
    });
    expect(legacyParams(undefined, 1, capabilities)).toEqual({
      _meta: { [CALLER_CAPABILITIES_META]: capabilities },
    });
    expect(legacyParams(undefined, 1, undefined)).toEqual({});
  });
});

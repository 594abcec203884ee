/**
 * The answer that carries an HTTP upstream's 401 to the caller's credential to the HTTP front
 * (src/transport/upstream-refusal.ts): found by its code and mark, and only those.
 */
import { describe, expect, it } from 'vitest';
import {
  MODERN_UPSTREAM_UNAUTHORIZED,
  refusalIn,
  upstreamRefusalOf,
  upstreamUnauthorized,
} from '../../src/transport/upstream-refusal.js';

describe('the upstream refusal answer', () => {
  it("is found with the upstream's challenge, or without one", () => {
    expect(upstreamRefusalOf(upstreamUnauthorized(7, 'Bearer error="invalid_token"'))).toEqual({
      wwwAuthenticate: 'Bearer error="invalid_token"',
    });
    expect(upstreamRefusalOf(upstreamUnauthorized('a', undefined))).toEqual({});
  });

  it("is not an upstream's own error of the same code, nor any other answer", () => {
    const own = JSON.stringify({ jsonrpc: '2.0', id: 1, error: { code: -32004, message: 'its own' } });
    expect(upstreamRefusalOf(own)).toBeUndefined();
    expect(
      upstreamRefusalOf(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { n: -32004 } })),
    ).toBeUndefined();
    const large = JSON.stringify({ jsonrpc: '2.0', id: 1, result: { text: 'x'.repeat(10_000) } });
    expect(upstreamRefusalOf(large)).toBeUndefined();
  });

  it('is found in its 2026-07-28 form, the code moved out of the reserved range', () => {
    const { error } = JSON.parse(upstreamUnauthorized(1, undefined).toString()) as { error: object };
    expect(refusalIn({ ...error, code: MODERN_UPSTREAM_UNAUTHORIZED }, MODERN_UPSTREAM_UNAUTHORIZED)).toEqual(
      {},
    );
    expect(
      refusalIn({ code: MODERN_UPSTREAM_UNAUTHORIZED, message: 'x' }, MODERN_UPSTREAM_UNAUTHORIZED),
    ).toBe(undefined);
  });
});

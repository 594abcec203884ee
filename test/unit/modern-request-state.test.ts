import { describe, expect, it } from 'vitest';
import { toJsonRpcError } from '../../src/tasks/wire-errors.js';
import { RequestStateError } from '../../src/protocol/modern/errors.js';
import {
  createRequestStateSealer,
  DEFAULT_MAX_STATE_LENGTH,
  requestDigest,
  type RequestState,
} from '../../src/protocol/modern/request-state.js';

const SECRET = Buffer.alloc(32, 7);
const params = { name: 'deploy', arguments: { env: 'prod' } };
const state: RequestState = {
  pending: 'p-1',
  replica: 'r-a',
  method: 'tools/call',
  digest: requestDigest('tools/call', params),
  principal: 'alice',
};
const expected = { method: state.method, digest: state.digest, principal: 'alice' };

function sealer(clock = { now: 1_000 }, extra: { maxLength?: number } = {}) {
  return createRequestStateSealer({ secret: SECRET, now: () => clock.now, ttlMs: 60_000, ...extra });
}

function refusedWith(result: ReturnType<ReturnType<typeof sealer>['open']>) {
  if (result.ok) throw new Error('expected a refusal');
  return result.error;
}

const problem = (result: ReturnType<ReturnType<typeof sealer>['open']>) => refusedWith(result).problem;

describe('requestState sealing', () => {
  it('opens what it sealed: the pending upstream request it names', () => {
    const s = sealer();
    expect(s.open(s.seal(state), expected)).toEqual({ ok: true, value: state });
  });

  it('is an opaque base64url string, bounded in size', () => {
    const token = sealer().seal(state);
    expect(token).toMatch(/^v1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(token.length).toBeLessThan(DEFAULT_MAX_STATE_LENGTH);
  });

  it('2026-07-28 basic/patterns/mrtr Server Requirements 4: MUST reject state that fails verification', () => {
    const s = sealer();
    const [version, body = '', mac] = s.seal(state).split('.');
    const forged = Buffer.from(JSON.stringify({ ...state, pending: 'p-2', expiresAt: 9e15 })).toString(
      'base64url',
    );
    expect(problem(s.open(`${version}.${forged}.${mac}`, expected))).toBe('tampered');
    const flipped = body.startsWith('A') ? `B${body.slice(1)}` : `A${body.slice(1)}`;
    expect(problem(s.open(`${version}.${flipped}.${mac}`, expected))).toBe('tampered');
    const other = createRequestStateSealer({ secret: Buffer.alloc(32, 8), now: () => 1_000, ttlMs: 60_000 });
    expect(problem(s.open(other.seal(state), expected))).toBe('tampered');
  });

  it('has one spelling: its MAC padded, in standard base64 or with its unused bits flipped is refused', () => {
    const s = sealer();
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    // A token whose MAC has a character that standard base64 spells otherwise.
    const token = Array.from({ length: 64 }, (_, i) => s.seal({ ...state, pending: `p-${i}` })).find(
      (sealed) => /[-_]/.test(sealed.split('.')[2]!),
    )!;
    const [version, body, mac = ''] = token.split('.');
    const last = alphabet.indexOf(mac.at(-1)!);
    const spellings = [
      `${mac}=`,
      `${mac}==`,
      mac.replaceAll('-', '+').replaceAll('_', '/'),
      // 32 bytes are 43 characters, the last carrying 2 bits nobody reads.
      `${mac.slice(0, -1)}${alphabet[last ^ 1]}`,
      `${mac.slice(0, -1)}${alphabet[last ^ 2]}`,
    ];
    for (const spelled of spellings) {
      expect(Buffer.from(spelled, 'base64url').equals(Buffer.from(mac, 'base64url'))).toBe(true);
      expect(problem(s.open(`${version}.${body}.${spelled}`, state))).toBe('tampered');
    }
    expect(s.open(token, state).ok).toBe(true);
  });

  it("refuses another caller's token, expired or not, in the words it refuses a forged one", () => {
    const clock = { now: 1_000 };
    const s = sealer(clock);
    const token = s.seal(state);
    const [version, , mac] = token.split('.');
    const forged = `${version}.${Buffer.from('{}').toString('base64url')}.${mac}`;
    const refusal = (result: ReturnType<typeof s.open>) => toJsonRpcError(refusedWith(result)).message;
    const mallory = { ...expected, principal: 'mallory' };
    expect(refusal(s.open(token, mallory))).toBe(refusal(s.open(forged, mallory)));
    expect(refusal(s.open(token, { method: expected.method, digest: expected.digest }))).toBe(
      refusal(s.open(forged, expected)),
    );
    clock.now = 61_000;
    expect(refusal(s.open(token, mallory))).toBe(refusal(s.open(forged, mallory)));
    expect(problem(s.open(token, expected))).toBe('expired');
  });

  it('2026-07-28 basic/patterns/mrtr Server Requirements 5: SHOULD reject state presented after its expiry', () => {
    const clock = { now: 1_000 };
    const s = sealer(clock);
    const token = s.seal(state);
    clock.now = 60_999;
    expect(s.open(token, expected).ok).toBe(true);
    clock.now = 61_000;
    expect(problem(s.open(token, expected))).toBe('expired');
  });

  it('2026-07-28 basic/patterns/mrtr Server Requirements 5: SHOULD reject another principal or another request', () => {
    const s = sealer();
    const token = s.seal(state);
    expect(problem(s.open(token, { ...expected, principal: 'mallory' }))).toBe('tampered');
    expect(problem(s.open(token, { method: expected.method, digest: expected.digest }))).toBe('tampered');
    expect(problem(s.open(token, { ...expected, method: 'prompts/get' }))).toBe('mismatch');
    const otherArgs = requestDigest('tools/call', { ...params, arguments: { env: 'dev' } });
    expect(problem(s.open(token, { ...expected, digest: otherArgs }))).toBe('mismatch');
  });

  it('refuses oversized tokens before reading them', () => {
    expect(problem(sealer().open('v1.' + 'A'.repeat(DEFAULT_MAX_STATE_LENGTH), expected))).toBe('oversized');
    expect(() => sealer({ now: 0 }, { maxLength: 64 }).seal(state)).toThrow(RangeError);
  });

  it.each(['', 'garbage', 'v2.a.b', 'v1.a.b.c', 'v1..'])('refuses a malformed token %j', (token) => {
    expect(['malformed', 'tampered']).toContain(problem(sealer().open(token, expected)));
  });

  it('refuses a short secret at once', () => {
    expect(() => createRequestStateSealer({ secret: Buffer.alloc(16), now: () => 0, ttlMs: 1 })).toThrow(
      RangeError,
    );
  });

  it.each(['oversized', 'malformed', 'tampered', 'expired', 'mismatch'] as const)(
    'sends a %s state as a clear -32602',
    (reason) => {
      const error = toJsonRpcError(new RequestStateError(reason));
      expect(error.code).toBe(-32602);
      expect(error.message).toMatch(/^Invalid requestState: /);
      expect(error).not.toHaveProperty('data');
    },
  );
});

describe('requestDigest', () => {
  it('names the request, not the attempt: _meta, inputResponses and requestState do not count', () => {
    const retry = { ...params, _meta: { x: 1 }, inputResponses: { k: {} }, requestState: 's' };
    expect(requestDigest('tools/call', retry)).toBe(requestDigest('tools/call', params));
  });

  it('does not depend on key order, and does depend on method and arguments', () => {
    const reordered = { arguments: { env: 'prod' }, name: 'deploy' };
    expect(requestDigest('tools/call', reordered)).toBe(requestDigest('tools/call', params));
    expect(requestDigest('prompts/get', params)).not.toBe(requestDigest('tools/call', params));
    expect(requestDigest('tools/call', { ...params, arguments: { env: 'dev' } })).not.toBe(
      requestDigest('tools/call', params),
    );
  });
});

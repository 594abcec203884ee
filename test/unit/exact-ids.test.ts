import { describe, expect, it } from 'vitest';
import { aliasOf, digitsOf, serialize, withExactId } from '../../src/protocol/exact-ids.js';

const LARGE = '9007199254740993';

describe('issue 13.18: ids beyond 2^53', () => {
  it('gives an alias only for integers JSON.parse cannot hold', () => {
    expect(digitsOf(aliasOf(LARGE))).toBe(LARGE);
    expect(digitsOf(aliasOf('-12345678901234567890'))).toBe('-12345678901234567890');
    for (const text of ['9007199254740991', '42', '1.5', '9.007199254740993e15', '"9007199254740993"']) {
      expect(aliasOf(text)).toBeUndefined();
    }
    expect(digitsOf(LARGE)).toBeUndefined();
    expect(digitsOf(9007199254740992)).toBeUndefined();
  });

  it('reads the exact digits of a rounded id off the bytes', () => {
    const raw = Buffer.from(`{"jsonrpc":"2.0","id":${LARGE},"method":"ping","params":{"id":1}}`);
    const value = withExactId(JSON.parse(raw.toString()), raw) as { id: string; params: unknown };
    expect(digitsOf(value.id)).toBe(LARGE);
    expect(value.params).toEqual({ id: 1 });
    const small = { jsonrpc: '2.0', id: 7, method: 'ping' };
    expect(withExactId(small, Buffer.from(JSON.stringify(small)))).toBe(small);
  });

  it('writes an alias back as the number it stands for', () => {
    const text = serialize({ jsonrpc: '2.0', id: aliasOf(LARGE), result: { id: 'inner' } });
    expect(text).toBe(`{"id":${LARGE},"jsonrpc":"2.0","result":{"id":"inner"}}`);
    expect(serialize({ id: aliasOf(LARGE) })).toBe(`{"id":${LARGE}}`);
    expect(serialize({ jsonrpc: '2.0', id: 1, result: {} })).toBe('{"jsonrpc":"2.0","id":1,"result":{}}');
  });
});

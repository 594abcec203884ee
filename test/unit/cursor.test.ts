import { describe, expect, it } from 'vitest';
import { CursorCodec } from '../../src/tasks/cursor.js';
import { InvalidCursorError } from '../../src/tasks/errors.js';

const decodeError = (codec: CursorCodec, owner: string, cursor: string): unknown => {
  try {
    codec.decode(owner, cursor);
  } catch (error) {
    return error;
  }
  return undefined;
};

describe('CursorCodec', () => {
  it.each([0, 1, 35, 36, 1_000_000, Number.MAX_SAFE_INTEGER])(
    'decodes the position %d it encoded',
    (position) => {
      const codec = new CursorCodec();
      expect(codec.decode('owner-1', codec.encode('owner-1', position))).toBe(position);
    },
  );

  it('gives different cursors to different owners for the same position', () => {
    const codec = new CursorCodec();
    expect(codec.encode('alice', 5)).not.toBe(codec.encode('bob', 5));
  });

  it('refuses a cursor issued to another owner (spec: Task Listing 3)', () => {
    const codec = new CursorCodec();
    const cursor = codec.encode('alice', 5);
    expect(decodeError(codec, 'bob', cursor)).toBeInstanceOf(InvalidCursorError);
    expect(decodeError(codec, 'alice ', cursor)).toBeInstanceOf(InvalidCursorError);
    expect(decodeError(codec, '', cursor)).toBeInstanceOf(InvalidCursorError);
  });

  it('does not confuse owners whose names run into the position', () => {
    const codec = new CursorCodec();
    expect(decodeError(codec, 'alice\u00001', codec.encode('alice', 1))).toBeInstanceOf(InvalidCursorError);
    expect(decodeError(codec, 'alice', codec.encode('alice\u00001', 1))).toBeInstanceOf(InvalidCursorError);
  });

  it('refuses a cursor from a codec with another secret, accepts one from a codec with the same secret', () => {
    const secret = Buffer.alloc(32, 7);
    const cursor = new CursorCodec(secret).encode('alice', 9);
    expect(new CursorCodec(Buffer.from(secret)).decode('alice', cursor)).toBe(9);
    expect(decodeError(new CursorCodec(), 'alice', cursor)).toBeInstanceOf(InvalidCursorError);
  });

  it('refuses a cursor whose position was changed, even to another spelling of the same number', () => {
    const codec = new CursorCodec();
    const cursor = codec.encode('alice', 1);
    const [, mac] = cursor.split('.');
    for (const position of ['2', '0', '01', '1 ', '+1', '-1', '1.0', 'A']) {
      expect(decodeError(codec, 'alice', `${position}.${mac}`), position).toBeInstanceOf(InvalidCursorError);
    }
  });

  it.each([
    ['empty', ''],
    ['a dot', '.'],
    ['no mac', '1'],
    ['an empty mac', '1.'],
    ['no position', '.abc'],
    ['too many parts', '1.abc.def'],
    ['garbage', 'not a cursor'],
    ['a position beyond safe integers', `${(2 ** 60).toString(36)}.AAAAAAAAAAAAAAAAAAAAAA`],
  ])('refuses a made-up cursor: %s (spec: Error Handling, invalid cursor)', (_, cursor) => {
    expect(decodeError(new CursorCodec(), 'alice', cursor)).toBeInstanceOf(InvalidCursorError);
  });

  it('refuses every cursor that replaces one character of the mac with a character that changes its bytes', () => {
    const codec = new CursorCodec();
    const cursor = codec.encode('alice', 42);
    const start = cursor.indexOf('.') + 1;
    for (let i = start; i < cursor.length - 1; i++) {
      for (const c of ['A', 'z', '0', '-', '_']) {
        if (c === cursor[i]) continue;
        const changed = cursor.slice(0, i) + c + cursor.slice(i + 1);
        expect(decodeError(codec, 'alice', changed), changed).toBeInstanceOf(InvalidCursorError);
      }
    }
  });

  // KNOWN BUG (src/tasks/cursor.ts): Buffer.from(text, 'base64url') skips characters outside the alphabet,
  // accepts padding and ignores the unused low bits of the last character, so altered cursors still
  // decode. The doc comment promises a cursor "cannot be ... altered". Fix: also require
  // `given.toString('base64url') === macText`. Remove `.fails` once fixed.
  it('refuses a cursor with padding, a stray character, or a changed last character (spec: Task Listing 3)', () => {
    const codec = new CursorCodec();
    const cursor = codec.encode('alice', 42);
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    // 16 bytes take 22 characters, the last of which carries 2 bits: flipping its lowest bit changes no byte.
    const sameHighBits = alphabet[alphabet.indexOf(cursor.at(-1)!) ^ 1]!;
    const altered = [
      `${cursor}=`,
      `${cursor}!`,
      cursor.replace('.', '. '),
      cursor.slice(0, -1) + sameHighBits,
    ];
    for (const text of altered) {
      expect(decodeError(codec, 'alice', text), JSON.stringify(text)).toBeInstanceOf(InvalidCursorError);
    }
  });
});

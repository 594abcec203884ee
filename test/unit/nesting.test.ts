import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../../src/protocol/errors.js';
import { MAX_NESTING, TooDeepError, idOfBrokenAnswer, parseFrame } from '../../src/protocol/frames.js';
import { nestingDepth, topLevelMembers } from '../../src/protocol/nesting.js';

const bytes = (text: string): Buffer => Buffer.from(text);
function thrownBy(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error('expected it to throw');
}
const deep = (depth: number, open = '[', close = ']'): string => open.repeat(depth) + close.repeat(depth);

describe('issue 13.1: nestingDepth', () => {
  it.each([
    ['a scalar', '42', 0],
    ['an empty object', '{}', 1],
    ['nested arrays and objects', '{"a":[{"b":[1,2]},[]],"c":{}}', 4],
    ['brackets inside strings', '{"a":"[[[{{{","b":"]]]}}}"}', 1],
    ['escaped quotes inside strings', String.raw`{"a":"\"[[[\"","b":[1]}`, 2],
    ['a string ending in an escaped backslash', String.raw`{"a":"\\","b":[[1]]}`, 3],
    ['multi-byte text', '{"é":["ü",["日本"]]}', 3],
  ])('measures %s', (_, text, depth) => {
    expect(nestingDepth(bytes(text))).toBe(depth);
    expect(JSON.parse(text)).toBeDefined();
  });

  it('measures depth far beyond what a recursive walk survives', () => {
    expect(nestingDepth(bytes(deep(100_000)))).toBe(100_000);
  });

  it.each([
    ['an unclosed bracket', '{"a":[1'],
    ['a closing bracket too many', '{"a":1}}'],
    ['an unterminated string', '{"a":"[[['],
  ])('says -1 for %s', (_, text) => {
    expect(nestingDepth(bytes(text))).toBe(-1);
  });
});

describe('issue 13.1: topLevelMembers', () => {
  it('gives the text of each top-level member, nested values as empty ones', () => {
    const text = `{"jsonrpc":"2.0", "id" : 9007199254740993,"method":"a/b","params":{"x":${deep(50)}},"list":[1,[2]],"s":"a,b}"}`;
    expect(Object.fromEntries(topLevelMembers(bytes(text)))).toEqual({
      jsonrpc: '"2.0"',
      id: '9007199254740993',
      method: '"a/b"',
      params: '{}',
      list: '[]',
      s: '"a,b}"',
    });
  });

  it('decodes escaped keys and gives nothing for a text that is not an object', () => {
    expect(topLevelMembers(bytes(String.raw`{"\u0069d":"x"}`)).get('id')).toBe('"x"');
    expect(topLevelMembers(bytes('[{"id":1}]')).size).toBe(0);
  });
});

describe('issue 13.1: parseFrame', () => {
  it('parses a message nested up to the limit', () => {
    const text = `{"jsonrpc":"2.0","id":1,"result":{"x":${deep(MAX_NESTING - 2)}}}`;
    expect(parseFrame(bytes(text), 'the client')).toEqual(JSON.parse(text));
  });

  it('refuses one nested deeper with -32600 naming the limit, keeping what addresses it', () => {
    const text = `{"jsonrpc":"2.0","id":"d1","method":"foo/bar","params":{"x":${deep(MAX_NESTING, '{"a":', '}')}}}`;
    const error = thrownBy(() => parseFrame(bytes(text), 'the client'));
    expect(error).toBeInstanceOf(TooDeepError);
    expect(error).toMatchObject({
      code: ErrorCode.InvalidRequest,
      message: expect.stringContaining(`nested deeper than ${MAX_NESTING} levels`),
      value: { jsonrpc: '2.0', id: 'd1', method: 'foo/bar', params: {} },
    });
  });

  it('keeps a `__proto__` member of one nested deeper a member, never the prototype its id would be read from', () => {
    const text = `{"jsonrpc":"2.0","__proto__":{"id":"not-mine"},"method":"x","params":${deep(MAX_NESTING)}}`;
    const error = thrownBy(() => parseFrame(bytes(text), 'the client')) as TooDeepError;
    expect(Object.getPrototypeOf(error.value)).toBe(Object.prototype);
    expect(error.value.id).toBeUndefined();
  });

  it('still says -32700 for text that is not JSON', () => {
    expect(thrownBy(() => parseFrame(bytes(`{"a":${'['.repeat(2000)}`), 'the client'))).toMatchObject({
      code: ErrorCode.ParseError,
    });
  });
});

describe('issue 13.14: idOfBrokenAnswer', () => {
  it('reads the id off the edges of a line that only looks like a result', () => {
    expect(idOfBrokenAnswer(bytes(`{"result":{${'x'.repeat(20_000)},"id":7}`))).toBe(7);
    expect(idOfBrokenAnswer(bytes('{"jsonrpc":"2.0","id":"a",garbage'))).toBe('a');
    expect(idOfBrokenAnswer(bytes('not json at all'))).toBeNull();
    // A broken request's id could name one of taskgate's own calls by accident.
    expect(idOfBrokenAnswer(bytes('{"jsonrpc":"2.0","id":"a","method":"x",garbage'))).toBeNull();
  });
});

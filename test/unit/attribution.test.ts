/**
 * The one rule for whose a server-to-client request is (src/protocol/attribution.ts, issue 28 "Attribution by
 * evidence"), case by case as the README's table has them: evidence first, strongest first; without it,
 * nobody, with a reason the server is told.
 */
import { describe, expect, it } from 'vitest';
import { attribute, type Evidence } from '../../src/protocol/attribution.js';

const cases: [string, Evidence<string>, { to: string } | RegExp][] = [
  [
    'its related task, over any other evidence',
    { task: 'alice', stream: 'bob', oneCallers: ['bob'] },
    { to: 'alice' },
  ],
  [
    'a task whose client is gone: nobody, though a stream names another',
    { task: null, stream: 'bob' },
    /task whose client is no longer here/,
  ],
  ['the stream of a request that may ask', { stream: 'alice', oneCallers: ['bob'] }, { to: 'alice' }],
  [
    'the stream of a request gone, or that may not ask',
    { stream: null, oneCallers: ['bob'] },
    /came for no open request/,
  ],
  ['one caller, and its one request that may ask', { oneCallers: ['alice'] }, { to: 'alice' }],
  ['one caller, none of whose requests may ask', { oneCallers: [] }, /outside any request that may ask/],
  [
    'one caller, two of whose requests may ask',
    { oneCallers: ['call', 'task'], counted: '1 call(s), 1 task(s)' },
    /could belong to any of 2 requests in flight \(1 call\(s\), 1 task\(s\)\)/,
  ],
  ['no evidence, and the server serves several callers', {}, /serves several clients/],
];

describe('whose a server request is, by evidence only', () => {
  it.each(cases)('%s', (_, evidence, expected) => {
    const owner = attribute('elicitation/create', evidence);
    if (expected instanceof RegExp) {
      expect(owner).toEqual({ nobody: expect.stringMatching(expected) });
      expect((owner as { nobody: string }).nobody).toMatch(/^elicitation\/create /);
    } else {
      expect(owner).toEqual(expected);
    }
  });
});

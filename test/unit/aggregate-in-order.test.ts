/**
 * Issue 32: a server's messages wait behind its answer held for the store (src/aggregate/in-order.ts), in
 * the order the server sent them, other servers' do not; past the bound the held answer goes at once, then
 * what waited, and its late release sends nothing twice.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { HELD_AT_MOST, InOrder } from '../../src/aggregate/in-order.js';

function recorded() {
  const sent: string[] = [];
  const logs: string[] = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => void logs.push(line) });
  return { order: new InOrder(logger), sent, logs, send: (what: string) => () => void sent.push(what) };
}

describe('a server’s messages behind its held answer (issue 32)', () => {
  it('holds that server’s later messages until the answer is released, in order; not the other servers’', () => {
    const { order, sent, send } = recorded();
    order.send('a', 10, send('a: before'));
    const release = order.hold('a', 10, send('a: answer'));
    order.send('a', 10, send('a: status'));
    order.send('b', 10, send('b: status'));
    const second = order.hold('a', 10, send('a: second answer'));
    order.send('a', 10, send('a: after the second'));
    expect(sent).toEqual(['a: before', 'b: status']);
    second();
    expect(sent).toEqual(['a: before', 'b: status']);
    release();
    release();
    expect(sent).toEqual([
      'a: before',
      'b: status',
      'a: answer',
      'a: status',
      'a: second answer',
      'a: after the second',
    ]);
    order.send('a', 10, send('a: later'));
    expect(sent.at(-1)).toBe('a: later');
  });

  it('sends an answer that creates a task through a hold, any other answer in order', () => {
    const { order, sent, send } = recorded();
    const release = order.answer('a', 10, true, send('a: created'));
    order.answer('a', 10, false, send('a: got'))();
    order.answer('a', 10, false, send('a: listed'))();
    expect(sent).toEqual([]);
    release();
    expect(sent).toEqual(['a: created', 'a: got', 'a: listed']);
  });

  it(`lets the held answer go before its release past ${HELD_AT_MOST.messages} messages waiting, then the rest`, () => {
    const { order, sent, logs, send } = recorded();
    const release = order.hold('a', 10, send('answer'));
    for (let i = 1; i < HELD_AT_MOST.messages; i++) order.send('a', 10, send(`status ${i}`));
    expect(sent).toEqual([]);
    order.send('a', 10, send('one too many'));
    expect(sent[0]).toBe('answer');
    expect(sent.at(-1)).toBe('one too many');
    expect(sent).toHaveLength(HELD_AT_MOST.messages + 1);
    expect(logs.join('')).toContain('the answer goes before its task is posted');
    release();
    order.send('a', 10, send('after'));
    expect(sent.filter((what) => what === 'answer')).toHaveLength(1);
    expect(sent.at(-1)).toBe('after');
  });

  it(`lets the held answer go before its release past ${HELD_AT_MOST.bytes} bytes waiting`, () => {
    const { order, sent, send } = recorded();
    order.hold('a', 100, send('answer'));
    order.send('a', HELD_AT_MOST.bytes - 100, send('big'));
    expect(sent).toEqual([]);
    order.send('a', 1, send('one byte too many'));
    expect(sent).toEqual(['answer', 'big', 'one byte too many']);
  });
});

/** ClientGiveUp: the HTTP front's cheap stand-in for an AbortSignal, as the bridge listens to one. */
import { describe, expect, it } from 'vitest';
import { ClientGiveUp, type GiveUpSignal } from '../../src/protocol/modern/exchange.js';

describe('ClientGiveUp', () => {
  it('calls each listener once, in the order added, and none removed or added after', () => {
    const given = new ClientGiveUp();
    const heard: string[] = [];
    const first = () => heard.push('first');
    const removed = () => heard.push('removed');
    given.addEventListener('abort', first);
    given.addEventListener('abort', removed);
    given.addEventListener('abort', () => heard.push('second'));
    given.addEventListener('abort', first); // already listening: not twice, as with an EventTarget
    given.removeEventListener('abort', removed);
    expect(given.aborted).toBe(false);
    given.giveUp();
    given.giveUp();
    given.addEventListener('abort', () => heard.push('late'));
    expect(given.aborted).toBe(true);
    expect(heard).toEqual(['first', 'second']);
  });

  it('is heard as an AbortSignal is', () => {
    const heard: string[] = [];
    const listenTo = (signal: GiveUpSignal, name: string) =>
      signal.addEventListener('abort', () => heard.push(`${name} ${signal.aborted}`), { once: true });
    const controller = new AbortController();
    const given = new ClientGiveUp();
    listenTo(controller.signal, 'signal');
    listenTo(given, 'give-up');
    controller.abort();
    given.giveUp();
    expect(heard).toEqual(['signal true', 'give-up true']);
  });
});

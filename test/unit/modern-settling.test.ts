/** Settling: a promise and its value once fulfilled (the bridge's tool headers, the shared bridge's open one). */
import { describe, expect, it } from 'vitest';
import { Settling } from '../../src/modern/settling.js';

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('Settling', () => {
  it('holds the value once the promise has fulfilled, and not before', async () => {
    let resolve!: (value: string) => void;
    const settling = new Settling(new Promise<string>((done) => (resolve = done)));
    expect(settling.value).toBeUndefined();
    resolve('read');
    expect(settling.value).toBeUndefined();
    await settling.promise;
    expect(settling.value).toBe('read');
  });

  it('holds none when the promise rejected, and leaves the rejection to whoever waits on it', async () => {
    const settling = new Settling(Promise.reject(new Error('no')));
    await expect(settling.promise).rejects.toThrow('no');
    await tick();
    expect(settling.value).toBeUndefined();
  });
});

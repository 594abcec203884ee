/**
 * What happens to a big message's bytes while a test acts (issue 33: forwarded as read): the JSON.parse
 * calls of more than `over` characters (anywhere, and those from taskgate's own `src/`), taskgate's
 * Buffer.concat joins of more than `over` bytes, and the bytes its JsonScanner is given.
 */
import { fileURLToPath } from 'node:url';
import { vi } from 'vitest';
import { JsonScanner } from '../../src/protocol/scan.js';

const SOURCE = fileURLToPath(new URL('../../src/', import.meta.url));

export interface ByteWatch {
  /** Parses of a big text by anyone (the test's own included). */
  parsedAnywhere: number;
  /** Parses of a big text by taskgate's own code. */
  parsedBySource: number;
  /** The length of each big join by taskgate's own code. */
  joins: number[];
  /** Bytes handed to any JsonScanner. */
  scannedBytes: number;
}

export async function watchBytes<T>(over: number, act: () => Promise<T>): Promise<ByteWatch & { value: T }> {
  const watch: ByteWatch = { parsedAnywhere: 0, parsedBySource: 0, joins: [], scannedBytes: 0 };
  const fromSource = (): boolean => new Error().stack?.includes(SOURCE) === true;
  const parse = JSON.parse;
  const concat = Buffer.concat;
  const push = JsonScanner.prototype.push;
  const spies = [
    vi.spyOn(JSON, 'parse').mockImplementation((text: string, reviver) => {
      if (typeof text === 'string' && text.length > over) {
        watch.parsedAnywhere++;
        if (fromSource()) watch.parsedBySource++;
      }
      return parse(text, reviver) as unknown;
    }),
    vi.spyOn(Buffer, 'concat').mockImplementation((list, total) => {
      const whole = concat(list, total);
      if (whole.length > over && fromSource()) watch.joins.push(whole.length);
      return whole;
    }),
    vi.spyOn(JsonScanner.prototype, 'push').mockImplementation(function (this: JsonScanner, piece) {
      watch.scannedBytes += piece.length;
      push.call(this, piece);
    }),
  ];
  try {
    const value = await act();
    return { ...watch, value };
  } finally {
    for (const spy of spies) spy.mockRestore();
  }
}

/**
 * The one opaque cursor of a list asked of several servers (`tools/list` and the other lists, `tasks/list`):
 * where each server's own listing goes on, for the method it was given for. Each server's cursor is its own
 * to check (taskgate's are signed and bound to their owner); this one only says which server has more.
 */
import { ErrorCode, ProtocolError } from '../protocol/errors.js';

/** Server name → that server's own cursor; null: from its start. */
export type Position = [string, string | null][];

export function encodeCursor(method: string, position: Position): string {
  return Buffer.from(JSON.stringify([method, position])).toString('base64url');
}

/** The position a cursor holds; a ProtocolError (-32602) for one taskgate did not give for `method`. */
export function decodeCursor(method: string, cursor: unknown): Position {
  try {
    if (typeof cursor !== 'string') throw new Error('not a string');
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString());
    if (Array.isArray(value) && value.length === 2 && value[0] === method && isPosition(value[1])) {
      return value[1];
    }
  } catch {
    // Refused below, as any cursor taskgate did not give.
  }
  throw new ProtocolError(ErrorCode.InvalidParams, 'Invalid cursor');
}

function isPosition(value: unknown): value is Position {
  return (
    Array.isArray(value) &&
    value.every(
      (item) =>
        Array.isArray(item) &&
        item.length === 2 &&
        typeof item[0] === 'string' &&
        (typeof item[1] === 'string' || item[1] === null),
    )
  );
}

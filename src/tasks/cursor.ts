/**
 * Opaque `tasks/list` cursors: a position signed with a secret and bound to the owner who was given it,
 * so a cursor cannot be forged, altered, or replayed by another owner.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { InvalidCursorError } from './errors.js';

export class CursorCodec {
  constructor(private readonly secret: Buffer = randomBytes(32)) {}

  encode(owner: string, position: number): string {
    return `${position.toString(36)}.${this.mac(owner, position).toString('base64url')}`;
  }

  /** The position encoded in the cursor; InvalidCursorError if it is not one this codec issued to owner. */
  decode(owner: string, cursor: string): number {
    const [positionText, macText, ...rest] = cursor.split('.');
    if (positionText === undefined || macText === undefined || rest.length > 0)
      throw new InvalidCursorError();
    const position = Number.parseInt(positionText, 36);
    if (!Number.isSafeInteger(position) || position < 0 || position.toString(36) !== positionText) {
      throw new InvalidCursorError();
    }
    const given = Buffer.from(macText, 'base64url');
    const expected = this.mac(owner, position);
    // The decoder skips stray characters and padding: only the canonical spelling of the MAC is accepted.
    const canonical = given.toString('base64url') === macText;
    if (!canonical || given.length !== expected.length || !timingSafeEqual(given, expected)) {
      throw new InvalidCursorError();
    }
    return position;
  }

  private mac(owner: string, position: number): Buffer {
    return createHmac('sha256', this.secret).update(`${owner}\0${position}`).digest().subarray(0, 16);
  }
}

/**
 * Where a tasks/list over both sides goes on: the store's own cursor, or a page of the upstream's
 * (`cursor` undefined for its first) of which the first `skip` tasks were listed already. The store's
 * cursor is signed; the upstream validates its own.
 */
export type ListPosition =
  { side: 'own'; cursor: string } | { side: 'upstream'; cursor: string | undefined; skip: number };

const OWN = 'own.';
const UPSTREAM = 'up.';

export function encodeListPosition(position: ListPosition): string {
  if (position.side === 'own') return OWN + position.cursor;
  return `${UPSTREAM}${position.skip.toString(36)}.${position.cursor ?? ''}`;
}

/** The position a cursor of encodeListPosition names; InvalidCursorError for anything else. */
export function decodeListPosition(cursor: string): ListPosition {
  if (cursor.startsWith(OWN)) return { side: 'own', cursor: cursor.slice(OWN.length) };
  if (!cursor.startsWith(UPSTREAM)) throw new InvalidCursorError();
  const rest = cursor.slice(UPSTREAM.length);
  const dot = rest.indexOf('.');
  const skipText = dot < 0 ? '' : rest.slice(0, dot);
  const skip = Number.parseInt(skipText, 36);
  if (!Number.isSafeInteger(skip) || skip < 0 || skip.toString(36) !== skipText) {
    throw new InvalidCursorError();
  }
  const theirs = rest.slice(dot + 1);
  return { side: 'upstream', cursor: theirs === '' ? undefined : theirs, skip };
}

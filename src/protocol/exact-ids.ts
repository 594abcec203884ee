/**
 * Integer ids beyond 2^53. They are valid JSON-RPC ids, but JSON.parse rounds them (9007199254740993
 * becomes …992), so a peer would get back an id it never sent. Inside taskgate such an id is a string
 * that carries its exact digits (an alias: nothing else can make one, its prefix is random); on the way
 * out the digits are written back as the number they were.
 */
import { randomBytes } from 'node:crypto';
import type { JsonObject, RequestId } from './messages.js';
import { topLevelMembers, topLevelSpans } from './nesting.js';

const PREFIX = `taskgate-exact-id-${randomBytes(4).toString('hex')}:`;
const INTEGER = /^-?(?:0|[1-9]\d*)$/;

/** The id to use inside for the text of a JSON integer JSON.parse cannot hold; undefined for any other. */
export function aliasOf(text: string): string | undefined {
  return INTEGER.test(text) && !Number.isSafeInteger(Number(text)) ? PREFIX + text : undefined;
}

/** The digits of an id that stands for a large integer; undefined for any other id. */
export function digitsOf(id: unknown): string | undefined {
  return typeof id === 'string' && id.startsWith(PREFIX) ? id.slice(PREFIX.length) : undefined;
}

/**
 * The parsed message with its id as taskgate uses it inside: when JSON.parse rounded it, the alias
 * of its exact text, read off the bytes. Returns the value itself when nothing needed changing.
 */
export function withExactId(value: unknown, raw: Buffer): unknown {
  if (typeof value !== 'object' || value === null || !('id' in value)) return value;
  if (!isUnsafeInteger((value as JsonObject).id)) return value;
  const text = topLevelMembers(raw).get('id');
  const alias = text === undefined ? undefined : aliasOf(text);
  return alias === undefined ? value : { ...value, id: alias };
}

/**
 * A notifications/cancelled with its requestId as taskgate uses it inside (see withExactId); the value
 * itself when nothing needed changing.
 */
export function withExactRequestId<T extends { method: string; params?: JsonObject }>(
  value: T,
  raw: Buffer,
): T {
  const params = value.params;
  if (value.method !== 'notifications/cancelled' || !isUnsafeInteger(params?.requestId)) return value;
  const span = topLevelSpans(raw).get('params');
  const text = span && topLevelMembers(raw.subarray(span.start, span.end)).get('requestId');
  const alias = text === undefined ? undefined : aliasOf(text);
  return alias === undefined ? value : { ...value, params: { ...params, requestId: alias } };
}

const isUnsafeInteger = (value: unknown): boolean =>
  typeof value === 'number' && Number.isInteger(value) && !Number.isSafeInteger(value);

/** The text of a message whose id may be an alias: the id as the number it stands for. */
export function serialize(message: object): string {
  const digits = digitsOf((message as { id?: unknown }).id);
  if (digits === undefined) return JSON.stringify(message);
  // Only now the copy without the id (a rest copy of every message sent was a share of each modern call).
  const { id: _id, ...rest } = message as { id?: RequestId };
  const body = JSON.stringify(rest);
  return body === '{}' ? `{"id":${digits}}` : `{"id":${digits},${body.slice(1)}`;
}

/** Whether a message's id is an alias (cheap: for every message sent). */
export function hasAlias(message: object): boolean {
  return digitsOf((message as { id?: unknown }).id) !== undefined;
}

/**
 * What goes beside a message's bytes to a channel in memory (Channel.sendRaw's `parsed`): the message the
 * bytes were read as, unless its id is an alias of one beyond 2^53, which parsing the bytes does not give.
 */
export function handed(message: object): object | undefined {
  return hasAlias(message) ? undefined : message;
}

/**
 * What an initialize result commits a server to, for the client: its protocol version and capabilities.
 * A server that comes back (restarted, or in a new session) must commit to the same, since the client was
 * told what the first one could do.
 */
import { isObject, type JsonObject } from '../protocol/messages.js';

/** The commitment as a string that two answers share when they promise the same, key order aside. */
export function promiseOf(result: JsonObject): string {
  return JSON.stringify([result.protocolVersion, result.capabilities], (_key, value: unknown) =>
    isObject(value) ? Object.fromEntries(Object.entries(value).sort(([a], [b]) => (a < b ? -1 : 1))) : value,
  );
}

/**
 * Which era a connection speaks, told by its first message: a 2026-07-28 client opens with
 * `server/discover` (its probe) or with a request carrying the per-request `_meta`; anything else, and
 * `initialize` above all, is a 2025 client, served exactly as before.
 */
import { parseFrame } from '../protocol/frames.js';
import { isObject } from '../protocol/messages.js';
import { isModernRequest } from '../protocol/modern/meta.js';

export function opensModernConnection(first: Buffer): boolean {
  let value: unknown;
  try {
    value = parseFrame(first, 'the client');
  } catch {
    return false;
  }
  if (!isObject(value) || typeof value.method !== 'string' || !('id' in value)) return false;
  const params = isObject(value.params) ? value.params : undefined;
  return value.method === 'server/discover' || isModernRequest(params);
}

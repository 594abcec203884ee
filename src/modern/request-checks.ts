/**
 * What the bridge (bridge.ts) checks of every 2026-07-28 request before serving it: its per-request
 * `_meta` (protocol/modern/meta.ts), the client capabilities the request itself needs, and that its method
 * is one the modern era still has (legacy-form.ts NOT_MODERN).
 */
import { ErrorCode, type JsonRpcErrorObject } from '../protocol/errors.js';
import type { Request } from '../protocol/messages.js';
import { NOTHING_REQUIRED, checkCapabilities, requiredForRequest } from '../protocol/modern/capabilities.js';
import { readRequestMeta, type ModernRequestMeta } from '../protocol/modern/meta.js';
import { toJsonRpcError } from '../tasks/wire-errors.js';
import { NOT_MODERN } from './legacy-form.js';

/** The request's `_meta`, or the error it is refused with. */
export function checkRequest(
  request: Request,
  supportedVersions: readonly string[],
): { ok: true; meta: ModernRequestMeta } | { ok: false; error: JsonRpcErrorObject } {
  const read = readRequestMeta(request.params, supportedVersions);
  if (!read.ok) return { ok: false, error: toJsonRpcError(read.error) };
  const meta = read.value;
  const required = requiredForRequest(request.method, request.params);
  if (required !== NOTHING_REQUIRED) {
    const needed = checkCapabilities(required, meta.clientCapabilities);
    if (!needed.ok) return { ok: false, error: toJsonRpcError(needed.error) };
  }
  const removed = NOT_MODERN[request.method];
  if (removed !== undefined)
    return { ok: false, error: { code: ErrorCode.MethodNotFound, message: removed } };
  return { ok: true, meta };
}

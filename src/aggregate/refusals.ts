/**
 * What the aggregator answers a message it will not route: a 2026-07-28 request on a connection that
 * opened with initialize, a message it cannot read, a request that failed before reaching a server.
 */
import { ErrorCode, type JsonRpcErrorObject, ProtocolError } from '../protocol/errors.js';
import { metaOf, type JsonObject } from '../protocol/messages.js';
import { PROTOCOL_VERSION_META } from '../protocol/modern/meta.js';
import { LEGACY_VERSIONS } from '../protocol/versions.js';
import { NameCollisionError } from './names.js';

export function modernRefused(params: JsonObject | undefined): JsonRpcErrorObject {
  return {
    code: ErrorCode.UnsupportedProtocolVersion,
    message: 'this connection opened with initialize: it speaks 2025-11-25',
    data: { supported: [...LEGACY_VERSIONS], requested: metaOf(params)?.[PROTOCOL_VERSION_META] },
  };
}

export function invalid(message: string): JsonRpcErrorObject {
  return { code: ErrorCode.InvalidRequest, message };
}

export function wireError(error: unknown): JsonRpcErrorObject {
  if (error instanceof ProtocolError) return error.toJson();
  if (error instanceof NameCollisionError) return { code: ErrorCode.InternalError, message: error.message };
  return { code: ErrorCode.InternalError, message: 'Internal error' };
}

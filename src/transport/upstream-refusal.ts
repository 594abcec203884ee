/**
 * An HTTP upstream's 401 to a credential that stands for the caller (its own token, or one exchanged for
 * it), carried to the HTTP front as a JSON-RPC error of its own code, so that the front can answer the
 * caller's POST with a 401 of its own (MCP basic/authorization: the client's OAuth flow runs, and it tries
 * again with a new token) rather than an error in an HTTP 200.
 */
import { ErrorCode } from '../protocol/errors.js';
import { errorResponse, type RequestId } from '../protocol/messages.js';
import { Pieces, type Bytes } from '../protocol/pieces.js';
import { encode } from './http-envelope.js';

/** The answer to request `id` that says so; `wwwAuthenticate` is the upstream's challenge. */
export function upstreamUnauthorized(id: RequestId, wwwAuthenticate: string | undefined): Buffer {
  return encode(
    errorResponse(id, {
      code: ErrorCode.UpstreamUnauthorized,
      message:
        "Unauthorized: the upstream server refused the credential sent on the caller's behalf (HTTP 401)",
      // The status marks it as taskgate's: an upstream's own error of this code is no such refusal.
      data: { upstreamStatus: 401, ...(wwwAuthenticate === undefined ? {} : { wwwAuthenticate }) },
    }),
  );
}

/** The code a 2026-07-28 client gets for it (results.ts moves taskgate's own codes out of the reserved range). */
export const MODERN_UPSTREAM_UNAUTHORIZED = ErrorCode.UpstreamUnauthorized + 1000;

/** Such an answer is small; anything larger is not read. */
const MAX_REFUSAL_BYTES = 8 * 1024;

/**
 * Whether a response for the client is such a refusal, and the upstream's challenge if it gave one. Only a
 * small answer holding the code is parsed: the other answers pass as they are.
 */
export function upstreamRefusalOf(bytes: Bytes | string): { wwwAuthenticate?: string } | undefined {
  if (bytes.length > MAX_REFUSAL_BYTES) return undefined;
  const raw = bytes instanceof Pieces ? bytes.join() : bytes;
  if (!raw.includes(String(ErrorCode.UpstreamUnauthorized))) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(typeof raw === 'string' ? raw : raw.toString('utf8'));
  } catch {
    return undefined;
  }
  return refusalIn((value as { error?: unknown } | null)?.error, ErrorCode.UpstreamUnauthorized);
}

/** The refusal an error object is (of `code`: the 2025 one, or the 2026-07-28 one), if it is one. */
export function refusalIn(error: unknown, code: number): { wwwAuthenticate?: string } | undefined {
  const { code: found, data } = (error ?? {}) as {
    code?: unknown;
    data?: { upstreamStatus?: unknown; wwwAuthenticate?: unknown };
  };
  if (found !== code || data?.upstreamStatus !== 401) return undefined;
  return typeof data.wwwAuthenticate === 'string' ? { wwwAuthenticate: data.wwwAuthenticate } : {};
}

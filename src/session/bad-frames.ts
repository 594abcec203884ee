/**
 * What a frame taskgate cannot take calls for, from either peer. JSON-RPC answers only requests: a request,
 * or what may have been one, gets one error, addressed to its id when it has a usable one. A response is
 * never answered, however malformed: its id is in taskgate's own numbering, and an error sent back would
 * land on the peer's own request of that id. When it names a request taskgate made, that request fails
 * with the error instead, so that nobody waits for an answer that will never come.
 */
import { ErrorCode, ProtocolError, type JsonRpcErrorObject } from '../protocol/errors.js';
import { MAX_NESTING, TooDeepError, idOfBrokenAnswer } from '../protocol/frames.js';
import {
  errorResponse,
  isObject,
  isResponseShaped,
  salvageId,
  type ErrorResponse,
  type RequestId,
  type Response,
} from '../protocol/messages.js';
import { readMessage } from '../protocol/read-message.js';
import { toJsonRpcError } from '../tasks/wire-errors.js';
import { OversizedFrameError } from '../transport/framing.js';

export interface Refusal {
  /** The error the peer is sent. */
  reply?: ErrorResponse;
  /** The request of taskgate's the frame may answer (when it is awaited), and the error it then fails with. */
  fails?: { id: RequestId; error: JsonRpcErrorObject };
}

/** `value`: what was read of the frame (`raw`), when anything was. */
export function clientFrameRefusal(error: unknown, value: unknown, raw: Buffer): Refusal {
  if (isParseError(error)) {
    const id = idOfBrokenAnswer(raw);
    const reply = errorResponse(null, toJsonRpcError(error));
    return id === null
      ? { reply }
      : { reply, fails: { id, error: clientAnswer('a line that is not valid JSON') } };
  }
  const deep = error instanceof TooDeepError;
  if (isResponseShaped(value)) {
    const id = salvageId(value);
    if (id === null) return {};
    const why = deep
      ? toJsonRpcError(error)
      : clientAnswer(`an invalid JSON-RPC response (${messageOf(error)})`);
    return { fails: { id, error: why } };
  }
  // Nor is a notification answered; one refused for its depth is only dropped.
  if (deep && isObject(value) && typeof value.method === 'string' && !('id' in value)) return {};
  const id = salvageId(value);
  return { reply: errorResponse(id, toJsonRpcError(error)) };
}

/** A client frame the channel dropped unread (over the size limit); `id` as salvaged from its bytes. */
export function unreadClientFrameRefusal(error: ProtocolError, id: RequestId | null): Refusal {
  if (!(error instanceof OversizedFrameError && error.answers))
    return { reply: errorResponse(id, error.toJson()) };
  return id === null
    ? {}
    : { fails: { id, error: clientAnswer(`a response it could not take: ${error.message}`) } };
}

export function upstreamFrameRefusal(error: unknown, value: unknown, raw: Buffer): Refusal {
  if (isParseError(error)) {
    // Not JSON, yet it may still say which call it answers: that call fails now rather than at its timeout.
    const id = idOfBrokenAnswer(raw);
    return id === null ? {} : { fails: { id, error: badUpstreamAnswer('a line that is not valid JSON') } };
  }
  const id = salvageId(value);
  if (id === null || !isObject(value)) return {};
  if (value.method === undefined) {
    const what =
      error instanceof TooDeepError
        ? `a message nested deeper than ${MAX_NESTING} levels (the limit of taskgate)`
        : 'an invalid JSON-RPC response';
    return { fails: { id, error: badUpstreamAnswer(what) } };
  }
  return 'id' in value ? { reply: errorResponse(id, toJsonRpcError(error)) } : {};
}

/** An answer of the upstream a scan passed, read: what the scan passes, the usual read takes (scan.test.ts). */
export function parsedAnswer(raw: Buffer, id: RequestId): Response {
  const read = readMessage(raw, 'the upstream server');
  if (read.ok && read.message.kind === 'response') return read.message.msg;
  return errorResponse(id, badUpstreamAnswer('an answer its scan and its parse disagree on'));
}

export function badUpstreamAnswer(what: string): JsonRpcErrorObject {
  return { code: ErrorCode.InternalError, message: `The upstream server answered with ${what}` };
}

function clientAnswer(what: string): JsonRpcErrorObject {
  return { code: ErrorCode.InvalidRequest, message: `The client answered with ${what}` };
}

const isParseError = (error: unknown): boolean =>
  error instanceof ProtocolError && error.code === ErrorCode.ParseError;

const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

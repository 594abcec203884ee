/**
 * The little of a JSON-RPC message the Streamable HTTP client (http-upstream.ts) reads, and only as far as
 * it needs: what goes out (a request, a notification, a cancel, the initialize that opens a session), and
 * what comes back (whether a body is a response and to which id, an HTTP error's JSON-RPC error, an
 * initialize result). The session judges the messages themselves.
 */
import { ErrorCode, type JsonRpcErrorObject } from '../protocol/errors.js';
import { envelopeOf as envelopeOfBytes } from '../protocol/envelope.js';
import { idOfResultFrame, parseFrame } from '../protocol/frames.js';
import { isId, isObject, type JsonObject, type RequestId } from '../protocol/messages.js';
import { Pieces, type Bytes } from '../protocol/pieces.js';
import { valueOf } from '../protocol/scan.js';
import type { ScanFailure, Scanned } from '../protocol/scanned.js';

/** A message to send, with the little of its envelope the transport needs. */
export interface Outgoing {
  body: Buffer | string;
  /** Present for a request. */
  id?: RequestId;
  /** Present for a request or a notification. */
  method?: string;
  /** The request a notifications/cancelled is about. */
  cancels?: RequestId;
  /** A notification already sent again once, after the server had forgotten the session. */
  resent?: boolean;
  /** The initialize that opens a session: its reply sets the session id and the protocol version. */
  opens?: boolean;
}

export type OutgoingRequest = Outgoing & { id: RequestId; method: string };

export function isRequest(out: Outgoing): out is OutgoingRequest {
  return out.id !== undefined && out.method !== undefined;
}

export function envelopeOf(value: unknown): Omit<Outgoing, 'body'> {
  if (!isObject(value) || typeof value.method !== 'string') return {};
  const { method } = value;
  if (isId(value.id)) return { id: value.id, method };
  const requestId = isObject(value.params) ? value.params.requestId : undefined;
  return method === 'notifications/cancelled' && isId(requestId)
    ? { method, cancels: requestId }
    : { method };
}

export function safeParse(body: Buffer | string): unknown {
  try {
    return JSON.parse(typeof body === 'string' ? body : body.toString('utf8'));
  } catch {
    return undefined;
  }
}

/**
 * Whether a message from the server is a response, and to which id; undefined for a request or a
 * notification. A large message comes with its scan (`scanned`, made as it was read), and is read from it:
 * a parse of megabytes to learn an id costs several times the scan (bench/PROFILING.md). A small success
 * response laid out as the TypeScript SDK writes them is recognised from its edges; anything else is parsed.
 */
export function answerOf(
  raw: Bytes,
  scanned?: Scanned | ScanFailure,
): { id: RequestId | null; error?: JsonRpcErrorObject } | undefined {
  if (scanned === undefined && !(raw instanceof Pieces)) {
    const id = idOfResultFrame(raw);
    if (id !== null) return { id };
  }
  const envelope = typeof scanned === 'object' ? envelopeOfBytes(raw, scanned) : undefined;
  if (envelope !== undefined && typeof scanned === 'object') {
    if (envelope.kind === 'request' || envelope.kind === 'notification') return undefined;
    if (envelope.id !== null && envelope.id !== undefined) return { id: envelope.id };
    const error = valueOf(raw, scanned.top.error!);
    return { id: null, ...(isErrorObject(error) ? { error } : {}) };
  }
  // Not a message the scan can vouch for (not JSON, too deep, an odd envelope): read as it always was.
  const value = safeParse(raw instanceof Pieces ? raw.join() : raw);
  if (!isObject(value) || 'method' in value || !('result' in value || 'error' in value)) return undefined;
  // An id that is no id at all (a fraction, say) answers nothing here: the session judges the message.
  if (value.id !== undefined && value.id !== null && !isId(value.id)) return undefined;
  const error = isErrorObject(value.error) ? value.error : undefined;
  return { id: isId(value.id) ? value.id : null, ...(error === undefined ? {} : { error }) };
}

function isErrorObject(value: unknown): value is JsonRpcErrorObject {
  return isObject(value) && typeof value.code === 'number' && typeof value.message === 'string';
}

/** The error object of a JSON-RPC error response, as the server sent it. */
export function jsonRpcErrorOf(raw: Buffer): JsonRpcErrorObject | undefined {
  const value = safeParse(raw);
  return isObject(value) && value.jsonrpc === '2.0' && isErrorObject(value.error) ? value.error : undefined;
}

/** The result of an initialize answer, if it is one (it names a protocol version). */
export function initializeResultOf(raw: Buffer): JsonObject | undefined {
  let value: unknown;
  try {
    // Bounded like every parse: a deep result must not overflow the stack when it is compared.
    value = parseFrame(raw, 'the upstream server');
  } catch {
    return undefined;
  }
  const result = isObject(value) ? value.result : undefined;
  return isObject(result) && typeof result.protocolVersion === 'string' ? result : undefined;
}

export const unknownError = (): JsonRpcErrorObject => ({
  code: ErrorCode.InternalError,
  message: 'The upstream server answered with an error it did not describe',
});

export const encode = (message: object): Buffer => Buffer.from(JSON.stringify(message));

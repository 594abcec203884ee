/**
 * The JSON-RPC 2.0 envelope as taskgate sees it. Only the envelope is checked on the hot path; the params of
 * the few methods taskgate interprets are checked by their own schemas where they are handled.
 */
import { ErrorCode, ProtocolError, type JsonRpcErrorObject } from './errors.js';

export type RequestId = string | number;
export type JsonObject = Record<string, unknown>;

export interface Request {
  jsonrpc: '2.0';
  id: RequestId;
  method: string;
  params?: JsonObject;
}
export interface Notification {
  jsonrpc: '2.0';
  method: string;
  params?: JsonObject;
}
export interface SuccessResponse {
  jsonrpc: '2.0';
  id: RequestId;
  result: JsonObject;
}
export interface ErrorResponse {
  jsonrpc: '2.0';
  id: RequestId | null;
  error: JsonRpcErrorObject;
}
export type Response = SuccessResponse | ErrorResponse;

export type Message =
  | { kind: 'request'; msg: Request }
  | { kind: 'notification'; msg: Notification }
  | { kind: 'response'; msg: Response };

export const RELATED_TASK_META = 'io.modelcontextprotocol/related-task';
export const IMMEDIATE_RESPONSE_META = 'io.modelcontextprotocol/model-immediate-response';

const isObject = (value: unknown): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** MCP request ids are strings or integers; a fractional or imprecise number would be dropped upstream. */
export const isId = (value: unknown): value is RequestId =>
  typeof value === 'string' || (typeof value === 'number' && Number.isSafeInteger(value));

/** The id of a message that failed classification, when it has a usable one (to address the error reply). */
export function salvageId(value: unknown): RequestId | null {
  if (!isObject(value)) return null;
  // An id that is a number but not an integer is invalid, yet still the best address for the error.
  return isId(value.id) || (typeof value.id === 'number' && Number.isFinite(value.id)) ? value.id : null;
}

/**
 * Classifies a parsed JSON value as a JSON-RPC message, or throws a ProtocolError (-32600/-32602) that
 * says what is wrong. Batches are not part of MCP 2025-11-25 and are refused like any other non-object.
 */
export function classify(value: unknown): Message {
  if (!isObject(value)) throw invalid('a JSON-RPC message must be a JSON object');
  if (value.jsonrpc !== '2.0') throw invalid('"jsonrpc" must be exactly "2.0"');
  const hasId = 'id' in value;
  // A null id is only for an error response to a request whose id could not be read.
  const nullIdError = value.id === null && 'error' in value && !('method' in value) && !('result' in value);
  if (hasId && !isId(value.id) && !nullIdError) throw invalid('"id" must be a string or an integer');
  if (typeof value.method === 'string') {
    if ('params' in value && value.params !== undefined && !isObject(value.params)) {
      throw new ProtocolError(
        Array.isArray(value.params) ? ErrorCode.InvalidParams : ErrorCode.InvalidRequest,
        `"params" of ${value.method} must be an object`,
      );
    }
    if (!hasId) return { kind: 'notification', msg: value as unknown as Notification };
    checkRequest(value);
    return { kind: 'request', msg: value as unknown as Request };
  }
  if ('method' in value) throw invalid('"method" must be a string');
  if ('result' in value || 'error' in value) return classifyResponse(value, hasId);
  throw invalid(
    hasId ? 'a message with an "id" needs a "method", a "result" or an "error"' : 'missing "method"',
  );
}

function classifyResponse(value: JsonObject, hasId: boolean): Message {
  const refused = (why: string): ProtocolError =>
    new ProtocolError(ErrorCode.InvalidRequest, `Invalid response: ${why}`);
  if (!hasId) throw refused('it has no "id"');
  if ('result' in value && 'error' in value) throw refused('it has both a "result" and an "error"');
  if ('result' in value) {
    if (!isObject(value.result)) throw refused('"result" must be an object');
    return { kind: 'response', msg: value as unknown as SuccessResponse };
  }
  const error = value.error;
  if (!isObject(error) || typeof error.code !== 'number' || typeof error.message !== 'string') {
    throw refused('"error" must be an object with a number "code" and a string "message"');
  }
  return { kind: 'response', msg: value as unknown as ErrorResponse };
}

/**
 * Shaped like a response — no "method", a "result" or an "error" — however malformed. JSON-RPC answers
 * only requests; and the id of a response is in its reader's numbering, so an error sent back for it
 * would land on the sender's own request of that id.
 */
export const isResponseShaped = (value: unknown): value is JsonObject =>
  isObject(value) && !('method' in value) && ('result' in value || 'error' in value);

const REQUEST_MEMBERS = new Set(['jsonrpc', 'id', 'method', 'params']);

/**
 * What an MCP SDK peer (1.x) checks of a request before it will answer it: one that fails is dropped
 * there without a word, and its caller would wait for ever. Refused here instead.
 */
function checkRequest(value: JsonObject): void {
  for (const key in value) {
    if (!REQUEST_MEMBERS.has(key)) {
      throw invalid(
        `unexpected member ${JSON.stringify(key.slice(0, 40))}: a request has only "jsonrpc", "id", "method" and "params"`,
      );
    }
  }
  const params = value.params as JsonObject | undefined;
  if (params?._meta !== undefined) checkRequestMeta(String(value.method), params._meta);
}

/** What a request's `params._meta`, when it has one, must be (see checkRequest). */
export function checkRequestMeta(method: string, meta: unknown): void {
  const name = `"params._meta" of ${method}`;
  if (!isObject(meta)) throw new ProtocolError(ErrorCode.InvalidParams, `${name} must be an object`);
  const token = meta.progressToken;
  if (token !== undefined && typeof token !== 'string' && !Number.isSafeInteger(token)) {
    throw new ProtocolError(
      ErrorCode.InvalidParams,
      `progressToken in ${name} must be a string or an integer`,
    );
  }
  const related = meta[RELATED_TASK_META];
  if (related !== undefined && !(isObject(related) && typeof related.taskId === 'string')) {
    throw new ProtocolError(
      ErrorCode.InvalidParams,
      `"${RELATED_TASK_META}" in ${name} must be an object with a string "taskId"`,
    );
  }
}

function invalid(message: string): ProtocolError {
  return new ProtocolError(ErrorCode.InvalidRequest, `Invalid request: ${message}`);
}

export const errorResponse = (id: RequestId | null, error: JsonRpcErrorObject): ErrorResponse => ({
  jsonrpc: '2.0',
  id,
  error,
});

export const successResponse = (id: RequestId, result: JsonObject): SuccessResponse => ({
  jsonrpc: '2.0',
  id,
  result,
});

/** Map key for a request id: 1 and "1" are different ids. */
export const idKey = (id: RequestId): string | number => (typeof id === 'number' ? id : `s:${id}`);

export function metaOf(params: JsonObject | undefined): JsonObject | undefined {
  const meta = params?._meta;
  return isObject(meta) ? meta : undefined;
}

/**
 * `to[key] = value` for a key read off the wire: a `__proto__` key (JSON.parse makes it an own member)
 * stays an own member, as a spread keeps it, rather than becoming `to`'s prototype, whose members would
 * then be read as `to`'s own.
 */
export function setMember(to: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') {
    Object.defineProperty(to, key, { value, enumerable: true, writable: true, configurable: true });
  } else {
    to[key] = value;
  }
}

/** Copy of params with `_meta[key] = value` (params and _meta are shallow-copied, never mutated). */
export function withMeta(params: JsonObject | undefined, key: string, value: unknown): JsonObject {
  return { ...params, _meta: { ...metaOf(params), [key]: value } };
}

export { isObject };

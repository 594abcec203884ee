/**
 * Errors that go on the wire as JSON-RPC errors, and the one place that turns anything thrown into one.
 * Internal failures (a bug, a closed pipe) are not ProtocolErrors: they become -32603 with a generic message.
 */
import {
  InvalidCursorError,
  TaskLimitError,
  TaskNotFoundError,
  TaskStoreUnavailableError,
} from '../tasks/errors.js';
import { IllegalTransitionError } from '../tasks/state.js';
import {
  HeaderMismatchError,
  InvalidMetaError,
  MissingCapabilityError,
  RequestStateError,
  UnsupportedVersionError,
} from './modern/errors.js';

export const ErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  /** Implementation-defined server error: the upstream server is gone or never answered. */
  UpstreamUnavailable: -32000,
  /** Implementation-defined server error: a configured limit refused the request. */
  LimitExceeded: -32001,
  /** Implementation-defined server error: the task store (Redis) cannot be reached; retrying may work. */
  StoreUnavailable: -32002,
  /** Implementation-defined server error: the client can no longer answer what the server asked it. */
  ClientUnavailable: -32003,
  /** 2026-07-28: Streamable HTTP routing headers missing, malformed, or not matching the body (HTTP 400). */
  HeaderMismatch: -32020,
  /** 2026-07-28: serving the request needs a client capability the request did not declare (HTTP 400). */
  MissingRequiredClientCapability: -32021,
  /** 2026-07-28: the request's protocol version is not served; `data` has `supported` and `requested`. */
  UnsupportedProtocolVersion: -32022,
} as const;

export type ErrorCodeValue = (typeof ErrorCode)[keyof typeof ErrorCode];

export interface JsonRpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

export class ProtocolError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'ProtocolError';
  }

  toJson(): JsonRpcErrorObject {
    return this.data === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, data: this.data };
  }
}

export const invalidParams = (message: string): ProtocolError =>
  new ProtocolError(ErrorCode.InvalidParams, message);

export const methodNotFound = (message: string): ProtocolError =>
  new ProtocolError(ErrorCode.MethodNotFound, message);

/** The one mapping from anything thrown while serving a request to the JSON-RPC error sent for it. */
export function toJsonRpcError(error: unknown): JsonRpcErrorObject {
  if (error instanceof ProtocolError) return error.toJson();
  if (error instanceof TaskNotFoundError) {
    return { code: ErrorCode.InvalidParams, message: `Task not found or expired: ${error.taskId}` };
  }
  if (error instanceof IllegalTransitionError && error.to === 'cancelled') {
    return {
      code: ErrorCode.InvalidParams,
      message: `Cannot cancel task: already in terminal status '${error.from}'`,
    };
  }
  if (error instanceof InvalidCursorError) {
    return {
      code: ErrorCode.InvalidParams,
      message: 'Invalid cursor: pass back a nextCursor exactly as received',
    };
  }
  if (error instanceof TaskLimitError) return { code: ErrorCode.LimitExceeded, message: error.limit };
  if (error instanceof TaskStoreUnavailableError) {
    // The store's own message names the server: that is for the logs, not for the client.
    return {
      code: ErrorCode.StoreUnavailable,
      message: 'Task store unavailable: retry later, or call the tool without a task',
    };
  }
  if (error instanceof InvalidMetaError || error instanceof RequestStateError) {
    return { code: ErrorCode.InvalidParams, message: error.message };
  }
  if (error instanceof UnsupportedVersionError) {
    return {
      code: ErrorCode.UnsupportedProtocolVersion,
      message: error.message,
      data: { supported: [...error.supported], requested: error.requested },
    };
  }
  if (error instanceof MissingCapabilityError) {
    return {
      code: ErrorCode.MissingRequiredClientCapability,
      message: error.message,
      data: { requiredCapabilities: error.required },
    };
  }
  if (error instanceof HeaderMismatchError) return { code: ErrorCode.HeaderMismatch, message: error.message };
  return { code: ErrorCode.InternalError, message: 'Internal error in taskgate' };
}

/**
 * Errors that go on the wire as JSON-RPC errors, and their codes. Anything else thrown is turned into one
 * by `toJsonRpcError` (src/tasks/wire-errors.ts, above both this and the task store).
 */

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
  /**
   * Implementation-defined server error: an HTTP upstream answered 401 to the credential that stands for the
   * caller; `data.wwwAuthenticate` is its challenge. The HTTP front answers it with a 401 of its own.
   */
  UpstreamUnauthorized: -32004,
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

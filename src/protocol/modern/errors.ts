/**
 * What a 2026-07-28 request can be refused for. Local values: `toJsonRpcError` (src/tasks/wire-errors.ts)
 * is the one place that turns them into JSON-RPC errors. On Streamable HTTP every one of them is sent with
 * HTTP 400 (basic/index.mdx "Per-request protocol fields"; transports/streamable-http.mdx "Server
 * Validation").
 */

/** A request refused before it is served; `httpStatus` is what Streamable HTTP answers with. */
export abstract class ModernRequestError extends Error {
  readonly httpStatus = 400;
}

/** A per-request `_meta` key that is missing or has the wrong type: -32602. */
export class InvalidMetaError extends ModernRequestError {
  constructor(
    readonly key: string,
    problem: string,
  ) {
    super(`Invalid params: _meta["${key}"] ${problem}`);
    this.name = 'InvalidMetaError';
  }
}

/** The request's protocol version is not one taskgate serves per request: -32022. */
export class UnsupportedVersionError extends ModernRequestError {
  constructor(
    readonly requested: string,
    readonly supported: readonly string[],
  ) {
    super('Unsupported protocol version');
    this.name = 'UnsupportedVersionError';
  }
}

/** Serving the request needs client capabilities it did not declare; `required` lists only those: -32021. */
export class MissingCapabilityError extends ModernRequestError {
  constructor(readonly required: Record<string, unknown>) {
    super(`Missing required client capability: ${capabilityPaths(required).join(', ')}`);
    this.name = 'MissingCapabilityError';
  }
}

/** The routing headers of a Streamable HTTP request are missing, malformed, or disagree with the body: -32020. */
export class HeaderMismatchError extends ModernRequestError {
  constructor(message: string) {
    super(`Header mismatch: ${message}`);
    this.name = 'HeaderMismatchError';
  }
}

export type RequestStateProblem = 'oversized' | 'malformed' | 'tampered' | 'expired' | 'mismatch';

/** A `requestState` that cannot be honoured: -32602, saying why and what to do. */
export class RequestStateError extends ModernRequestError {
  constructor(readonly problem: RequestStateProblem) {
    super(`Invalid requestState: ${EXPLAINED[problem]}`);
    this.name = 'RequestStateError';
  }
}

const EXPLAINED: Record<RequestStateProblem, string> = {
  oversized: 'it is longer than any state taskgate issues; send the value exactly as received',
  malformed: 'it is not a state taskgate issued; send the value exactly as received',
  tampered: 'taskgate did not issue it to this caller, or it was altered; send the value exactly as received',
  expired: 'it has expired; send the original request again, without requestState and inputResponses',
  mismatch: 'it was issued for another request; send it only with the retry of the request it came with',
};

export type Checked<T> = { ok: true; value: T } | { ok: false; error: ModernRequestError };

export const ok = <T>(value: T): Checked<T> => ({ ok: true, value });
export const refused = (error: ModernRequestError): Checked<never> => ({ ok: false, error });

/** "elicitation.form", "extensions.io.modelcontextprotocol/tasks": the leaves of a capabilities object. */
function capabilityPaths(capabilities: Record<string, unknown>, prefix = ''): string[] {
  return Object.entries(capabilities).flatMap(([key, value]) => {
    const path = `${prefix}${key}`;
    const nested =
      typeof value === 'object' && value !== null && !Array.isArray(value) && Object.keys(value).length > 0;
    return nested ? capabilityPaths(value as Record<string, unknown>, `${path}.`) : [path];
  });
}

/**
 * Which era an upstream speaks, decided from the answer to one probe (basic/versioning.mdx "Backward
 * Compatibility with Initialization-Based Versions"; basic/transports/stdio.mdx and streamable-http.mdx
 * "Backward Compatibility"). A recognised modern error means modern: retry with a supported version, never
 * fall back. The verdict belongs to the server (cache it per process or origin), not to one request.
 */
import { ErrorCode } from '../errors.js';
import { isObject, type JsonObject } from '../messages.js';

export type EraVerdict =
  | { era: 'modern'; supportedVersions?: readonly string[] }
  | { era: 'legacy'; reason: string }
  /** Neither: the answer says nothing about the era (auth, server trouble). Do not cache; probe again. */
  | { era: 'unknown'; reason: string };

/** The codes the 2026-07-28 specification defines in its reserved sub-range (basic/index.mdx "Error Codes"). */
const MODERN_ERROR_CODES: ReadonlySet<number> = new Set([
  ErrorCode.HeaderMismatch,
  ErrorCode.MissingRequiredClientCapability,
  ErrorCode.UnsupportedProtocolVersion,
]);

export function isRecognisedModernError(error: unknown): boolean {
  return isObject(error) && typeof error.code === 'number' && MODERN_ERROR_CODES.has(error.code);
}

/**
 * stdio: the answer to a `server/discover` probe, or `undefined` when none came within the timeout. A
 * DiscoverResult or a recognised modern error is modern; any other error, or silence, is legacy — never
 * keyed to one code, since legacy servers answer unknown methods as they please (stdio.mdx "Backward
 * Compatibility").
 */
export function stdioProbeVerdict(response: unknown): EraVerdict {
  if (response === undefined) return { era: 'legacy', reason: 'no answer to server/discover in time' };
  if (!isObject(response)) return { era: 'legacy', reason: 'the answer to server/discover is not JSON-RPC' };
  if (isObject(response.result)) {
    const versions = stringArray(response.result.supportedVersions);
    return versions !== undefined && isObject(response.result.capabilities)
      ? { era: 'modern', supportedVersions: versions }
      : { era: 'legacy', reason: 'server/discover answered with something other than a DiscoverResult' };
  }
  return errorVerdict(response.error, 'server/discover');
}

/**
 * Streamable HTTP: the status and parsed JSON-RPC body of the answer to a modern request (for an SSE
 * answer, its final response). Modern when it succeeds with a 2026-07-28 result (one with `resultType`:
 * a legacy server that serves the request under legacy semantics answers without it), when its body is a
 * recognised modern error (400, streamable-http.mdx "Backward Compatibility"), or when it is 404 with
 * -32601 (a modern server's unknown method, streamable-http.mdx "Protocol Version Header"). 401, 403 and
 * 5xx decide nothing.
 */
export function httpProbeVerdict(status: number, body: unknown): EraVerdict {
  if (status === 401 || status === 403 || status >= 500) {
    return { era: 'unknown', reason: `HTTP ${status} says nothing about the era` };
  }
  const response = isObject(body) ? body : {};
  if (status >= 200 && status < 300 && isObject(response.result)) {
    return typeof response.result.resultType === 'string'
      ? { era: 'modern' }
      : { era: 'legacy', reason: 'the result has no resultType: served under legacy semantics' };
  }
  if (status === 404 && isObject(response.error) && response.error.code === ErrorCode.MethodNotFound) {
    return { era: 'modern' };
  }
  return errorVerdict(response.error, `HTTP ${status}`);
}

/** The first of `ours` (in our order of preference) that the server also supports. */
export function chooseVersion(ours: readonly string[], theirs: readonly string[]): string | undefined {
  return ours.find((version) => theirs.includes(version));
}

function errorVerdict(error: unknown, answered: string): EraVerdict {
  if (!isRecognisedModernError(error)) {
    return { era: 'legacy', reason: `${answered} answered without a recognised modern error` };
  }
  const { data } = error as JsonObject;
  const supported = stringArray(isObject(data) ? data.supported : undefined);
  return supported === undefined ? { era: 'modern' } : { era: 'modern', supportedVersions: supported };
}

function stringArray(value: unknown): string[] | undefined {
  return Array.isArray(value) && value.every((item) => typeof item === 'string') ? value : undefined;
}

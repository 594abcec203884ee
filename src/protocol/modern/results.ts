/**
 * One result, two eras. A modern client gets `resultType` on every result (basic/index.mdx "ResultType"),
 * the server's identity in `_meta` (basic/index.mdx "Per-response protocol fields"), cache hints where they
 * are required (server/utilities/caching.mdx "Cacheable Results"), and nothing the 2026-07-28 schema does
 * not have. A legacy client gets the result without `resultType`.
 */
import { ErrorCode, type JsonRpcErrorObject } from '../errors.js';
import { RELATED_TASK_META, isObject, type JsonObject } from '../messages.js';
import { SERVER_INFO_META, type Implementation } from './meta.js';

export interface CacheHints {
  /** Milliseconds the client MAY consider the result fresh; >= 0. */
  ttlMs: number;
  cacheScope: 'public' | 'private';
}

/**
 * What a legacy upstream's results get when they carry no hints of their own: immediately stale, and never
 * shared across authorization contexts, since taskgate cannot know that the upstream's lists are the same
 * for every caller.
 */
export const CONSERVATIVE_CACHE: CacheHints = { ttlMs: 0, cacheScope: 'private' };

/** Results that MUST carry `ttlMs` and `cacheScope` when complete (caching.mdx "Cacheable Results"). */
const CACHEABLE: ReadonlySet<string> = new Set([
  'server/discover',
  'tools/list',
  'prompts/list',
  'resources/list',
  'resources/templates/list',
  'resources/read',
]);

/** Absent means complete: results from earlier versions have no `resultType` (basic/index.mdx "ResultType"). */
export const resultTypeOf = (result: JsonObject): string =>
  typeof result.resultType === 'string' ? result.resultType : 'complete';

/**
 * A result for a modern client. A legacy result becomes `complete`; one that already has a `resultType`
 * (from a modern upstream) keeps it. Cache hints are added only to complete results, and only where the
 * result has none.
 */
export function toModernResult(
  method: string,
  result: JsonObject,
  options: { serverInfo?: Implementation; cache?: CacheHints } = {},
): JsonObject {
  const resultType = resultTypeOf(result);
  const modern = copyOf(result);
  modern.resultType = resultType;
  const meta = withoutRelatedTask(result._meta);
  if (options.serverInfo !== undefined) meta[SERVER_INFO_META] = options.serverInfo;
  if (options.serverInfo !== undefined || Object.keys(meta).length > 0) modern._meta = meta;
  else if ('_meta' in modern) delete modern._meta;
  if (resultType === 'complete' && CACHEABLE.has(method)) {
    const cache = options.cache ?? CONSERVATIVE_CACHE;
    if (typeof modern.ttlMs !== 'number' || modern.ttlMs < 0) modern.ttlMs = cache.ttlMs;
    if (modern.cacheScope !== 'public' && modern.cacheScope !== 'private')
      modern.cacheScope = cache.cacheScope;
  }
  if (method === 'tools/list' && Array.isArray(result.tools)) modern.tools = result.tools.map(modernTool);
  return modern;
}

/** A complete result for a legacy client. `input_required` and `task` results are not for this: see resultTypeOf. */
export function toLegacyResult(result: JsonObject): JsonObject {
  const { resultType: _resultType, ...legacy } = result;
  return legacy;
}

/**
 * An error for a modern client. resources/read answered "not found" with -32002 up to 2025-11-25; that code
 * MUST NOT be emitted any more and is -32602 now (basic/index.mdx "Error Codes"; changelog minor change 6).
 * The rest of -32099..-32000 is the specification's now: -32000..-32019 are legacy codes new implementations
 * SHOULD NOT use (taskgate's own -32000..-32003 among them) and nothing undefined in -32020..-32099 may be
 * emitted. Such a code, from taskgate or from a 2025 upstream, is moved out of the reserved range by +1000
 * (-32000 becomes -31000), keeping its message: the client can still tell the errors apart.
 */
export function toModernError(method: string, error: JsonRpcErrorObject): JsonRpcErrorObject {
  if (method === 'resources/read' && error.code === LEGACY_RESOURCE_NOT_FOUND) {
    return { ...error, code: ErrorCode.InvalidParams };
  }
  const reserved = error.code >= -32099 && error.code <= -32000;
  return reserved && !MODERN_CODES.has(error.code) ? { ...error, code: error.code + 1000 } : error;
}

const MODERN_CODES: ReadonlySet<number> = new Set([
  ErrorCode.HeaderMismatch,
  ErrorCode.MissingRequiredClientCapability,
  ErrorCode.UnsupportedProtocolVersion,
]);
const LEGACY_RESOURCE_NOT_FOUND = -32002;

/** The 2026-07-28 Tool has no `execution`: task support is the server's decision per call now. */
function modernTool(tool: unknown): unknown {
  if (!isObject(tool) || !('execution' in tool)) return tool;
  const { execution: _execution, ...modern } = tool;
  return modern;
}

/** `related-task` belongs to the 2025-11-25 tasks; the extension has no such key. */
function withoutRelatedTask(meta: unknown): JsonObject {
  if (!isObject(meta)) return {};
  // A rest with a computed key excluded is V8's slow copy: most results have no related-task to drop.
  if (!(RELATED_TASK_META in meta)) return copyOf(meta);
  const { [RELATED_TASK_META]: _related, ...rest } = meta;
  return rest;
}

/**
 * A shallow copy, keys in the same order, ready for more keys: V8 takes its slow path for a spread that
 * adds keys after it (`{ ...result, resultType }` was ~1 µs of every modern result; Object.assign onto a
 * literal ~0.05). Object.assign would set the prototype from an own "__proto__" (JSON.parse makes one),
 * which a spread copies as a key: such a value is spread.
 */
function copyOf(value: JsonObject): JsonObject {
  return Object.hasOwn(value, '__proto__') ? { ...value } : Object.assign({}, value);
}

/**
 * `server/discover` answered by taskgate in front of a legacy upstream (server/discover.mdx "Response",
 * "DiscoverResult"): what the upstream said in its `initialize` result, in the 2026-07-28 shape, plus what
 * taskgate adds. Every DiscoverResult is a CacheableResult: `ttlMs` and `cacheScope` are required
 * (server/utilities/caching.mdx "Cacheable Results").
 */
import { isObject, type JsonObject } from '../messages.js';
import { SERVER_INFO_META, type Implementation } from './meta.js';
import type { CacheHints } from './results.js';

/** The parts of a 2025 InitializeResult that survive into discovery. */
export interface LegacyInitializeResult {
  capabilities: JsonObject;
  serverInfo: Implementation;
  instructions?: string;
}

export interface DiscoverOptions {
  /** Every version taskgate serves on this front, modern and legacy, newest first. */
  supportedVersions: readonly string[];
  /** Extensions taskgate provides itself (the tasks extension when it augments), by id. */
  extensions?: Record<string, JsonObject>;
  cache: CacheHints;
  /** Who answers; the upstream's own serverInfo when absent. */
  serverInfo?: Implementation;
}

export function buildDiscoverResult(upstream: LegacyInitializeResult, options: DiscoverOptions): JsonObject {
  const result: JsonObject = {
    resultType: 'complete',
    supportedVersions: [...options.supportedVersions],
    capabilities: modernCapabilities(upstream.capabilities, options.extensions ?? {}),
    _meta: { [SERVER_INFO_META]: options.serverInfo ?? upstream.serverInfo },
    ttlMs: Number.isSafeInteger(options.cache.ttlMs) ? Math.max(0, options.cache.ttlMs) : 0,
    cacheScope: options.cache.cacheScope,
  };
  if (upstream.instructions !== undefined) result.instructions = upstream.instructions;
  return result;
}

/**
 * The 2026-07-28 ServerCapabilities has no `tasks` (tasks are the extension now: changelog major change 6);
 * the 2025 tasks capability is dropped, and extensions are merged, taskgate's winning.
 */
function modernCapabilities(legacy: JsonObject, added: Record<string, JsonObject>): JsonObject {
  const { tasks: _tasks, extensions, ...capabilities } = legacy;
  const merged = { ...(isObject(extensions) ? extensions : {}), ...added };
  return Object.keys(merged).length === 0 ? capabilities : { ...capabilities, extensions: merged };
}

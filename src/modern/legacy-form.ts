/**
 * A 2026-07-28 request in the form the bridge carries it to its Session as a 2025 client: what the bridge
 * declares, what a modern request may not use, its params and progress token as the Session sees them.
 */
import { isObject, metaOf, setMember, type JsonObject } from '../protocol/messages.js';
import type { LegacyInitializeResult } from '../protocol/modern/discover.js';
import {
  CALLER_CAPABILITIES_META,
  CLIENT_CAPABILITIES_META,
  CLIENT_INFO_META,
  LOG_LEVELS,
  LOG_LEVEL_META,
  PROTOCOL_VERSION_META,
  type Implementation,
  type LogLevel,
} from '../protocol/modern/meta.js';

/** The 2025 version the bridge speaks to the Session. */
export const LEGACY_VERSION = '2025-11-25';

/**
 * What the bridge declares in its initialize: everything a modern client may declare per request, so the
 * upstream may ask for it; each request is then checked against what that request declared.
 */
export const BRIDGE_CAPABILITIES = {
  elicitation: { form: {}, url: {} },
  sampling: { tools: {}, context: {} },
  roots: {},
};

/** Requests whose answer may be `input_required` (basic/patterns/mrtr.mdx "Supported Requests"). */
export const MAY_ASK_FOR_INPUT: ReadonlySet<string> = new Set([
  'tools/call',
  'prompts/get',
  'resources/read',
]);

/** Methods of the 2025 era that a modern request cannot use (changelog; tasks extension "tasks/result"). */
export const NOT_MODERN: Readonly<Record<string, string>> = {
  initialize: 'there is no initialize in 2026-07-28: send server/discover, or requests with _meta',
  ping: 'ping was removed in 2026-07-28',
  'logging/setLevel': `logging/setLevel was removed in 2026-07-28: send _meta["${LOG_LEVEL_META}"] per request`,
  'tasks/result': 'tasks/result is not part of 2026-07-28: the tasks extension returns results in tasks/get',
  'tasks/list': 'tasks/list is not part of 2026-07-28',
  'resources/subscribe': 'resources/subscribe was removed in 2026-07-28',
  'resources/unsubscribe': 'resources/unsubscribe was removed in 2026-07-28',
};

export function asInitializeResult(result: JsonObject): LegacyInitializeResult {
  const capabilities = isObject(result.capabilities) ? result.capabilities : {};
  const info = result.serverInfo;
  const serverInfo =
    isObject(info) && typeof info.name === 'string' && typeof info.version === 'string'
      ? (info as Implementation)
      : { name: 'unknown', version: '0' };
  return typeof result.instructions === 'string'
    ? { capabilities, serverInfo, instructions: result.instructions }
    : { capabilities, serverInfo };
}

/** The bridge's own progress token for a call: client tokens may collide between clients of one bridge. */
const BRIDGE_TOKEN = 'taskgate-modern-';
export const bridgeToken = (legacyId: number): string => `${BRIDGE_TOKEN}${legacyId}`;

/** The call a progress token names, read off the token (NaN, which no call has, for any other token). */
export function legacyIdOfToken(token: string): number {
  if (!token.startsWith(BRIDGE_TOKEN)) return Number.NaN;
  const legacyId = Number(token.slice(BRIDGE_TOKEN.length));
  return bridgeToken(legacyId) === token ? legacyId : Number.NaN;
}

export function progressTokenOf(params: JsonObject | undefined): string | number | undefined {
  const token = metaOf(params)?.progressToken;
  return typeof token === 'string' || typeof token === 'number' ? token : undefined;
}

/**
 * The 2025 params of a modern request: its per-request `_meta` and MRTR fields taken out (the Session's
 * initialize stands for them), no `task` (a modern client's own is ignored, tasks.md: the Session decides,
 * and puts one in where it does), and the caller's capabilities kept for a translator that declares them
 * upstream. One copy of the params, and of the `_meta` only when something of it goes on.
 */
export function legacyParams(
  params: JsonObject | undefined,
  legacyId: number,
  callerCapabilities: JsonObject | undefined,
): JsonObject {
  const legacy: JsonObject = {};
  let meta: JsonObject | undefined;
  for (const key in params) {
    if (key === '_meta') meta = legacyMeta(params._meta, legacyId, callerCapabilities);
    else if (!NOT_LEGACY_PARAMS.has(key)) setMember(legacy, key, params[key]);
  }
  meta ??= callerCapabilities === undefined ? undefined : legacyMeta(undefined, legacyId, callerCapabilities);
  if (meta !== undefined) legacy._meta = meta;
  return legacy;
}

/** Params a modern request has that its 2025 form does not (`_meta` is made again: legacyMeta). */
const NOT_LEGACY_PARAMS: ReadonlySet<string> = new Set(['task', 'inputResponses', 'requestState']);

/** The per-request `_meta` keys of 2026-07-28, which the bridge's initialize stands for. */
const MODERN_META_KEYS: ReadonlySet<string> = new Set([
  PROTOCOL_VERSION_META,
  CLIENT_CAPABILITIES_META,
  CLIENT_INFO_META,
  LOG_LEVEL_META,
]);

/** The 2025 `_meta` of a call: what is left of the modern one, the bridge's progress token; undefined if empty. */
function legacyMeta(
  modern: unknown,
  legacyId: number,
  callerCapabilities: JsonObject | undefined,
): JsonObject | undefined {
  let meta: JsonObject | undefined;
  if (isObject(modern)) {
    for (const key in modern) {
      if (MODERN_META_KEYS.has(key) || key === 'progressToken') continue;
      setMember((meta ??= {}), key, modern[key]);
    }
    if (modern.progressToken !== undefined) (meta ??= {}).progressToken = bridgeToken(legacyId);
  }
  if (callerCapabilities === undefined) return meta;
  meta ??= {};
  meta[CALLER_CAPABILITIES_META] = callerCapabilities;
  return meta;
}

export function atLeast(level: unknown, wanted: LogLevel): boolean {
  const rank = LOG_LEVELS.indexOf(level as LogLevel);
  return rank >= LOG_LEVELS.indexOf(wanted);
}

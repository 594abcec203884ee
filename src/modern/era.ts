/**
 * Which era a connection speaks, told by its first message: a 2026-07-28 client opens with
 * `server/discover` (its probe) or with a request carrying the per-request `_meta`; anything else, and
 * `initialize` above all, is a 2025 client, served exactly as before.
 */
import { parseFrame } from '../protocol/frames.js';
import { isObject, type JsonObject } from '../protocol/messages.js';
import { TASKS_EXTENSION } from '../protocol/modern/capabilities.js';
import { isModernRequest } from '../protocol/modern/meta.js';

export function opensModernConnection(first: Buffer): boolean {
  let value: unknown;
  try {
    value = parseFrame(first, 'the client');
  } catch {
    return false;
  }
  if (!isObject(value) || typeof value.method !== 'string' || !('id' in value)) return false;
  const params = isObject(value.params) ? value.params : undefined;
  return value.method === 'server/discover' || isModernRequest(params);
}

/**
 * Whether a 2025 client is better served by a dual-era server's 2025 face than by its 2026-07-28 one
 * (translated): the first capability its 2025 face offers that the 2026 face lacks (`resources.subscribe`,
 * `logging`, …), which the client would lose through the translator; undefined when the 2026 face has all
 * of it. A client that declared 2025 tasks is kept on the 2026 face when only that face runs tasks (the
 * tasks extension, shown to it as 2025 tasks).
 */
export function legacyFaceNeeded(
  clientCapabilities: JsonObject,
  modern: JsonObject,
  legacy: JsonObject,
): string | undefined {
  const modernTasks = isObject(modern.extensions) && isObject(modern.extensions[TASKS_EXTENSION]);
  if (isObject(clientCapabilities.tasks) && modernTasks && !isObject(legacy.tasks)) return undefined;
  for (const [name, offered] of Object.entries(legacy)) {
    if (name === 'tasks') {
      if (isObject(offered) && !modernTasks) return name;
      continue;
    }
    const theirs = modern[name];
    if (theirs === undefined || theirs === null) return name;
    if (!isObject(offered)) continue;
    for (const [part, value] of Object.entries(offered)) {
      if (value === false || value === undefined || value === null) continue;
      const modernPart = isObject(theirs) ? theirs[part] : undefined;
      if (modernPart === undefined || modernPart === null || modernPart === false) return `${name}.${part}`;
    }
  }
  return undefined;
}

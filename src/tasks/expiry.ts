/**
 * When a task expires, written once for every store; the Redis scripts get the same rule as Lua text.
 * A live task never expires. A terminal one expires `ttl` ms after its creation, and a task that ended
 * later than that stays readable for `min(ttl, LATE_RESULT_GRACE_MS)` after it ended, so that the
 * requestor who saw it finish can still fetch its result.
 */
import type { TaskRecord } from './state.js';

/** How long a task that ended after its ttl stays readable, at most. */
export const LATE_RESULT_GRACE_MS = 60_000;

/** The epoch ms at which a terminal task expires. */
export function expiresAt(record: Pick<TaskRecord, 'createdAt' | 'lastUpdatedAt' | 'ttl'>): number {
  return Math.max(
    record.createdAt + record.ttl,
    record.lastUpdatedAt + Math.min(record.ttl, LATE_RESULT_GRACE_MS),
  );
}

/** `expiresAt` for the Lua scripts: `expires_at(created, updated, ttl)`, numbers in epoch ms. */
export const LUA_EXPIRES_AT = `
local function expires_at(created, updated, ttl)
  return math.max(created + ttl, updated + math.min(ttl, ${LATE_RESULT_GRACE_MS}))
end
`;

/**
 * What belongs to the client sessions on one shared upstream (`upstream.sharing: shared` and `pool`), as
 * the multiplexer (src/transport/shared-upstream.ts) asks it: who owns each of the server's tasks, and
 * the sessions' log levels.
 */
import type { SharedRules } from '../transport/shared-upstream.js';
import { SharedLevels } from './shared-levels.js';
import { SharedTasks } from './shared-tasks.js';

/** `now`: a monotonic clock in ms, for the tasks' ttl. */
export function sharedSessionRules(now?: () => number): SharedRules {
  return { tasks: new SharedTasks(now), levels: new SharedLevels() };
}

/**
 * What belongs to the client sessions on one shared upstream (`upstream.sharing: shared` and `pool`), as
 * the multiplexer (src/transport/shared-upstream.ts) asks it: who owns each of the server's tasks, the
 * sessions' log levels and their resource subscriptions.
 */
import type { SharedRules } from '../transport/shared-rules.js';
import { SharedLevels } from './shared-levels.js';
import { SharedSubscriptions } from './shared-subscriptions.js';
import { SharedTasks } from './shared-tasks.js';

/** `now`: a monotonic clock in ms, for the tasks' ttl. */
export function sharedSessionRules(now?: () => number): SharedRules {
  return {
    tasks: new SharedTasks(now),
    levels: new SharedLevels(),
    subscriptions: new SharedSubscriptions(),
  };
}

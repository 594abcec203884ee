/**
 * A 2026-07-28 request carried to another replica sharing the store, and back into an exchange there: its
 * caller goes with it (principal, subject, quota, and whether a rule lets it read any task), so the replica
 * that serves it checks and records the same caller as the one that received it.
 */
import type { CallerAccess } from '../protocol/caller.js';
import type { Request } from '../protocol/messages.js';
import type { ModernAnswer, ModernExchange } from '../protocol/modern/exchange.js';
import type { RelayedAnswer, RelayedRequest } from '../tasks/store.js';

export function relayedOf(exchange: ModernExchange): RelayedRequest {
  const { principal, subject, caller, access } = exchange;
  return {
    request: exchange.request as RelayedRequest['request'],
    ...(principal === undefined ? {} : { principal }),
    ...(subject === undefined ? {} : { subject }),
    ...(caller === undefined ? {} : { caller }),
    ...(access?.allTasks === true ? { allTasks: true as const } : {}),
  };
}

/** The exchange a relayed request is served as here: nothing goes back before its answer. */
export function exchangeOf(relayed: RelayedRequest, withinMs: number): ModernExchange {
  const { principal, subject, caller, allTasks } = relayed;
  return {
    request: relayed.request as Request,
    ...(principal === undefined ? {} : { principal }),
    ...(subject === undefined ? {} : { subject }),
    ...(caller === undefined ? {} : { caller }),
    ...(allTasks === true ? { access: OPERATOR_RELAYED } : {}),
    signal: AbortSignal.timeout(withinMs),
    notify: () => undefined,
  };
}

/**
 * What goes back to the replica that relayed a request: the response and whether it was refused, read
 * off the answer here (a bytes answer makes its response only when read, which JSON would not do).
 */
export function relayedAnswer(answer: ModernAnswer): RelayedAnswer | undefined {
  if (answer === undefined) return undefined;
  return { response: answer.response, ...(answer.refused === true ? { refused: true } : {}) };
}

/**
 * The rights of a relayed operator's request. What is relayed is a tasks/get or tasks/cancel of a task held
 * here, or a retry of a call that waits here (admitted where it was first received): of the caller's
 * rights only `allTasks` is asked of it, and nothing else is granted.
 */
const OPERATOR_RELAYED: CallerAccess = {
  mayCall: () => false,
  allTasks: true,
  taskList: false,
  metrics: false,
  dashboard: false,
};

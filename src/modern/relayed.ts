/**
 * A 2026-07-28 request carried to another replica sharing the store, and back into an exchange there: its
 * caller goes with it (principal, subject, quota), so the replica that serves it checks and records the
 * same caller as the one that received it.
 */
import type { Request } from '../protocol/messages.js';
import type { ModernExchange } from '../protocol/modern/exchange.js';
import type { RelayedRequest } from '../tasks/store.js';

export function relayedOf(exchange: ModernExchange): RelayedRequest {
  const { principal, subject, caller } = exchange;
  return {
    request: exchange.request as RelayedRequest['request'],
    ...(principal === undefined ? {} : { principal }),
    ...(subject === undefined ? {} : { subject }),
    ...(caller === undefined ? {} : { caller }),
  };
}

/** The exchange a relayed request is served as here: nothing goes back before its answer. */
export function exchangeOf(relayed: RelayedRequest, withinMs: number): ModernExchange {
  const { principal, subject, caller } = relayed;
  return {
    request: relayed.request as Request,
    ...(principal === undefined ? {} : { principal }),
    ...(subject === undefined ? {} : { subject }),
    ...(caller === undefined ? {} : { caller }),
    signal: AbortSignal.timeout(withinMs),
    notify: () => undefined,
  };
}

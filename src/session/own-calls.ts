/**
 * Requests taskgate itself sends to a peer (polling an upstream task, running a task's tool call,
 * putting a client-side task's request to the client), sharing the peer's table (protocol/correlation.ts)
 * so their ids never collide with forwarded ones.
 */
import { cancellation, type Correlation } from '../protocol/correlation.js';
import type { JsonObject, RequestId } from '../protocol/messages.js';
import type { Answer, OwnCall } from '../tasks/own-call.js';

/** A request taskgate sent itself; settled with the answer, or undefined once given up. */
export interface OwnPending {
  kind: 'own';
  method: string;
  settle(answer: Answer | undefined): void;
}

export type Send = (message: object) => void;

/**
 * Sends a request of taskgate's own. A table with a deadline ends it when the peer does not answer in
 * time (`timeoutMs` in place of the table's own); the table's owner says so to the peer and the call.
 */
export function placeCall<Entry>(
  table: Correlation<Entry | OwnPending>,
  send: Send,
  method: string,
  params: JsonObject,
  timeoutMs?: number,
): OwnCall {
  let settle!: (answer: Answer | undefined) => void;
  const done = new Promise<Answer | undefined>((resolve) => (settle = resolve));
  const wireId = table.own({ kind: 'own', method, settle }, timeoutMs);
  send({ jsonrpc: '2.0', id: wireId, method, params });
  return { wireId, done };
}

/** Gives up on one of taskgate's own calls: the peer is told, and the call settles with undefined. */
export function dropCall<Entry>(
  table: Correlation<Entry | OwnPending>,
  send: Send | undefined,
  wireId: RequestId,
  reason: string,
): void {
  const entry = table.get(wireId);
  if (!isOwn(entry)) return;
  table.take(wireId);
  entry.settle(undefined);
  send?.(cancellation(wireId, reason));
}

export const isOwn = (entry: unknown): entry is OwnPending =>
  typeof entry === 'object' && entry !== null && (entry as { kind?: unknown }).kind === 'own';

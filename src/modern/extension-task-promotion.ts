/**
 * Promotion (`promoteAfter`, decide.ts): a task-augmented call answered plainly if its task ends within its
 * time, else with its CreateTaskResult then. This module holds the call while it waits: its timer and the
 * watch on the client giving it up; extension-tasks.ts decides what the call is answered.
 */
import type { TaskV1 } from '@modelcontextprotocol/ext-tasks/core/v1';
import type { Request } from '../protocol/messages.js';
import type { ModernAnswer, ModernExchange } from '../protocol/modern/exchange.js';

export interface Promotion {
  exchange: ModernExchange;
  request: Request;
  resolve(answer: ModernAnswer): void;
  timer: NodeJS.Timeout;
  stopListening(): void;
  created: TaskV1;
}

/** Holds the call until `due` (after `afterMs`), or `abandoned` once the client gives it up. */
export function startPromotion(
  exchange: ModernExchange,
  created: TaskV1,
  afterMs: number,
  resolve: (answer: ModernAnswer) => void,
  on: { due(): void; abandoned(): void },
): Promotion {
  const gaveUp = () => on.abandoned();
  exchange.signal.addEventListener('abort', gaveUp, { once: true });
  return {
    exchange,
    request: exchange.request,
    resolve,
    created,
    timer: setTimeout(() => on.due(), afterMs),
    stopListening: () => exchange.signal.removeEventListener('abort', gaveUp),
  };
}

/** The task's promotion, if it has one, taken off it: its timer and watch end, it is answered once. */
export function takePromotion(task: { promotion: Promotion | undefined }): Promotion | undefined {
  const promotion = task.promotion;
  if (promotion === undefined) return undefined;
  task.promotion = undefined;
  clearTimeout(promotion.timer);
  promotion.stopListening();
  return promotion;
}

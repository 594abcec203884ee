/**
 * What a task store can refuse. These are local values, never sent as they are: protocol/errors.ts maps
 * them to JSON-RPC errors, so every store (memory, Redis) produces the same wire messages.
 */
import type { TaskStatus } from './state.js';

export class TaskNotFoundError extends Error {
  constructor(readonly taskId: string) {
    super(`Task not found: ${taskId}`);
    this.name = 'TaskNotFoundError';
  }
}

export class IllegalTransitionError extends Error {
  constructor(
    readonly taskId: string,
    readonly from: TaskStatus,
    readonly to: TaskStatus,
  ) {
    super(`Task ${taskId} cannot move from ${from} to ${to}`);
    this.name = 'IllegalTransitionError';
  }
}

export class TaskLimitError extends Error {
  constructor(readonly limit: string) {
    super(limit);
    this.name = 'TaskLimitError';
  }
}

export class InvalidCursorError extends Error {
  constructor() {
    super('Invalid cursor');
    this.name = 'InvalidCursorError';
  }
}

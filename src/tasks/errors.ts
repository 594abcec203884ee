/**
 * What a task store can refuse. These are local values, never sent as they are: wire-errors.ts maps
 * them to JSON-RPC errors, so every store (memory, Redis) produces the same wire messages.
 */

export class TaskNotFoundError extends Error {
  constructor(readonly taskId: string) {
    super(`Task not found: ${taskId}`);
    this.name = 'TaskNotFoundError';
  }
}

export class TaskLimitError extends Error {
  constructor(readonly limit: string) {
    super(limit);
    this.name = 'TaskLimitError';
  }

  /** Every slot holds a live task (live tasks are never evicted). Same words from every store. */
  static liveTasks(maxTasks: number): TaskLimitError {
    return new TaskLimitError(
      `Too many live tasks: all ${maxTasks} task slots are working (max-tasks); retry later or call without a task`,
    );
  }

  /** One outcome is larger than the whole budget for held results. Same words from every store. */
  static resultBytes(bytes: number, maxResultBytes: number): TaskLimitError {
    return new TaskLimitError(
      `The result (${bytes} bytes) is larger than the budget for held results (max-result-bytes: ${maxResultBytes})`,
    );
  }
}

/**
 * The caller already has as many live tasks as its bound allows (limits.maxLiveTasks). Not a
 * TaskLimitError: that one is the store's own capacity; this one is per caller, and security/limits.ts
 * turns it into the wire refusal that names the setting.
 */
export class CallerLimitError extends Error {
  constructor(
    readonly live: number,
    readonly max: number,
  ) {
    super(`The caller has ${live} live tasks, its limit is ${max}`);
    this.name = 'CallerLimitError';
  }
}

export class InvalidCursorError extends Error {
  constructor() {
    super('Invalid cursor');
    this.name = 'InvalidCursorError';
  }
}

/**
 * The store's backend cannot be reached (Redis down, or the store closed). Nothing was changed, except
 * when the connection dropped while a command was in flight: then the outcome of that one command is
 * unknown (a retried update may find its own change already made and get IllegalTransitionError).
 */
export class TaskStoreUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'TaskStoreUnavailableError';
  }
}

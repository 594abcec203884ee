import type { TaskRecord, TransitionChange } from './state.js';

export interface NewTask {
  owner: string;
  identity?: string;
  sessionId: string;
  toolName: string;
  /** Actual ttl in ms (already clamped by policy). */
  ttl: number;
  pollInterval: number;
}

export interface TaskPage {
  tasks: TaskRecord[];
  nextCursor?: string;
}

export type TransitionListener = (record: TaskRecord) => void;

/**
 * Where tasks live. Every backend (memory, Redis) implements this contract, and one shared test suite
 * (test/store-contract.ts) holds each of them to it.
 *
 * - `create` MUST mint a task id with at least 122 bits from a CSPRNG, start the task `working`, and MUST
 *   NOT evict a task that is not terminal: when the store is full of live tasks it throws TaskLimitError.
 *   Terminal tasks are evicted least recently used first to make room.
 * - `get` throws TaskNotFoundError for an unknown or expired task. A task expires `ttl` ms after creation,
 *   but never while it is live, and a task that ends after its ttl stays readable for a short grace period
 *   so that the requestor who saw it finish can still fetch its result.
 * - `update` changes status only through `transition` (state.ts): IllegalTransitionError otherwise, so a
 *   terminal task never changes again. An outcome larger than the store's byte budget throws
 *   TaskLimitError and changes nothing. Listeners see every successful change, in order.
 * - `list` returns an owner's tasks in creation order, at most `limit` per page, with an opaque cursor
 *   that is bound to the owner; a cursor that was not issued for that owner throws InvalidCursorError.
 * - `waitForTerminal` resolves with the task once it is terminal (at once if it already is), rejects
 *   with TaskNotFoundError if it vanishes, and with the signal's reason when aborted.
 */
export interface TaskStore {
  create(task: NewTask): Promise<TaskRecord>;
  get(taskId: string): Promise<TaskRecord>;
  update(taskId: string, change: TransitionChange): Promise<TaskRecord>;
  list(owner: string, cursor: string | undefined, limit: number): Promise<TaskPage>;
  waitForTerminal(taskId: string, signal?: AbortSignal): Promise<TaskRecord>;
  onTransition(listener: TransitionListener): () => void;
  close(): Promise<void>;
}

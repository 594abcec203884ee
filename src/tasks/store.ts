import type { TaskRecord, TransitionChange } from './state.js';

export interface NewTask {
  owner: string;
  identity?: string;
  sessionId: string;
  toolName: string;
  /** Actual ttl in ms (already clamped by policy). */
  ttl: number;
  pollInterval: number;
  /** The task span's W3C traceparent (telemetry), kept with the record. */
  traceparent?: string;
  /** The server it is made through, when one endpoint fronts several; kept with the record. */
  server?: string;
  /** The requestor's bound on live tasks (limits.maxLiveTasks); see `create` below. */
  liveLimit?: LiveLimit;
}

/** At most `max` live tasks for one `caller` (an identity, or a session without one). */
export interface LiveLimit {
  caller: string;
  max: number;
}

export interface TaskPage {
  tasks: TaskRecord[];
  nextCursor?: string;
}

export type TransitionListener = (record: TaskRecord) => void;

/** What the replica running a 2026-07-28 extension task shows of it to every replica: tasks.md's inputRequests. */
export interface PostedTask {
  /** The replica that posted it (its `self`): it holds the task's call and, for a server's own task, its upstream. */
  runner?: string;
  /** Who created the task, when callers are identified: only they may see or answer it. */
  principal?: string;
  /** The input its server waits for, by key, as tasks/get inlines it. */
  inputRequests: Record<string, unknown>;
}

/** A client's tasks/* request carried to the replica that runs the task, with who sent it. */
export interface RelayedRequest {
  request: { jsonrpc: '2.0'; id: string | number; method: string; params?: Record<string, unknown> };
  principal?: string;
  /** Who the principal is, for the audit lines of the replica that serves it. */
  subject?: string;
  caller?: string;
  /** The principal may read and cancel any caller's task (auth.rules `tasks: all`), as judged where it arrived. */
  allTasks?: true;
  /** The replica that relayed it (its `self`), as the board that carried it says. */
  from?: string;
  /**
   * A tasks/result whose server may ask for input on it: the requests it sends there are relayed back to
   * `from`, each with this as its `inputFor`.
   */
  inputTo?: string;
  /** A server's request for input, relayed back to the replica that relayed the tasks/result it came on. */
  inputFor?: string;
}

/** The answer to a relayed request: its JSON-RPC response, and whether the replica serving it refused it. */
export interface RelayedAnswer {
  response: object;
  /** Refused by taskgate for what the request is (HTTP 400 on a modern front), wherever it was sent. */
  refused?: boolean;
}

/** Serves a relayed request if it is about a task held here: its answer; undefined if not. */
export type RelayHandler = (relayed: RelayedRequest) => Promise<RelayedAnswer | undefined> | undefined;

/**
 * Pending input of tasks across the replicas sharing a store (ext-tasks tasks.md "Task Update Requests").
 * The replica running a task posts what it waits for; any replica reads it for tasks/get and sends the
 * client's inputResponses, which reach the replica holding the task (every listener hears them; only the
 * one holding the task acts). An answer sent while that replica cannot hear is lost: the key stays in
 * inputRequests and the client may answer it again. A task whose state is not in the store (a server's
 * own task, behind the runner's upstream) is served by its runner: `relay` carries the request there and
 * resolves with the response, or undefined when none came within the time.
 */
export interface TaskInputBoard {
  /** This store object among the replicas (what `post` records as the runner). */
  readonly self: string;
  post(taskId: string, posted: PostedTask, ttlMs: number): Promise<void>;
  read(taskId: string): Promise<PostedTask | undefined>;
  answer(taskId: string, inputResponses: Record<string, unknown>): Promise<void>;
  onAnswer(listener: (taskId: string, inputResponses: Record<string, unknown>) => void): () => void;
  /** Tells every replica that the task's status changed (their listeners of it are told: notifications/tasks). */
  announce(taskId: string): Promise<void>;
  onAnnounced(listener: (taskId: string) => void): () => void;
  relay(runner: string, relayed: RelayedRequest, timeoutMs: number): Promise<RelayedAnswer | undefined>;
  onRelayed(handler: RelayHandler): () => void;
  /** Lists a posted task under `principal`, for `ttlMs` (a server's own task, for tasks/list elsewhere). */
  index(principal: string, taskId: string, ttlMs: number): Promise<void>;
  /**
   * The tasks indexed under `principal` and not expired, the soonest to expire first: at most `limit` of
   * them from `from` (a page's `next`; the first without), and where the next page starts if there is one.
   */
  indexed(principal: string, limit: number, from?: IndexPlace): Promise<IndexedPage>;
}

/** Where a page of indexed tasks starts: at those expiring at `until`, past the first `skip` of them. */
export interface IndexPlace {
  until: number;
  skip: number;
}

export interface IndexedPage {
  taskIds: string[];
  next?: IndexPlace;
}

/** The statusMessage of a task whose executor (the taskgate process running its call) stopped. */
export const EXECUTOR_LOST = 'executor lost: the taskgate replica running this task stopped';

/**
 * Where tasks live. Every backend (memory, Redis) implements this contract, and one shared test suite
 * (test/store-contract.ts) holds each of them to it.
 *
 * - `create` MUST mint a task id with at least 122 bits from a CSPRNG, start the task `working`, and MUST
 *   NOT evict a task that is not terminal: when the store is full of live tasks it throws TaskLimitError.
 *   Terminal tasks are evicted least recently used first to make room. With a `liveLimit`, the store MUST
 *   count the caller's live tasks and refuse with CallerLimitError (creating nothing) when `max` of them are
 *   live, in one atomic step with the creation, so that creations in flight cannot all pass; a task that
 *   ended, or that the backend no longer holds (a Redis that lost its data), no longer counts.
 * - `get` throws TaskNotFoundError for an unknown or expired task. A task expires `ttl` ms after creation,
 *   but never while it is live, and a task that ends after its ttl stays readable for a short grace period
 *   so that the requestor who saw it finish can still fetch its result.
 * - `update` changes status only through `transition` (state.ts): IllegalTransitionError otherwise, so a
 *   terminal task never changes again. A change that names the status it expects (`from`) MUST be
 *   checked against the task in the same atomic step that makes it: StaleStatusError, changing nothing,
 *   when the task is in another status, so that two changes sent one after the other apply in that order.
 *   An outcome larger than the store's byte budget throws TaskLimitError and changes nothing. An outcome
 *   given as `resultBytes` (a result kept as the bytes it arrived as) is read back as the same bytes (a
 *   Buffer, or their text), with no `outcome`, by every read and every replica; it counts as its
 *   `outcomeBytes` like any other.
 * - Listeners (`onTransition`) see every successful change made through this store object, in order, as
 *   the updated record. A store shared by several processes MUST also report to the store object that
 *   created a task (its executor: the process running the task's work) the change that ends the task when
 *   another process makes it (a `tasks/cancel` served by another replica, a lapsed lease), once, so that
 *   the executor can stop the work (cancel routing). A single-process store has no other process.
 * - Executor lease. A store shared by several processes MUST keep a lease for each process that created
 *   tasks, renewed by the store object itself while the process lives. When the lease lapses (the process
 *   died, or lost the store for longer than the lease), each of its tasks still `working` or
 *   `input_required` MUST become `failed` with statusMessage EXECUTOR_LOST and an error outcome, and every
 *   waiter on every process wakes. `close` MUST do the same at once for the tasks of the closing store
 *   object, when the backend is reachable. Terminal tasks are untouched: a restarted process still serves
 *   them. A single-process store needs no lease: its tasks and their work end with the process.
 * - `list` returns an owner's tasks in creation order, at most `limit` per page, with an opaque cursor
 *   that is bound to the owner; a cursor that was not issued for that owner throws InvalidCursorError.
 *   A page with a cursor MUST hold a task (a client may stop at an empty page): tasks that expired or
 *   were evicted are skipped before the page is cut, not left as holes in it.
 * - `waitForTerminal` resolves with the task once it is terminal (at once if it already is), rejects
 *   with TaskNotFoundError if it vanishes, and with the signal's reason when aborted.
 * - `close` is safe to call twice. It rejects every pending wait with TaskStoreUnavailableError, and every
 *   call made after it the same way.
 */
export interface TaskStore {
  create(task: NewTask): Promise<TaskRecord>;
  get(taskId: string): Promise<TaskRecord>;
  update(taskId: string, change: TransitionChange): Promise<TaskRecord>;
  list(owner: string, cursor: string | undefined, limit: number): Promise<TaskPage>;
  waitForTerminal(taskId: string, signal?: AbortSignal): Promise<TaskRecord>;
  onTransition(listener: TransitionListener): () => void;
  close(): Promise<void>;
  /** A store shared by several processes has one; a single-process store has no other process to tell. */
  readonly inputs: TaskInputBoard | undefined;
}

/**
 * The store with `create` done another way. Every other call is the store's own, its very promise: an extra
 * step on the way to a tasks/result answer could let a shutdown close the session first.
 */
export function withCreate(store: TaskStore, create: TaskStore['create']): TaskStore {
  return {
    create,
    get: (taskId) => store.get(taskId),
    update: (taskId, change) => store.update(taskId, change),
    list: (owner, cursor, limit) => store.list(owner, cursor, limit),
    waitForTerminal: (taskId, signal) => store.waitForTerminal(taskId, signal),
    onTransition: (listener) => store.onTransition(listener),
    close: () => store.close(),
    inputs: store.inputs,
  };
}

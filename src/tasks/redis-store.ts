/**
 * The task store for several replicas: every task lives in one Redis (or Valkey), every state change is
 * one Lua script (redis-scripts.ts), so two replicas racing on one task end in exactly one state.
 *
 * The store wires together what lives in its own modules: the connections and scripts (redis-link.ts),
 * what the scripts return (redis-codec.ts), hearing of ends and waiting (redis-watch.ts), the executor
 * lease (redis-lease.ts) and the ends kept through an outage (redis-outbox.ts).
 *
 * - Expiry. A live task has no expiry at all: it never expires, whoever runs it. When it becomes terminal
 *   its hash gets a PEXPIRE for the instant of expiry.ts, the memory store's rule; the owner's index
 *   keys expire with the owner's last task once none of its tasks is live. The same instant is also
 *   stored and checked by every script, so a read never sees a task past its time even before Redis has
 *   removed it, and index entries are swept on the next create or update.
 * - Clock. Without `now`, the scripts take Redis's own clock (TIME): every replica stamps tasks with one
 *   clock, and no replica's skew moves an expiry. With `now` (tests), that clock is used instead.
 * - Limits, across every replica (give all of them the same values): at most `maxTasks` tasks, live and
 *   terminal; when full, terminal tasks are evicted least recently used first (a `get` is a use, a `list`
 *   is not), live ones never, and a create with every slot live throws TaskLimitError. Terminal outcomes
 *   share a budget of `maxResultBytes` (a counter; each task counts at least 1 byte), made room for the
 *   same way; a single outcome larger than the budget throws TaskLimitError and changes nothing. A
 *   create's `liveLimit` is checked and counted in its script, over the caller's live tasks on every
 *   replica, pruned first of those Redis no longer holds as live (so a flushed Redis counts none).
 * - Cursors. `tasks/list` cursors are HMAC-signed with a key derived from `cursorSecret` and the prefix:
 *   every replica sharing the prefix must be given the same secret, and then accepts the others' cursors.
 * - Waiting. `waitForTerminal` wakes on a pub/sub message (`<prefix>events`) published by the script that
 *   made the task terminal, on whichever replica. After the subscriber (re)connects it re-reads every
 *   waited task at once, and a slow poll (`fallbackPollMs`) covers a message lost in between.
 * - Listeners. `onTransition` sees the changes made through this store object, and the end of a task this
 *   store object created (it runs the task's work) when another replica makes it: the `<id> <status>
 *   <replica>` message of a task it runs, from another replica, makes it re-read the task and report it
 *   once (cancel routing: a `tasks/cancel` served by replica B stops the call running on replica A). After
 *   a reconnection it re-reads every task it runs, since a message may have been lost meanwhile.
 * - Executor lease. Each store object is an executor with an id of its own; `create` records it on the
 *   task, adds the task to the executor's set and sets the executor's lease (`leaseTtlMs`, Redis's clock).
 *   While it has live tasks the store renews the lease every third of it. Every store object sweeps every
 *   `min(1 s, lease / 4)` for executors whose lease has lapsed and fails their live tasks with
 *   EXECUTOR_LOST, in one script, which wakes every waiter everywhere. That script judges leases only once
 *   Redis has served for a whole lease without a gap in renewals and sweeps (Redis's own clock, so a
 *   stall, a restart or an outage of Redis all count): every replica has had the time to renew before
 *   any of them judges the others. `close` releases the store's own live tasks the same way at once. A
 *   replica that loses Redis for longer than its lease loses its tasks (they fail; their calls finish
 *   into nothing): the lease is the longest outage a replica survives with its tasks.
 * - Redis down. No command waits for a connection: while Redis is unreachable every operation rejects at
 *   once with TaskStoreUnavailableError naming the server and the last connection error, and a command in
 *   flight when the connection drops is not resent (its outcome is unknown). ioredis keeps reconnecting
 *   (every ≤ 2 s); operations succeed again as soon as it is back, with no restart. The end of a task this
 *   store object runs (an update to a terminal status) that could not be sent is still refused, but kept
 *   and sent once Redis is back, so that a result arriving during an outage is not lost and the task does
 *   not stay live forever (an IllegalTransitionError then means something else ended it meanwhile).
 *   A command that times out while the connection stays up (a stalled Redis) counts as an outage: the
 *   sweeps only PING until Redis answers, then the store does what it does on reconnecting. A create
 *   that was sent but not confirmed may still be made by Redis: its end (failed, UNCONFIRMED) is kept
 *   the same way, so that such a task never stays live with no call behind it.
 * - Input. What a 2026-07-28 extension task waits for is posted by the replica running it and read by
 *   any (redis-inputs.ts); the client's answers reach that replica on `<prefix>inputs`.
 * - Topology. One Redis node (standalone, Sentinel, or a single-shard managed Redis): a script may evict
 *   tasks whose keys it cannot declare in advance, which Redis Cluster does not allow.
 */
import { createHmac, randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { CursorCodec } from './cursor.js';
import { TaskNotFoundError, TaskStoreUnavailableError } from './errors.js';
import {
  accepted,
  decode,
  encodeOutcome,
  withOutcomeBytes,
  type RefusalContext,
  type Values,
} from './redis-codec.js';
import { ExecutorLease } from './redis-lease.js';
import { RedisInputBoard } from './redis-inputs.js';
import { RedisLink, redact } from './redis-link.js';
import { DeferredEnds, UNCONFIRMED_END } from './redis-outbox.js';
import { TRANSITIONS_JSON } from './redis-scripts.js';
import { TaskWatch } from './redis-watch.js';
import { isTerminal, type TaskRecord, type TransitionChange } from './state.js';
import type { NewTask, TaskPage, TaskStore, TransitionListener } from './store.js';
import { newTaskId } from './task-id.js';

export interface RedisStoreOptions {
  /** `redis://[[user]:password@]host[:port][/db]`, or `rediss://…` for TLS. */
  url: string;
  /** Overrides the password of the URL (so that it can come from a secret rather than the URL). */
  password?: string;
  /** Overrides the database number of the URL. */
  db?: number;
  /** Prefix of every key and of the pub/sub channel; replicas that share tasks share it. Default `taskgate:`. */
  keyPrefix?: string;
  /** Signs `tasks/list` cursors; the same on every replica (at least 16 bytes; 32 random bytes is good). */
  cursorSecret: string | Buffer;
  maxTasks: number;
  maxResultBytes: number;
  /** The clock, for tests. Default: Redis's own clock. */
  now?: () => number;
  /** How often waited tasks are re-read in case a pub/sub message was lost. Default 10 s. */
  fallbackPollMs?: number;
  /** How long a connection attempt may take. Default 2 s. */
  connectTimeoutMs?: number;
  /** How long one command may take before it fails (a hung server). Default 10 s. */
  commandTimeoutMs?: number;
  /** How long a relayed request waits to hear that its runner took it. Default 3 s. */
  relayTakenWithinMs?: number;
  /**
   * The executor lease in ms (see above): a replica that stops renewing it for this long loses its live
   * tasks. Every replica sharing the prefix should be given the same. Default 15 s; 0 keeps no lease (for
   * tests with an injected clock, where real time and the clock part).
   */
  leaseTtlMs?: number;
  /** Where connection losses and recoveries are logged. */
  logger?: Pick<Logger, 'warn' | 'info'>;
}

export interface RedisStoreStats {
  live: number;
  terminal: number;
  /** The byte-budget counter: sum over terminal tasks of max(1, outcomeBytes). */
  bytes: number;
  evictions: number;
}

export const DEFAULT_KEY_PREFIX = 'taskgate:';
const DEFAULT_FALLBACK_POLL_MS = 10_000;
const DEFAULT_CONNECT_TIMEOUT_MS = 2_000;
const DEFAULT_COMMAND_TIMEOUT_MS = 10_000;
export const DEFAULT_LEASE_TTL_MS = 15_000;

export class RedisTaskStore implements TaskStore {
  /** This store object as an executor: the tasks it creates are its to run, under its lease. */
  readonly executorId = randomUUID();
  private readonly prefix: string;
  private readonly link: RedisLink;
  readonly inputs: RedisInputBoard;
  private readonly watch: TaskWatch;
  private readonly lease: ExecutorLease | undefined;
  private readonly deferredEnds = new DeferredEnds();
  private readonly cursors: CursorCodec;
  private readonly listeners = new Set<TransitionListener>();
  private readonly leaseTtlMs: number;
  private closing: Promise<void> | undefined;

  constructor(private readonly options: RedisStoreOptions) {
    if (!/^rediss?:\/\//i.test(options.url)) {
      throw new Error(`The Redis store needs a redis:// or rediss:// URL, not "${redact(options.url)}"`);
    }
    if (Buffer.byteLength(options.cursorSecret) < 16) {
      throw new Error('The Redis store needs a cursorSecret of at least 16 bytes, the same on every replica');
    }
    this.prefix = options.keyPrefix ?? DEFAULT_KEY_PREFIX;
    this.cursors = new CursorCodec(
      createHmac('sha256', options.cursorSecret)
        .update(`taskgate tasks/list cursor\0${this.prefix}`)
        .digest(),
    );
    this.leaseTtlMs = options.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS;
    this.watch = new TaskWatch({
      executorId: this.executorId,
      fallbackPollMs: options.fallbackPollMs ?? DEFAULT_FALLBACK_POLL_MS,
      read: (taskId) => this.fetch(taskId, false),
      endedElsewhere: (record) => this.emit(record),
    });
    this.link = new RedisLink(
      {
        url: options.url,
        password: options.password,
        db: options.db,
        prefix: this.prefix,
        replica: this.executorId,
        now: options.now,
        connectTimeoutMs: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
        commandTimeoutMs: options.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS,
        logger: options.logger,
      },
      {
        message: (message) => this.watch.onEvent(message),
        input: (message) => this.inputs.heard(message),
        relayed: (message) => this.inputs.relayed(message),
        up: () => this.resume(),
      },
    );
    this.inputs = new RedisInputBoard(
      this.link,
      this.prefix,
      this.executorId,
      this.options.relayTakenWithinMs,
    );
    this.lease =
      this.leaseTtlMs > 0
        ? new ExecutorLease(this.link, {
            ...options,
            executorId: this.executorId,
            leaseTtlMs: this.leaseTtlMs,
            runsTasks: () => this.watch.executing.size > 0,
          })
        : undefined;
  }

  /** Resolves once both connections are up and the events are subscribed; TaskStoreUnavailableError if not within the time. */
  ready(timeoutMs = this.options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS): Promise<void> {
    return this.link.ready(timeoutMs);
  }

  async create(task: NewTask): Promise<TaskRecord> {
    const taskId = newTaskId();
    const owner = this.ownerKey(task.owner);
    const sent = this.link.connected;
    const reply = await this.link
      .run(
        'create',
        [this.taskKey(taskId), owner, `${this.prefix}owner-meta:${task.owner}`],
        [
          String(this.options.maxTasks),
          JSON.stringify({
            id: taskId,
            owner: task.owner,
            identity: task.identity,
            session: task.sessionId,
            tool: task.toolName,
            ttl: task.ttl,
            poll: task.pollInterval,
            trace: task.traceparent,
            server: task.server,
            ...(this.leaseTtlMs > 0 ? { executor: this.executorId, lease: this.leaseTtlMs } : {}),
            ...(task.liveLimit === undefined ? {} : { limit: task.liveLimit }),
          }),
        ],
      )
      .catch((error: unknown) => {
        // Sent but not confirmed: the task may exist, or come to exist once Redis wakes. Its end is kept
        // like any other, so that it fails instead of staying live (a task that never was is then not found).
        if (error instanceof TaskStoreUnavailableError && sent && !this.closing) {
          this.watch.executing.add(taskId);
          this.deferredEnds.keep(taskId, UNCONFIRMED_END);
        }
        throw error;
      });
    const values = accepted(reply, this.refusal(taskId, undefined, task.liveLimit?.max))[0] as Values;
    const { record } = decode(values);
    this.watch.executing.add(taskId);
    return record;
  }

  async get(taskId: string): Promise<TaskRecord> {
    return this.fetch(taskId, true);
  }

  async update(taskId: string, change: TransitionChange): Promise<TaskRecord> {
    const hasOutcome = change.outcome !== undefined || change.resultBytes !== undefined;
    const { executing } = this.watch;
    const reply = await this.link
      .run(
        'update',
        [this.taskKey(taskId)],
        [
          TRANSITIONS_JSON,
          String(this.options.maxResultBytes),
          JSON.stringify({
            from: change.from,
            status: change.status,
            message: change.statusMessage,
            hasOutcome,
            outcomeBytes: hasOutcome ? (change.outcomeBytes ?? 0) : undefined,
            by: this.executorId,
          }),
          ...encodeOutcome(change),
        ],
      )
      .catch((error: unknown) => {
        const runsHere = executing.has(taskId) && !this.closing;
        if (error instanceof TaskStoreUnavailableError && isTerminal(change.status) && runsHere) {
          this.deferredEnds.keep(taskId, change);
        }
        throw error;
      });
    this.deferredEnds.sent(taskId);
    let values: Values;
    try {
      values = accepted(reply, this.refusal(taskId, change))[0] as Values;
    } catch (error) {
      if (error instanceof TaskNotFoundError) executing.delete(taskId);
      throw error;
    }
    const { record } = decode(values);
    if (change.outcome !== undefined) record.outcome = change.outcome;
    else if (change.resultBytes !== undefined) record.resultBytes = change.resultBytes;
    if (isTerminal(record.status)) executing.delete(taskId);
    this.emit(record);
    if (isTerminal(record.status)) this.watch.waiters.resolve(taskId, record);
    return record;
  }

  async list(owner: string, cursor: string | undefined, limit: number): Promise<TaskPage> {
    const after = cursor === undefined ? 0 : this.cursors.decode(owner, cursor);
    const reply = await this.link.run('list', [this.ownerKey(owner)], [String(after), String(limit)]);
    const [more, rows] = accepted(reply, this.refusal('')) as [number, Values[]];
    const page = rows.map(decode);
    const tasks = page.map((row) => row.record);
    if (more !== 1) return { tasks };
    return { tasks, nextCursor: this.cursors.encode(owner, page.at(-1)?.position ?? after) };
  }

  waitForTerminal(taskId: string, signal?: AbortSignal): Promise<TaskRecord> {
    if (this.closing) return Promise.reject(this.link.closedError());
    const wait = this.watch.waiters.add(taskId, signal);
    // The first look comes after the wait is registered, so a message published meanwhile is not missed.
    this.fetch(taskId, true).then(
      (record) => {
        if (isTerminal(record.status)) wait.resolve(record);
        else if (signal?.aborted) wait.reject(signal.reason);
      },
      (error: unknown) => wait.reject(error),
    );
    return wait.promise;
  }

  onTransition(listener: TransitionListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Counts across every replica sharing the prefix. */
  async stats(): Promise<RedisStoreStats> {
    const { cmd } = this.link;
    const [live, terminal, bytes, evictions] = await this.link.redis(() =>
      Promise.all([
        cmd.zcard(`${this.prefix}live`),
        cmd.zcard(`${this.prefix}lru`),
        cmd.get(`${this.prefix}bytes`),
        cmd.get(`${this.prefix}evictions`),
      ]),
    );
    return { live, terminal, bytes: Number(bytes ?? 0), evictions: Number(evictions ?? 0) };
  }

  /** Closes both connections; pending waits reject with TaskStoreUnavailableError. Safe to call twice. */
  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    this.watch.stop(this.link.closedError());
    this.inputs.stop();
    this.link.beginClose();
    await this.lease?.release();
    await this.link.quit();
  }

  /** Redis is back (reconnected, or answering after a stall): what it missed meanwhile is made up for. */
  private resume(): void {
    this.lease?.renew();
    this.deferredEnds.flush((taskId, change) => this.update(taskId, change));
    this.watch.missedEvents();
  }

  /** Tells the listeners of a change; a failing listener must not keep it from the others or the waiters. */
  private emit(record: TaskRecord): void {
    for (const listener of this.listeners) {
      try {
        listener(record);
      } catch (error) {
        process.emitWarning(error as Error);
      }
    }
  }

  private async fetch(taskId: string, touch: boolean): Promise<TaskRecord> {
    const reply = await this.link.runForBytes('get', [this.taskKey(taskId)], [taskId, touch ? '1' : '0']);
    return decode(accepted(withOutcomeBytes(reply), this.refusal(taskId))[0] as Values).record;
  }

  private refusal(taskId: string, change?: TransitionChange, maxLive?: number): RefusalContext {
    const { maxTasks, maxResultBytes } = this.options;
    return { taskId, change, maxTasks, maxResultBytes, maxLive };
  }

  private taskKey(taskId: string): string {
    return `${this.prefix}task:${taskId}`;
  }

  private ownerKey(owner: string): string {
    return `${this.prefix}owner:${owner}`;
  }
}

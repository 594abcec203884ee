/**
 * The task store for several replicas: every task lives in one Redis (or Valkey), every state change is
 * one Lua script (redis-scripts.ts), so two replicas racing on one task end in exactly one state.
 *
 * - Expiry. A live task has no expiry at all: it never expires, whoever runs it. When it becomes terminal
 *   its hash gets a PEXPIRE for the instant of expiry.ts, the memory store's rule; the owner's index keys expire with the owner's last task once none of its tasks is live. The
 *   same instant is also stored and checked by every script, so a read never sees a task past its time
 *   even before Redis has removed it, and index entries are swept on the next create or update.
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
 * - Topology. One Redis node (standalone, Sentinel, or a single-shard managed Redis): a script may evict
 *   tasks whose keys it cannot declare in advance, which Redis Cluster does not allow.
 */
import { createHash, createHmac, randomUUID } from 'node:crypto';
import { EventEmitter, once } from 'node:events';
import { Redis, ReplyError } from 'ioredis';
import type { Logger } from 'pino';
import { ErrorCode } from '../protocol/errors.js';
import { CursorCodec } from './cursor.js';
import { CallerLimitError, TaskLimitError, TaskNotFoundError, TaskStoreUnavailableError } from './errors.js';
import { IllegalTransitionError, StaleStatusError } from './state.js';
import { RECORD_FIELDS, SCRIPTS, SHARED_KEYS, type ScriptName } from './redis-scripts.js';
import {
  ALLOWED_TRANSITIONS,
  isTerminal,
  type TaskOutcome,
  type TaskRecord,
  type TaskStatus,
  type TransitionChange,
} from './state.js';
import {
  EXECUTOR_LOST,
  type NewTask,
  type TaskPage,
  type TaskStore,
  type TransitionListener,
} from './store.js';
import { newTaskId } from './task-id.js';
import { TaskWaiters } from './waiters.js';

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
const MAX_RECONNECT_DELAY_MS = 2_000;
/** What ioredis rejects a command with once commandTimeout has passed. */
const COMMAND_TIMED_OUT = 'Command timed out';
export const DEFAULT_LEASE_TTL_MS = 15_000;
/** Lease sweeps are this often at most, and at least four times per lease. */
const MAX_LAPSE_SWEEP_MS = 1_000;
/** What a task whose executor was lost fails with, as the outcome its tasks/result answers. */
const LOST_OUTCOME = JSON.stringify({ error: { code: ErrorCode.InternalError, message: EXECUTOR_LOST } });
/**
 * What a task fails with whose creation Redis did not confirm in time although it may have made it (a
 * stalled Redis runs what it was sent once it wakes): its call never started, so it must not stay live.
 */
const UNCONFIRMED = "The task store did not confirm this task's creation in time, so its call never started";
const UNCONFIRMED_OUTCOME = { error: { code: ErrorCode.StoreUnavailable, message: UNCONFIRMED } };
const UNCONFIRMED_END: TransitionChange = {
  status: 'failed',
  statusMessage: UNCONFIRMED,
  outcome: UNCONFIRMED_OUTCOME,
  outcomeBytes: Buffer.byteLength(JSON.stringify(UNCONFIRMED_OUTCOME)),
};
/** Replies of Redis that mean "not now" rather than "your script is wrong". */
const UNAVAILABLE_REPLY = /^(OOM|LOADING|READONLY|MASTERDOWN|BUSY|NOREPLICAS|CLUSTERDOWN|TRYAGAIN)\b/;

const TRANSITIONS_JSON = JSON.stringify(ALLOWED_TRANSITIONS);
const SHAS = Object.fromEntries(
  Object.entries(SCRIPTS).map(([name, lua]) => [name, createHash('sha1').update(lua).digest('hex')]),
) as Record<ScriptName, string>;

type Reply = [code: string, ...rest: unknown[]];
type Values = (string | null)[];

export class RedisTaskStore implements TaskStore {
  /** This store object as an executor: the tasks it creates are its to run, under its lease. */
  readonly executorId = randomUUID();
  private readonly cmd: Redis;
  private readonly sub: Redis;
  private readonly prefix: string;
  private readonly channel: string;
  private readonly sharedKeys: string[];
  private readonly where: string;
  private readonly cursors: CursorCodec;
  private readonly listeners = new Set<TransitionListener>();
  private readonly waiters = new TaskWaiters(() => this.schedulePoll());
  /** Tasks being re-read → whether another read was asked for meanwhile. */
  private readonly checking = new Map<string, boolean>();
  /** Live tasks created through this store object: their end, made elsewhere, is reported to listeners. */
  private readonly executing = new Set<string>();
  /** Tasks being re-read whose end, if found, was made elsewhere (or may have been: after a reconnection). */
  private readonly endedElsewhere = new Set<string>();
  /** Ends of tasks run here that Redis was not there to take: sent again once it is back. */
  private readonly deferredEnds = new Map<string, TransitionChange>();
  private readonly leaseTtlMs: number;
  private leaseTimers: NodeJS.Timeout[] = [];
  /** A command timed out while the connection stayed up: Redis is treated as down until it answers again. */
  private stalled = false;
  /** Emits 'change' when the connections' state changes, for ready(). */
  private readonly state = new EventEmitter();
  private subscribed = false;
  private lastError: Error | undefined;
  private lost = false;
  private poller: NodeJS.Timeout | undefined;
  private closing: Promise<void> | undefined;

  constructor(private readonly options: RedisStoreOptions) {
    if (!/^rediss?:\/\//i.test(options.url)) {
      throw new Error(`The Redis store needs a redis:// or rediss:// URL, not "${redact(options.url)}"`);
    }
    if (Buffer.byteLength(options.cursorSecret) < 16) {
      throw new Error('The Redis store needs a cursorSecret of at least 16 bytes, the same on every replica');
    }
    this.prefix = options.keyPrefix ?? DEFAULT_KEY_PREFIX;
    this.channel = `${this.prefix}events`;
    this.sharedKeys = SHARED_KEYS.map((name) => this.prefix + name);
    this.where = redact(options.url);
    this.cursors = new CursorCodec(
      createHmac('sha256', options.cursorSecret)
        .update(`taskgate tasks/list cursor\0${this.prefix}`)
        .digest(),
    );
    const common = {
      connectTimeout: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
      retryStrategy: (attempt: number) => Math.min(attempt * 100, MAX_RECONNECT_DELAY_MS),
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      autoResubscribe: false,
      ...(options.password === undefined ? {} : { password: options.password }),
      ...(options.db === undefined ? {} : { db: options.db }),
    };
    this.cmd = new Redis(options.url, {
      ...common,
      connectionName: 'taskgate',
      commandTimeout: options.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS,
    });
    this.sub = new Redis(options.url, { ...common, connectionName: 'taskgate-events' });
    for (const connection of [this.cmd, this.sub]) {
      connection.on('error', (error: Error) => (this.lastError = error));
      connection.on('close', () => this.connectionLost());
    }
    this.cmd.on('ready', () => this.connectionUp());
    this.sub.on('ready', () => void this.subscribe());
    this.sub.on('message', (channel: string, message: string) => {
      if (channel === this.channel) this.onEvent(message);
    });
    this.leaseTtlMs = options.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS;
    if (this.leaseTtlMs > 0) {
      const sweepEvery = Math.min(MAX_LAPSE_SWEEP_MS, Math.max(1, Math.floor(this.leaseTtlMs / 4)));
      this.leaseTimers = [
        setInterval(() => this.renewLease(), Math.max(1, Math.floor(this.leaseTtlMs / 3))),
        setInterval(() => this.sweepLapsed(), sweepEvery),
      ];
      for (const timer of this.leaseTimers) timer.unref();
    }
  }

  /** Resolves once both connections are up and the events are subscribed; TaskStoreUnavailableError if not within the time. */
  async ready(timeoutMs = this.options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS): Promise<void> {
    const signal = AbortSignal.timeout(timeoutMs);
    while (!(this.cmd.status === 'ready' && this.subscribed)) {
      if (this.closing) throw this.closedError();
      try {
        await once(this.state, 'change', { signal });
      } catch {
        const why = this.lastError ? ` (${this.lastError.message})` : '';
        throw this.unavailable(`did not connect within ${timeoutMs} ms${why}`);
      }
    }
  }

  async create(task: NewTask): Promise<TaskRecord> {
    const taskId = newTaskId();
    const owner = this.ownerKey(task.owner);
    const sent = this.cmd.status === 'ready';
    const reply = await this.run(
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
          ...(this.leaseTtlMs > 0 ? { executor: this.executorId, lease: this.leaseTtlMs } : {}),
          ...(task.liveLimit === undefined ? {} : { limit: task.liveLimit }),
        }),
      ],
    ).catch((error: unknown) => {
      // Sent but not confirmed: the task may exist, or come to exist once Redis wakes. Its end is kept
      // like any other, so that it fails instead of staying live (a task that never was is then not found).
      if (error instanceof TaskStoreUnavailableError && sent && !this.closing) {
        this.executing.add(taskId);
        this.deferredEnds.set(taskId, UNCONFIRMED_END);
      }
      throw error;
    });
    const { record } = decode(this.accepted(reply, taskId, undefined, task.liveLimit?.max)[0] as Values);
    this.executing.add(taskId);
    return record;
  }

  async get(taskId: string): Promise<TaskRecord> {
    return this.fetch(taskId, true);
  }

  async update(taskId: string, change: TransitionChange): Promise<TaskRecord> {
    const hasOutcome = change.outcome !== undefined;
    const reply = await this.run(
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
        hasOutcome ? JSON.stringify(change.outcome) : '',
      ],
    ).catch((error: unknown) => {
      const runsHere = this.executing.has(taskId) && !this.closing;
      if (error instanceof TaskStoreUnavailableError && isTerminal(change.status) && runsHere) {
        this.deferredEnds.set(taskId, change);
      }
      throw error;
    });
    this.deferredEnds.delete(taskId);
    let values: Values;
    try {
      values = this.accepted(reply, taskId, change)[0] as Values;
    } catch (error) {
      if (error instanceof TaskNotFoundError) this.executing.delete(taskId);
      throw error;
    }
    const { record } = decode(values);
    if (change.outcome !== undefined) record.outcome = change.outcome;
    if (isTerminal(record.status)) this.executing.delete(taskId);
    this.emit(record);
    if (isTerminal(record.status)) this.waiters.resolve(taskId, record);
    return record;
  }

  async list(owner: string, cursor: string | undefined, limit: number): Promise<TaskPage> {
    const after = cursor === undefined ? 0 : this.cursors.decode(owner, cursor);
    const reply = await this.run('list', [this.ownerKey(owner)], [String(after), String(limit)]);
    const [more, rows] = this.accepted(reply, '') as [number, Values[]];
    const page = rows.map(decode);
    const tasks = page.map((row) => row.record);
    if (more !== 1) return { tasks };
    return { tasks, nextCursor: this.cursors.encode(owner, page.at(-1)?.position ?? after) };
  }

  waitForTerminal(taskId: string, signal?: AbortSignal): Promise<TaskRecord> {
    if (this.closing) return Promise.reject(this.closedError());
    const wait = this.waiters.add(taskId, signal);
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
    const [live, terminal, bytes, evictions] = await this.redis(() =>
      Promise.all([
        this.cmd.zcard(`${this.prefix}live`),
        this.cmd.zcard(`${this.prefix}lru`),
        this.cmd.get(`${this.prefix}bytes`),
        this.cmd.get(`${this.prefix}evictions`),
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
    // Before the poll is stopped: a settled wait may (re)schedule it.
    this.waiters.rejectAll(this.closedError());
    clearInterval(this.poller);
    this.poller = undefined;
    for (const timer of this.leaseTimers) clearInterval(timer);
    this.state.emit('change');
    if (this.leaseTtlMs > 0 && this.executing.size > 0 && this.cmd.status === 'ready') {
      // Release this executor's live tasks at once rather than a lease later; if Redis cannot be told,
      // the lease lapses and another replica does it.
      await this.script('lapse', [], this.lapseArgs(this.executorId)).catch(() => undefined);
    }
    await Promise.all([quit(this.cmd), quit(this.sub)]);
  }

  /** Renews this executor's lease, while it runs tasks; a failure waits for the next turn. */
  private renewLease(): void {
    if (this.executing.size === 0 || this.cmd.status !== 'ready' || this.closing) return;
    this.run('renew', [], [this.executorId, String(this.leaseTtlMs), String(this.gapMs)]).catch(
      (error: unknown) => this.backgroundFailed('renewing the executor lease', error),
    );
  }

  /**
   * Fails the live tasks of replicas whose lease lapsed; the script itself waits until Redis has served a
   * whole lease without a gap. While Redis is stalled it is only asked whether it answers again.
   */
  private sweepLapsed(): void {
    if (this.closing || this.cmd.status !== 'ready' || !this.subscribed) return;
    if (this.stalled) {
      this.redis(() => this.cmd.ping()).catch(() => undefined);
      return;
    }
    this.run('lapse', [], this.lapseArgs('')).then(
      (reply) => {
        const failed = Number(this.accepted(reply, '')[0]);
        if (failed > 0) {
          this.options.logger?.warn(
            { tasks: failed },
            'task store: failed the live tasks of a replica whose executor lease lapsed',
          );
        }
      },
      (error: unknown) => this.backgroundFailed('sweeping lapsed executor leases', error),
    );
  }

  private lapseArgs(executor: string): string[] {
    const lost = {
      message: EXECUTOR_LOST,
      outcome: LOST_OUTCOME,
      outcomeBytes: Buffer.byteLength(LOST_OUTCOME),
      by: this.executorId,
    };
    return [
      TRANSITIONS_JSON,
      String(this.options.maxResultBytes),
      JSON.stringify(lost),
      executor,
      String(this.leaseTtlMs),
      String(this.gapMs),
    ];
  }

  /**
   * A gap this long in renewals and sweeps means Redis (or every replica) was away: well above the sweep
   * period, and short enough that no lease renewed before the gap has lapsed when it is noticed.
   */
  private get gapMs(): number {
    return Math.floor(this.leaseTtlMs / 2);
  }

  /** An unreachable Redis is logged where the connection is watched; anything else is worth a warning. */
  private backgroundFailed(what: string, error: unknown): void {
    if (error instanceof TaskStoreUnavailableError) return;
    this.options.logger?.warn({ err: (error as Error).message }, `task store: ${what} failed`);
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
    const reply = await this.run('get', [this.taskKey(taskId)], [taskId, touch ? '1' : '0']);
    return decode(this.accepted(reply, taskId)[0] as Values).record;
  }

  /** Runs a script unless closed; a lost or refused connection becomes TaskStoreUnavailableError. */
  private run(name: ScriptName, keys: string[], args: string[]): Promise<Reply> {
    return this.redis(() => this.script(name, keys, args));
  }

  /** Runs a script (by its SHA, loading it on NOSCRIPT) with the shared keys and arguments first. */
  private async script(name: ScriptName, keys: string[], args: string[]): Promise<Reply> {
    const now = this.options.now ? String(this.options.now()) : '';
    const all = [...this.sharedKeys, ...keys];
    const argv = [this.prefix, now, ...args];
    try {
      return (await this.cmd.evalsha(SHAS[name], all.length, ...all, ...argv)) as Reply;
    } catch (error) {
      if (!(error instanceof ReplyError) || !(error as Error).message.startsWith('NOSCRIPT')) throw error;
      return (await this.cmd.eval(SCRIPTS[name], all.length, ...all, ...argv)) as Reply;
    }
  }

  /** Sends commands unless closed, and turns a lost or refused connection into TaskStoreUnavailableError. */
  private async redis<T>(send: () => Promise<T>): Promise<T> {
    if (this.closing) throw this.closedError();
    try {
      const value = await send();
      if (this.stalled) this.answersAgain();
      return value;
    } catch (error) {
      if (error instanceof ReplyError && !UNAVAILABLE_REPLY.test((error as Error).message)) throw error;
      if (this.closing) throw this.closedError();
      if (this.cmd.status === 'ready' && (error as Error).message === COMMAND_TIMED_OUT) this.stall();
      throw this.unavailable(
        this.cmd.status === 'ready'
          ? `failed: ${(error as Error).message}`
          : `is not connected (${this.cmd.status}${this.lastError ? `: ${this.lastError.message}` : ''})`,
        error,
      );
    }
  }

  /** The rest of an 'ok' reply; any refusal becomes its typed error. */
  private accepted(reply: Reply, taskId: string, change?: TransitionChange, maxLive?: number): unknown[] {
    const [code, ...rest] = reply;
    if (code === 'ok') return rest;
    throw refusal(code, rest, taskId, change, { ...this.options, maxLive });
  }

  private async subscribe(): Promise<void> {
    if (this.closing) return;
    try {
      await this.sub.subscribe(this.channel);
    } catch (error) {
      // The connection dropped again: the next 'ready' subscribes.
      this.lastError = error as Error;
      return;
    }
    this.subscribed = true;
    this.connectionUp();
  }

  /** Called when either connection is up; acts once both are. */
  private connectionUp(): void {
    if (this.cmd.status === 'ready' && this.subscribed) {
      this.stalled = false;
      if (this.lost) {
        this.lost = false;
        this.options.logger?.info({ redis: this.where }, 'task store: Redis connection restored');
      }
      this.resume();
    }
    this.state.emit('change');
  }

  /**
   * A command timed out on a connection that is still up (a stalled, overloaded or paused Redis): as in
   * an outage, ends are kept until it answers again, and no lease is judged meanwhile.
   */
  private stall(): void {
    if (this.stalled) return;
    this.stalled = true;
    this.options.logger?.warn(
      { redis: this.where },
      'task store: Redis does not answer (a command timed out); treating it as down until it answers',
    );
  }

  private answersAgain(): void {
    this.stalled = false;
    this.options.logger?.info({ redis: this.where }, 'task store: Redis answers again');
    this.resume();
  }

  /** Redis is back (reconnected, or answering after a stall): what it missed meanwhile is made up for. */
  private resume(): void {
    this.renewLease();
    for (const [taskId, change] of [...this.deferredEnds]) {
      this.deferredEnds.delete(taskId);
      // Refused again while Redis is still away, it is deferred again; any other refusal means the
      // task ended otherwise meanwhile.
      this.update(taskId, change).catch(() => undefined);
    }
    // Whatever was published while a connection was away is lost: look at every waited task now, and
    // at every task run here (another replica may have cancelled it meanwhile).
    for (const taskId of this.executing) {
      this.endedElsewhere.add(taskId);
      this.check(taskId);
    }
    for (const taskId of this.waiters.taskIds()) this.check(taskId);
  }

  private connectionLost(): void {
    if (this.sub.status !== 'ready') this.subscribed = false;
    if (!this.lost && !this.closing) {
      this.lost = true;
      this.options.logger?.warn(
        { redis: this.where, err: this.lastError?.message },
        'task store: Redis unreachable; reconnecting',
      );
    }
    this.state.emit('change');
  }

  /** `<id> <status> <replica>` (a task ended) or `<id> gone`. */
  private onEvent(message: string): void {
    const [taskId, status, by] = message.split(' ');
    if (taskId === undefined) return;
    if (status === 'gone') {
      this.executing.delete(taskId);
      this.waiters.reject(taskId, new TaskNotFoundError(taskId));
      return;
    }
    const elsewhere = by !== this.executorId && this.executing.has(taskId);
    if (elsewhere) this.endedElsewhere.add(taskId);
    if (elsewhere || this.waiters.has(taskId)) this.check(taskId);
  }

  /**
   * Re-reads a task: wakes its waiters if it is terminal or gone, and reports its end to the listeners
   * when it was made elsewhere; a failed read waits for the next reconnection or poll. A check asked for
   * while one is in flight runs again after it.
   */
  private check(taskId: string): void {
    if (this.closing) return;
    if (this.checking.has(taskId)) {
      this.checking.set(taskId, true);
      return;
    }
    this.checking.set(taskId, false);
    void this.fetch(taskId, false)
      .then(
        (record) => {
          if (!isTerminal(record.status)) return;
          if (this.endedElsewhere.delete(taskId) && this.executing.delete(taskId)) this.emit(record);
          this.waiters.resolve(taskId, record);
        },
        (error: unknown) => {
          if (!(error instanceof TaskNotFoundError)) return;
          this.endedElsewhere.delete(taskId);
          this.executing.delete(taskId);
          this.waiters.reject(taskId, error);
        },
      )
      .finally(() => {
        const again = this.checking.get(taskId) === true;
        this.checking.delete(taskId);
        if (again && (this.waiters.has(taskId) || this.endedElsewhere.has(taskId))) this.check(taskId);
      });
  }

  /** The fallback poll runs only while someone waits. */
  private schedulePoll(): void {
    if (this.waiters.size > 0 && !this.poller && !this.closing) {
      this.poller = setInterval(() => {
        for (const taskId of this.waiters.taskIds()) this.check(taskId);
      }, this.options.fallbackPollMs ?? DEFAULT_FALLBACK_POLL_MS);
      this.poller.unref();
    } else if (this.waiters.size === 0 && this.poller) {
      clearInterval(this.poller);
      this.poller = undefined;
    }
  }

  private taskKey(taskId: string): string {
    return `${this.prefix}task:${taskId}`;
  }

  private ownerKey(owner: string): string {
    return `${this.prefix}owner:${owner}`;
  }

  private unavailable(what: string, cause?: unknown): TaskStoreUnavailableError {
    return new TaskStoreUnavailableError(`Task store unavailable: Redis at ${this.where} ${what}`, { cause });
  }

  private closedError(): TaskStoreUnavailableError {
    return new TaskStoreUnavailableError(`Task store closed (Redis at ${this.where})`);
  }
}

/** The one place where the scripts' refusals become the store's typed errors (same words as the memory store). */
function refusal(
  code: string,
  rest: unknown[],
  taskId: string,
  change: TransitionChange | undefined,
  limits: { maxTasks: number; maxResultBytes: number; maxLive?: number | undefined },
): Error {
  const to = change?.status as TaskStatus;
  switch (code) {
    case 'not_found':
      return new TaskNotFoundError(taskId);
    case 'stale':
      return new StaleStatusError(taskId, change?.from as TaskStatus, rest[0] as TaskStatus, to);
    case 'illegal':
      return new IllegalTransitionError(taskId, rest[0] as TaskStatus, to);
    case 'too_large':
      return TaskLimitError.resultBytes(Number(rest[0]), limits.maxResultBytes);
    case 'full':
      return TaskLimitError.liveTasks(limits.maxTasks);
    case 'caller_full':
      return new CallerLimitError(Number(rest[0]), limits.maxLive ?? Number(rest[0]));
    case 'exists':
      return new Error(`Task id collision on ${taskId} (a broken random source?)`);
    default:
      return new Error(`Unexpected reply from a task store script: ${String(code)}`);
  }
}

/** A task as the scripts return it: RECORD_FIELDS in order, then the outcome when it was asked for. */
function decode(values: Values): { record: TaskRecord; position: number } {
  const field = Object.fromEntries(RECORD_FIELDS.map((name, i) => [name, values[i] ?? null])) as Record<
    (typeof RECORD_FIELDS)[number],
    string | null
  >;
  const record: TaskRecord = {
    taskId: String(field.id),
    status: field.status as TaskStatus,
    createdAt: Number(field.created),
    lastUpdatedAt: Number(field.updated),
    ttl: Number(field.ttl),
    pollInterval: Number(field.poll),
    owner: String(field.owner),
    sessionId: String(field.session),
    toolName: String(field.tool),
    outcomeBytes: Number(field.bytes),
  };
  if (field.message !== null) record.statusMessage = field.message;
  if (field.identity !== null) record.identity = field.identity;
  const outcome = values[RECORD_FIELDS.length];
  if (typeof outcome === 'string') record.outcome = JSON.parse(outcome) as TaskOutcome;
  return { record, position: Number(field.pos) };
}

/** The URL without its credentials, for messages and logs. */
export function redact(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.username = '';
    parsed.password = '';
    return parsed.toString();
  } catch {
    return '(an unparsable URL)';
  }
}

async function quit(connection: Redis): Promise<void> {
  if (connection.status === 'ready') {
    try {
      await connection.quit();
      return;
    } catch {
      // Fall through: drop the connection instead.
    }
  }
  connection.disconnect();
}

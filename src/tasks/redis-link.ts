/**
 * The Redis store's two connections: `cmd` runs the scripts of redis-scripts.ts, `sub` listens on the
 * events channel, the channel of input answers and this replica's own channel (`<prefix>relay:<replica>`). It knows whether Redis can be reached and turns every way of not reaching it into
 * TaskStoreUnavailableError, so that no command waits for a connection.
 *
 * - No offline queue, no resend: while Redis is unreachable every command rejects at once, naming the
 *   server and the last connection error; a command in flight when the connection drops is not resent.
 *   ioredis keeps reconnecting (every ≤ 2 s).
 * - A command that times out while the connection stays up (a stalled Redis) counts as an outage until
 *   Redis answers again.
 * - `up` is called each time Redis is there again after being away (reconnected and subscribed, or
 *   answering after a stall), and once at the start: whatever was published meanwhile is lost.
 */
import { createHash } from 'node:crypto';
import { EventEmitter, once } from 'node:events';
import { Redis, ReplyError } from 'ioredis';
import type { Logger } from 'pino';
import { TaskStoreUnavailableError } from './errors.js';
import { SCRIPTS, SHARED_KEYS, type ScriptName } from './redis-scripts.js';

export interface RedisLinkOptions {
  url: string;
  password?: string | undefined;
  db?: number | undefined;
  prefix: string;
  /** This store object among the replicas: its own channel is named after it. */
  replica: string;
  /** The clock the scripts use, for tests; without it, Redis's own. */
  now?: (() => number) | undefined;
  connectTimeoutMs: number;
  commandTimeoutMs: number;
  logger?: Pick<Logger, 'warn' | 'info'> | undefined;
}

export interface RedisLinkEvents {
  /** A message on the events channel. */
  message(message: string): void;
  /** A message on the channel of input answers (`<prefix>inputs`). */
  input(message: string): void;
  /** A message on this replica's own channel. */
  relayed(message: string): void;
  /** Redis is there (again). */
  up(): void;
}

/** What every script returns: a code ('ok' or a refusal), then what it found. */
export type Reply = [code: string, ...rest: unknown[]];

const MAX_RECONNECT_DELAY_MS = 2_000;
/** What ioredis rejects a command with once commandTimeout has passed. */
const COMMAND_TIMED_OUT = 'Command timed out';
/** Replies of Redis that mean "not now" rather than "your script is wrong". */
const UNAVAILABLE_REPLY = /^(OOM|LOADING|READONLY|MASTERDOWN|BUSY|NOREPLICAS|CLUSTERDOWN|TRYAGAIN)\b/;
const SHAS = Object.fromEntries(
  Object.entries(SCRIPTS).map(([name, lua]) => [name, createHash('sha1').update(lua).digest('hex')]),
) as Record<ScriptName, string>;

export class RedisLink {
  readonly cmd: Redis;
  readonly sub: Redis;
  private readonly channel: string;
  readonly inputChannel: string;
  readonly relayChannel: string;
  /** The server, without credentials, for messages and logs. */
  private readonly where: string;
  private readonly sharedKeys: string[];
  /** Emits 'change' when the connections' state changes, for ready(). */
  private readonly state = new EventEmitter();
  private subscribed = false;
  private lastError: Error | undefined;
  private lost = false;
  /** A command timed out while the connection stayed up: Redis is treated as down until it answers again. */
  private stalled = false;
  private closed = false;

  constructor(
    private readonly options: RedisLinkOptions,
    private readonly events: RedisLinkEvents,
  ) {
    this.channel = `${options.prefix}events`;
    this.inputChannel = `${options.prefix}inputs`;
    this.relayChannel = relayChannelOf(options.prefix, options.replica);
    this.sharedKeys = SHARED_KEYS.map((name) => options.prefix + name);
    this.where = redact(options.url);
    const common = {
      connectTimeout: options.connectTimeoutMs,
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
      commandTimeout: options.commandTimeoutMs,
    });
    this.sub = new Redis(options.url, { ...common, connectionName: 'taskgate-events' });
    for (const connection of [this.cmd, this.sub]) {
      connection.on('error', (error: Error) => (this.lastError = error));
      connection.on('close', () => this.connectionLost());
    }
    this.cmd.on('ready', () => this.connectionUp());
    this.sub.on('ready', () => void this.subscribe());
    this.sub.on('message', (channel: string, message: string) => {
      if (channel === this.channel) events.message(message);
      else if (channel === this.inputChannel) events.input(message);
      else if (channel === this.relayChannel) events.relayed(message);
    });
  }

  /** Whether commands can be sent now (the connection is up; Redis may still be stalled). */
  get connected(): boolean {
    return this.cmd.status === 'ready';
  }

  /** Whether both connections are up and the events are heard. */
  get listening(): boolean {
    return this.connected && this.subscribed;
  }

  /** Whether the last command timed out on a live connection and nothing has answered since. */
  get isStalled(): boolean {
    return this.stalled;
  }

  /** Resolves once both connections are up and the events are subscribed; TaskStoreUnavailableError if not within the time. */
  async ready(timeoutMs: number): Promise<void> {
    const signal = AbortSignal.timeout(timeoutMs);
    while (!this.listening) {
      if (this.closed) throw this.closedError();
      try {
        await once(this.state, 'change', { signal });
      } catch {
        const why = this.lastError ? ` (${this.lastError.message})` : '';
        throw this.unavailable(`did not connect within ${timeoutMs} ms${why}`);
      }
    }
  }

  /** Runs a script unless closed; a lost or refused connection becomes TaskStoreUnavailableError. */
  run(name: ScriptName, keys: string[], args: (string | Buffer)[]): Promise<Reply> {
    return this.redis(() => this.script(name, keys, args));
  }

  /** Like run, with the reply's strings read as the Buffers they came as (a big outcome is not decoded). */
  runForBytes(name: ScriptName, keys: string[], args: (string | Buffer)[]): Promise<unknown[]> {
    return this.redis(() => this.script(name, keys, args, true));
  }

  /**
   * Runs a script even while closing (by its SHA, loading it on NOSCRIPT), with the shared keys and
   * arguments first.
   */
  async script(name: ScriptName, keys: string[], args: (string | Buffer)[], asBytes = false): Promise<Reply> {
    const now = this.options.now ? String(this.options.now()) : '';
    const all = [...this.sharedKeys, ...keys];
    const argv = [this.options.prefix, now, ...args];
    const call = (command: string, script: string): Promise<unknown> =>
      asBytes
        ? this.cmd.callBuffer(command, script, all.length, ...all, ...argv)
        : this.cmd.call(command, script, all.length, ...all, ...argv);
    try {
      return (await call('evalsha', SHAS[name])) as Reply;
    } catch (error) {
      if (!(error instanceof ReplyError) || !(error as Error).message.startsWith('NOSCRIPT')) throw error;
      return (await call('eval', SCRIPTS[name])) as Reply;
    }
  }

  /** Sends commands unless closed, and turns a lost or refused connection into TaskStoreUnavailableError. */
  async redis<T>(send: () => Promise<T>): Promise<T> {
    if (this.closed) throw this.closedError();
    try {
      const value = await send();
      if (this.stalled) this.answersAgain();
      return value;
    } catch (error) {
      if (error instanceof ReplyError && !UNAVAILABLE_REPLY.test((error as Error).message)) throw error;
      if (this.closed) throw this.closedError();
      if (this.connected && (error as Error).message === COMMAND_TIMED_OUT) this.stall();
      throw this.unavailable(
        this.connected
          ? `failed: ${(error as Error).message}`
          : `is not connected (${this.cmd.status}${this.lastError ? `: ${this.lastError.message}` : ''})`,
        error,
      );
    }
  }

  /** From now on every command is refused as closed; `quit` then ends the connections. */
  beginClose(): void {
    this.closed = true;
    this.state.emit('change');
  }

  async quit(): Promise<void> {
    await Promise.all([quit(this.cmd), quit(this.sub)]);
  }

  unavailable(what: string, cause?: unknown): TaskStoreUnavailableError {
    return new TaskStoreUnavailableError(`Task store unavailable: Redis at ${this.where} ${what}`, { cause });
  }

  closedError(): TaskStoreUnavailableError {
    return new TaskStoreUnavailableError(`Task store closed (Redis at ${this.where})`);
  }

  private async subscribe(): Promise<void> {
    if (this.closed) return;
    try {
      await this.sub.subscribe(this.channel, this.inputChannel, this.relayChannel);
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
    if (this.listening) {
      this.stalled = false;
      if (this.lost) {
        this.lost = false;
        this.options.logger?.info({ redis: this.where }, 'task store: Redis connection restored');
      }
      this.events.up();
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
    this.events.up();
  }

  private connectionLost(): void {
    if (this.sub.status !== 'ready') this.subscribed = false;
    if (!this.lost && !this.closed) {
      this.lost = true;
      this.options.logger?.warn(
        { redis: this.where, err: this.lastError?.message },
        'task store: Redis unreachable; reconnecting',
      );
    }
    this.state.emit('change');
  }
}

/** The channel a replica hears requests relayed to it, and answers to those it relayed, on. */
export const relayChannelOf = (prefix: string, replica: string): string => `${prefix}relay:${replica}`;

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

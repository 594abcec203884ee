/**
 * A stdio upstream that comes back after it crashes. Once the client's initialize has been answered, a
 * child that exits is started again after a delay that doubles with each crash in a row up to a cap,
 * and is given the same handshake before anything else (a 2026-07-28 server, which has none, the
 * server/discover that found its era). A child that stays up for STABLE_MS ends the
 * streak: a server that crashes now and then is back after the first delay, one that cannot stay up is
 * retried ever more slowly and reported, never spun.
 *
 * The session hears `closed` with `reopening` when the child goes and `reopened` once the new one has
 * answered initialize as the first did. What it sends in between is held for the new child (bounded in
 * count and bytes); a request held longer than `holdRequests`, or one that does not fit, is answered here
 * with an error that says the server is being restarted. A child that exits before its first initialize
 * answer is not restarted: that is a server that cannot start, and the session says so. Neither is one
 * whose restart answers initialize differently: the client was told what the first one can do.
 */
import type { Logger } from 'pino';
import { isObject, type JsonObject, type RequestId } from '../protocol/messages.js';
import { ErrorCode } from '../protocol/errors.js';
import { parseFrame } from '../protocol/frames.js';
import { backoffDelay } from './backoff.js';
import type { Pieces } from '../protocol/pieces.js';
import type { Scanned } from '../protocol/scanned.js';
import { deliverPieces, type Arrival, type Channel, type ChannelHandlers } from './channel.js';
import { promiseOf } from './handshake-promise.js';
import { spawnStdioUpstream, type StdioUpstream, type UpstreamCommand } from './stdio-upstream.js';
import type { Flow } from './valve.js';

export interface RestartPolicy {
  enabled: boolean;
  /** Before the first restart of a streak; doubled for each crash in a row. */
  delay: number;
  maxDelay: number;
  /** How long a request sent while the child is down waits for the next one. */
  holdRequests: number;
}

export interface SupervisionHooks {
  /** Told each time a new child has been started. */
  restarted?: () => void;
  /** Asked before each restart: false once taskgate is shutting down. */
  mayRestart?: () => boolean;
  /** Backpressure with the client's pipes, when the client is on stdio too (valve.ts); each child gets it. */
  flow?: Flow;
}

/**
 * serving: messages flow to the child (the first one from the start, a restarted one once it has answered
 * the replayed initialize) · waiting: the child exited, a restart is due · spawning · replaying: the new
 * child has the client's initialize, its answer is awaited · stopped: no child will follow.
 */
type Phase = 'serving' | 'waiting' | 'spawning' | 'replaying' | 'stopped';

/**
 * What the first child was told and answered in the handshake: the client's initialize, or for a
 * 2026-07-28 server, which has no handshake, the server/discover that found its era.
 */
interface Handshake {
  method: 'initialize' | 'server/discover';
  params: JsonObject;
  /** protocolVersion and capabilities of its answer, to hold a restarted child to. */
  promised: string;
}

/** A child that ran this long before it crashed starts a new streak. */
const STABLE_MS = 30_000;
/** From this many crashes in a row on, each one is logged as an error. */
const CRASH_LOOP = 5;
/** A restarted child that does not answer initialize within this is killed and counts as a crash. */
const INITIALIZE_TIMEOUT_MS = 30_000;
/** Messages held for a restarted child at most (and max-message-bytes of them); past that they are dropped. */
const MAX_HELD = 1_000;
/** A message kept for the child to come; a request has its hold timer. */
interface Held {
  raw: Buffer | string;
  bytes: number;
  request?: { id: RequestId; method: string };
  timer?: NodeJS.Timeout;
}

/** The id of the replayed initialize: a string the session never uses for its own requests. */
const REPLAY_ID = 'taskgate:replayed-initialize';
const INITIALIZED = JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' });

export class SupervisedStdioUpstream implements Channel {
  private handlers: ChannelHandlers | undefined;
  private phase: Phase = 'serving';
  /** The client's initialize as it went to the first child, until that child answers it. */
  private initializing: { id: RequestId; method: Handshake['method']; params: JsonObject } | undefined;
  private handshake: Handshake | undefined;
  /** The client's own notifications/initialized has gone out (to the first child, or been dropped). */
  private clientInitializedSeen = false;
  private servingSince = performance.now();
  private crashesInARow = 0;
  /** Children started after the first. */
  private restarts = 0;
  private restartTimer: NodeJS.Timeout | undefined;
  private replayTimer: NodeJS.Timeout | undefined;
  private spawning: Promise<void> | undefined;
  private readonly held: Held[] = [];
  private heldBytes = 0;
  private droppedWhileDown = 0;
  /** Why the last child went, for the requests that wait for the next. */
  private downReason = '';
  /** The exited child being made sure of (stopped), before another takes its place. */
  private exiting: Promise<void> | undefined;
  /**
   * The owner closed or stopped it: the child's exit that follows (or that comes while it is being
   * stopped) is not reported, the owner knows.
   */
  private closedByOwner = false;

  private constructor(
    private child: StdioUpstream,
    private readonly command: UpstreamCommand,
    private readonly policy: RestartPolicy,
    private readonly maxMessageBytes: number,
    private readonly logger: Logger,
    private readonly hooks: SupervisionHooks,
  ) {}

  static async start(
    command: UpstreamCommand,
    policy: RestartPolicy,
    maxMessageBytes: number,
    logger: Logger,
    hooks: SupervisionHooks = {},
  ): Promise<SupervisedStdioUpstream> {
    const child = await spawnStdioUpstream(command, maxMessageBytes, logger, hooks.flow);
    logger.info({ pid: child.pid, command: command.command }, 'upstream server started');
    return new SupervisedStdioUpstream(child, command, policy, maxMessageBytes, logger, hooks);
  }

  start(handlers: ChannelHandlers): void {
    this.handlers = handlers;
    this.attach(this.child);
  }

  sendRaw(raw: Buffer | string): void {
    if (!this.clientInitializedSeen && this.noteOutgoing(raw) === 'drop') return;
    if (this.phase === 'serving') return this.child.channel.sendRaw(raw);
    if (this.phase === 'stopped') return;
    this.hold(raw);
  }

  /** A message for the child to come: kept (a request for a bounded time), or refused when there is no room. */
  private hold(raw: Buffer | string): void {
    const message = parse(raw);
    const id = message?.id;
    const request =
      typeof message?.method === 'string' && (typeof id === 'string' || typeof id === 'number')
        ? { id, method: message.method }
        : undefined;
    if (message?.method === 'notifications/cancelled' && this.withdraw(message.params)) return;
    const bytes = typeof raw === 'string' ? Buffer.byteLength(raw) : raw.length;
    if (this.held.length >= MAX_HELD || this.heldBytes + bytes > this.maxMessageBytes) {
      if (request === undefined) this.droppedWhileDown++;
      else this.refuseHeld(request, `and ${this.held.length} messages already wait for it`);
      return;
    }
    const held: Held = { raw, bytes };
    if (request !== undefined) {
      held.request = request;
      held.timer = setTimeout(() => {
        this.unhold(held);
        this.refuseHeld(request, `and was not back within ${this.policy.holdRequests} ms`);
      }, this.policy.holdRequests).unref();
    }
    this.held.push(held);
    this.heldBytes += bytes;
  }

  /** A cancel for a request still held: neither goes to the new child. */
  private withdraw(params: unknown): boolean {
    const requestId = isObject(params) ? params.requestId : undefined;
    const held = this.held.find((entry) => entry.request !== undefined && entry.request.id === requestId);
    if (held === undefined) return false;
    this.unhold(held);
    return true;
  }

  private unhold(held: Held): void {
    clearTimeout(held.timer);
    const at = this.held.indexOf(held);
    if (at === -1) return;
    this.held.splice(at, 1);
    this.heldBytes -= held.bytes;
  }

  /** Answers a request the new child will not get, as if the child had (it goes the usual way back). */
  private refuseHeld(request: { id: RequestId; method: string }, why: string): void {
    const answer = {
      jsonrpc: '2.0',
      id: request.id,
      error: {
        code: ErrorCode.UpstreamUnavailable,
        message: `Upstream server unavailable: ${this.downReason}, and is being restarted, ${why}`,
      },
    };
    this.logger.warn(
      { id: request.id },
      `${request.method} was refused while the upstream server restarts: ${why}`,
    );
    // Not from within the sender's own call: it may not have finished its bookkeeping.
    queueMicrotask(() => this.handlers?.message(Buffer.from(JSON.stringify(answer))));
  }

  send(message: object): void {
    this.sendRaw(JSON.stringify(message));
  }

  /** Ends the child's input; it is not restarted once it exits, and its exit is not reported. */
  async close(): Promise<void> {
    this.closedByOwner = true;
    this.halt();
    await this.spawning;
    await this.child.channel.close();
  }

  /**
   * Ends the child and its process group, by signals if they linger (and makes sure of a child that had
   * already exited); it is not restarted, and its exit is not reported.
   */
  async stop(): Promise<void> {
    this.closedByOwner = true;
    this.halt();
    await this.spawning;
    await Promise.all([this.exiting, this.child.stop()]);
  }

  /**
   * A fresh child in place of one sent something it may have taken as its choice of era (a
   * server/discover it never answered): the new one gets the client's handshake as its first message.
   * Only before any handshake, so there is nothing to replay; a child that cannot be started leaves the
   * old one serving.
   */
  replaceBeforeHandshake(reason: string): Promise<void> {
    if (this.phase !== 'serving' || this.handshake !== undefined || this.restarts > 0)
      return Promise.resolve();
    this.phase = 'spawning';
    this.spawning = this.replace(reason).finally(() => (this.spawning = undefined));
    return this.spawning;
  }

  private async replace(reason: string): Promise<void> {
    const old = this.child;
    let child: StdioUpstream;
    try {
      child = await spawnStdioUpstream(this.command, this.maxMessageBytes, this.logger, this.hooks.flow);
    } catch (error) {
      if (this.phase !== 'spawning') return;
      this.logger.warn(
        `${reason}, and a fresh upstream server could not be started (${(error as Error).message}): keeping the first`,
      );
      this.phase = 'serving';
      for (const raw of this.dropHeld()) old.channel.sendRaw(raw);
      return;
    }
    if (this.phase !== 'spawning') return child.stop();
    this.child = child;
    this.initializing = undefined;
    this.phase = 'serving';
    this.servingSince = performance.now();
    this.logger.info(
      { pid: child.pid, replaced: old.pid },
      `${reason}: a fresh upstream server takes the 2025 handshake`,
    );
    this.attach(child);
    for (const raw of this.dropHeld()) child.channel.sendRaw(raw);
    this.exiting = old.stop();
    await this.exiting;
  }

  private halt(): void {
    this.phase = 'stopped';
    this.clearTimers();
    this.dropHeld();
  }

  /** Empties the held messages, returning them, and says once how many did not fit. */
  private dropHeld(): (Buffer | string)[] {
    for (const held of this.held) clearTimeout(held.timer);
    if (this.droppedWhileDown > 0) {
      this.logger.warn(
        `${this.droppedWhileDown} messages for the upstream server were dropped while it was down (more than ${MAX_HELD} or max-message-bytes)`,
      );
    }
    this.droppedWhileDown = this.heldBytes = 0;
    return this.held.splice(0).map((held) => held.raw);
  }

  private clearTimers(): void {
    clearTimeout(this.restartTimer);
    clearTimeout(this.replayTimer);
    this.restartTimer = this.replayTimer = undefined;
  }

  private attach(child: StdioUpstream): void {
    const message = (raw: Buffer, arrival: Arrival | undefined): void => {
      if (child !== this.child) return;
      if (this.phase === 'replaying') return this.duringReplay(child, raw, arrival);
      // A child given up on (its replay timed out) may still talk while it is stopped: nobody listens.
      if (this.phase !== 'serving') return;
      if (this.handshake === undefined) this.noteIncoming(raw);
      this.handlers?.message(raw, arrival);
    };
    const handlersOf = (): ChannelHandlers | undefined => this.handlers;
    const pieces = (line: Pieces, scanned: Scanned, arrival?: Arrival): void => {
      const handlers = this.handlers;
      if (child !== this.child || this.phase !== 'serving' || this.handshake === undefined || !handlers) {
        return message(line.join(), arrival);
      }
      deliverPieces(handlers, line, scanned, arrival);
    };
    child.channel.start({
      message,
      // Serving, with the handshake noted, to a receiver that takes pieces: a message goes on as it came.
      get pieces() {
        return handlersOf()?.pieces === undefined ? undefined : pieces;
      },
      malformed: (error, id) => {
        if (child === this.child) this.handlers?.malformed(error, id);
      },
      closed: ({ reason }) => {
        if (child === this.child) this.childExited(child, reason);
      },
    });
  }

  /**
   * Watches the client's handshake go out: keeps its initialize, and once a restarted child has been given
   * notifications/initialized already, drops the client's own (sent late, after a crash).
   */
  private noteOutgoing(raw: Buffer | string): 'drop' | undefined {
    // A search is cheaper than a parse, for the few messages before the client's initialized.
    if (!raw.includes('initialize') && !raw.includes('server/discover')) return undefined;
    const message = parse(raw);
    if (
      (message?.method === 'initialize' || message?.method === 'server/discover') &&
      (typeof message.id === 'string' || typeof message.id === 'number')
    ) {
      const params = isObject(message.params) ? message.params : {};
      this.initializing = { id: message.id, method: message.method, params };
    } else if (message?.method === 'notifications/initialized') {
      this.clientInitializedSeen = true;
      // A restarted child is given its own (and is being given it while this one is held).
      if (this.restarts > 0 || this.phase !== 'serving') return 'drop';
    }
    return undefined;
  }

  /** Watches for the first child's answer to the client's initialize. */
  private noteIncoming(raw: Buffer): void {
    const initializing = this.initializing;
    if (initializing === undefined) return;
    const message = parse(raw);
    if (message === undefined || message.id !== initializing.id || 'method' in message) return;
    const { method, params } = initializing;
    // A server/discover answered with an error is a 2025 server's: its initialize is the handshake.
    if (isObject(message.result)) this.handshake = { method, params, promised: promiseOf(message.result) };
    this.initializing = undefined;
  }

  private childExited(child: StdioUpstream, reason: string): void {
    this.clearTimers();
    // Its output ended or broke: make sure the process is gone too before another takes its place.
    this.exiting = child.stop();
    const restart =
      this.phase !== 'stopped' &&
      this.policy.enabled &&
      this.handshake !== undefined &&
      (this.hooks.mayRestart?.() ?? true);
    if (!restart) return this.giveUp(reason);
    const wasServing = this.phase === 'serving';
    this.downReason = reason;
    if (wasServing && performance.now() - this.servingSince >= STABLE_MS) this.crashesInARow = 0;
    this.phase = 'waiting';
    this.scheduleRestart(reason);
    if (wasServing) this.handlers?.closed({ reason, reopening: true });
  }

  /**
   * No child will follow: the session hears the closure as final, and nothing more after it (nothing at
   * all when the owner closed or stopped it: the exit is its own doing).
   */
  private giveUp(reason: string): void {
    this.halt();
    const handlers = this.handlers;
    this.handlers = undefined;
    if (!this.closedByOwner) handlers?.closed({ reason });
  }

  private scheduleRestart(reason: string): void {
    this.crashesInARow++;
    const delay = backoffDelay(this.policy.delay, this.policy.maxDelay, this.crashesInARow - 1);
    const details = { crashesInARow: this.crashesInARow, delayMs: delay };
    if (this.crashesInARow >= CRASH_LOOP) {
      this.logger.error(
        details,
        `upstream server is crash-looping (${reason}; ${this.crashesInARow} crashes in a row): next restart in ${delay} ms`,
      );
    } else {
      this.logger.warn(details, `${reason}: restarting it in ${delay} ms`);
    }
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      this.spawning = this.restart().finally(() => (this.spawning = undefined));
    }, delay).unref();
  }

  private async restart(): Promise<void> {
    const handshake = this.handshake;
    if (this.phase !== 'waiting' || handshake === undefined) return;
    if (!(this.hooks.mayRestart?.() ?? true)) return this.giveUp('taskgate is shutting down');
    this.phase = 'spawning';
    await this.exiting;
    if (this.phase !== 'spawning') return;
    let child: StdioUpstream;
    try {
      child = await spawnStdioUpstream(this.command, this.maxMessageBytes, this.logger, this.hooks.flow);
    } catch (error) {
      if (this.phase !== 'spawning') return;
      this.phase = 'waiting';
      return this.scheduleRestart((error as Error).message);
    }
    if (this.phase !== 'spawning') return child.stop();
    this.hooks.restarted?.();
    this.restarts++;
    this.child = child;
    this.phase = 'replaying';
    this.logger.info(
      { pid: child.pid, command: this.command.command, crashesInARow: this.crashesInARow },
      'upstream server restarted; replaying the initialize handshake',
    );
    this.attach(child);
    child.channel.send({ jsonrpc: '2.0', id: REPLAY_ID, method: handshake.method, params: handshake.params });
    this.replayTimer = setTimeout(() => {
      this.replayTimer = undefined;
      this.logger.error(
        `the restarted upstream server did not answer initialize in ${INITIALIZE_TIMEOUT_MS} ms: stopping it, to try again`,
      );
      // Not replaying any more: a late answer is ignored; its exit schedules the next attempt.
      this.phase = 'waiting';
      void child.stop();
    }, INITIALIZE_TIMEOUT_MS).unref();
  }

  /**
   * What a restarted child says before it has answered the replayed initialize: the answer is acted on,
   * notifications pass, and its requests are answered here (a ping) or refused, so that nothing it asks
   * reaches the client while it may yet die and be replaced.
   */
  private duringReplay(child: StdioUpstream, raw: Buffer, arrival: Arrival | undefined): void {
    const message = parse(raw);
    if (message === undefined) return;
    const id = message.id;
    if (typeof message.method !== 'string') {
      if (id === REPLAY_ID) this.replayAnswered(child, message);
      return;
    }
    if (typeof id !== 'string' && typeof id !== 'number') return this.handlers?.message(raw, arrival);
    child.channel.send(
      message.method === 'ping'
        ? { jsonrpc: '2.0', id, result: {} }
        : {
            jsonrpc: '2.0',
            id,
            error: { code: ErrorCode.InvalidRequest, message: 'The initialize handshake is not over yet' },
          },
    );
  }

  private replayAnswered(child: StdioUpstream, message: JsonObject): void {
    clearTimeout(this.replayTimer);
    this.replayTimer = undefined;
    if (!isObject(message.result)) {
      this.logger.error(
        { error: message.error },
        'the restarted upstream server refused the initialize the first one took: stopping it, to try again',
      );
      this.phase = 'waiting';
      void child.stop();
      return;
    }
    if (promiseOf(message.result) !== this.handshake?.promised) {
      const reason =
        'the restarted upstream server answered initialize differently from the first (another protocol version or other capabilities), so it is left down';
      this.logger.error({ answered: message.result }, reason);
      void child.stop();
      return this.giveUp(reason);
    }
    if (this.handshake?.method === 'initialize') child.channel.sendRaw(INITIALIZED);
    this.phase = 'serving';
    this.servingSince = performance.now();
    this.logger.info({ pid: child.pid }, 'upstream server is serving again');
    // The session's own restoring (the client's log level) goes ahead of what waited.
    const held = this.dropHeld();
    this.handlers?.reopened?.();
    for (const raw of held) child.channel.sendRaw(raw);
  }
}

function parse(raw: Buffer | string): JsonObject | undefined {
  try {
    // Bounded like every parse: a deep initialize result must not overflow the stack when it is compared.
    const value = parseFrame(typeof raw === 'string' ? Buffer.from(raw) : raw, 'the upstream server');
    return isObject(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

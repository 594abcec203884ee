/**
 * A stdio upstream that comes back after it crashes. Once the handshake is done (the client's
 * notifications/initialized has gone out), a child that exits is started again after a delay that
 * doubles with each crash in a row up to a cap, and is given the same handshake before anything else.
 * A child that stays up for STABLE_MS ends the streak, so a server that crashes now and then restarts at
 * once while one that cannot stay up is retried ever more slowly, and reported, never spun.
 *
 * The session hears `closed` with `reopening` when the child goes and `reopened` once the new one has
 * answered initialize; in between it answers calls itself. A child that exits before the handshake is
 * done is not restarted: that is a server that cannot start, and the session says so.
 */
import type { Logger } from 'pino';
import { isObject, type JsonObject } from '../protocol/messages.js';
import type { Channel, ChannelHandlers } from './channel.js';
import { spawnStdioUpstream, type StdioUpstream, type UpstreamCommand } from './stdio-upstream.js';

export interface RestartPolicy {
  enabled: boolean;
  /** Before the first restart of a streak; doubled for each crash in a row. */
  delay: number;
  maxDelay: number;
}

interface Handshake {
  initializeParams: JsonObject;
  /** The client's notifications/initialized, as it was sent. */
  initialized: string;
}

/** A child that ran this long before it crashed starts a new streak. */
const STABLE_MS = 30_000;
/** From this many crashes in a row on, each one is logged as an error. */
const CRASH_LOOP = 5;
/** A restarted child that does not answer initialize within this is killed and counts as a crash. */
const INITIALIZE_TIMEOUT_MS = 30_000;
/** The id of the replayed initialize: a string the session never uses for its own requests. */
const REPLAY_ID = 'taskgate:replayed-initialize';

export class SupervisedStdioUpstream implements Channel {
  private handlers: ChannelHandlers | undefined;
  /** The client's initialize params, while its notifications/initialized has yet to go out. */
  private initializeParams: JsonObject | undefined;
  /** The handshake the first child was given, given again to each new one. */
  private handshake: Handshake | undefined;
  /** A child is up and has answered initialize: messages flow both ways. */
  private serving = true;
  private servingSince = performance.now();
  private crashesInARow = 0;
  private restartTimer: NodeJS.Timeout | undefined;
  private stopped = false;

  private constructor(
    private child: StdioUpstream,
    private readonly command: UpstreamCommand,
    private readonly policy: RestartPolicy,
    private readonly maxMessageBytes: number,
    private readonly logger: Logger,
    private readonly onRestart: () => void,
  ) {}

  static async start(
    command: UpstreamCommand,
    policy: RestartPolicy,
    maxMessageBytes: number,
    logger: Logger,
    onRestart: () => void,
  ): Promise<SupervisedStdioUpstream> {
    const child = await spawnStdioUpstream(command, maxMessageBytes, logger);
    logger.info({ pid: child.pid, command: command.command }, 'upstream server started');
    return new SupervisedStdioUpstream(child, command, policy, maxMessageBytes, logger, onRestart);
  }

  start(handlers: ChannelHandlers): void {
    this.handlers = handlers;
    this.attach(this.child);
  }

  sendRaw(raw: Buffer | string): void {
    if (this.handshake === undefined) this.noteHandshake(raw);
    this.child.channel.sendRaw(raw);
  }

  send(message: object): void {
    this.sendRaw(JSON.stringify(message));
  }

  /** Ends the child's input; it is not restarted once it exits. */
  async close(): Promise<void> {
    this.halt();
    await this.child.channel.close();
  }

  /** Ends the child, by signals if it lingers; it is not restarted. */
  async stop(): Promise<void> {
    this.halt();
    await this.child.stop();
  }

  private halt(): void {
    this.stopped = true;
    clearTimeout(this.restartTimer);
  }

  /** Wires a child to the session; a restarted one is given the handshake first. */
  private attach(child: StdioUpstream, replayed?: Handshake): void {
    child.channel.start({
      message: (raw, arrival) => {
        if (replayed && !this.serving && child === this.child && this.answersReplay(child, raw, replayed)) {
          return;
        }
        this.handlers?.message(raw, arrival);
      },
      malformed: (error, id) => this.handlers?.malformed(error, id),
      closed: ({ reason }) => {
        if (child === this.child) this.childExited(reason);
      },
    });
  }

  /** Keeps the client's initialize and initialized as they go to the first child. */
  private noteHandshake(raw: Buffer | string): void {
    // A search is cheaper than a parse, for a client that is slow to send notifications/initialized.
    if (!raw.includes('initialize')) return;
    let message: unknown;
    try {
      message = JSON.parse(raw.toString());
    } catch {
      return;
    }
    if (!isObject(message)) return;
    if (message.method === 'initialize' && 'id' in message) {
      this.initializeParams = isObject(message.params) ? message.params : {};
    } else if (message.method === 'notifications/initialized' && this.initializeParams !== undefined) {
      this.handshake = { initializeParams: this.initializeParams, initialized: raw.toString() };
    }
  }

  private childExited(reason: string): void {
    const handshake = this.handshake;
    if (this.stopped || !this.policy.enabled || handshake === undefined) {
      this.handlers?.closed({ reason });
      return;
    }
    const wasServing = this.serving;
    this.serving = false;
    if (wasServing && performance.now() - this.servingSince >= STABLE_MS) this.crashesInARow = 0;
    this.scheduleRestart(reason, handshake);
    if (wasServing) this.handlers?.closed({ reason, reopening: true });
  }

  private scheduleRestart(reason: string, handshake: Handshake): void {
    this.crashesInARow++;
    const delay = Math.min(this.policy.delay * 2 ** (this.crashesInARow - 1), this.policy.maxDelay);
    const details = { crashesInARow: this.crashesInARow, delayMs: delay };
    if (this.crashesInARow >= CRASH_LOOP) {
      this.logger.error(
        details,
        `upstream server is crash-looping (${reason}; ${this.crashesInARow} crashes in a row): next restart in ${delay} ms`,
      );
    } else {
      this.logger.warn(details, `${reason}: restarting it in ${delay} ms`);
    }
    this.restartTimer = setTimeout(() => void this.restart(handshake), delay);
  }

  private async restart(handshake: Handshake): Promise<void> {
    this.restartTimer = undefined;
    this.onRestart();
    let child: StdioUpstream;
    try {
      child = await spawnStdioUpstream(this.command, this.maxMessageBytes, this.logger);
    } catch (error) {
      if (!this.stopped) this.scheduleRestart((error as Error).message, handshake);
      return;
    }
    if (this.stopped) return void child.stop();
    this.child = child;
    this.logger.info(
      { pid: child.pid, command: this.command.command, crashesInARow: this.crashesInARow },
      'upstream server restarted; replaying the initialize handshake',
    );
    this.attach(child, handshake);
    child.channel.send({
      jsonrpc: '2.0',
      id: REPLAY_ID,
      method: 'initialize',
      params: handshake.initializeParams,
    });
    this.restartTimer = setTimeout(() => {
      this.logger.error(
        `the restarted upstream server did not answer initialize in ${INITIALIZE_TIMEOUT_MS} ms`,
      );
      void child.stop();
    }, INITIALIZE_TIMEOUT_MS);
  }

  /** Whether this message from a restarted child answers the replayed initialize (and acts on it). */
  private answersReplay(child: StdioUpstream, raw: Buffer, handshake: Handshake): boolean {
    let message: unknown;
    try {
      message = JSON.parse(raw.toString());
    } catch {
      return false;
    }
    if (!isObject(message) || message.id !== REPLAY_ID || 'method' in message) return false;
    clearTimeout(this.restartTimer);
    if (!isObject(message.result)) {
      this.logger.error(
        { error: message.error },
        'the restarted upstream server refused the initialize it was given before: stopping it',
      );
      void child.stop();
      return true;
    }
    child.channel.sendRaw(handshake.initialized);
    this.serving = true;
    this.servingSince = performance.now();
    this.logger.info({ pid: child.pid }, 'upstream server is serving again');
    this.handlers?.reopened?.();
    return true;
  }
}

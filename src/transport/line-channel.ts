/**
 * A Channel over a pair of byte streams carrying newline-delimited JSON (the MCP stdio transport), used
 * both for taskgate's own stdin/stdout and for the pipes of an upstream child process.
 */
import type { Readable, Writable } from 'node:stream';
import type { Pieces } from '../protocol/pieces.js';
import type { Channel, ChannelHandlers, CloseInfo } from './channel.js';
import { idOfOversized } from '../protocol/frames.js';
import { LineFramer, OversizedFrameError, looksLikeResponse } from './framing.js';
import { PausableInput, type Flow } from './valve.js';

/** Written after every message: one Buffer for all, where the string '\n' was encoded into a new one each time. */
const NEWLINE = Buffer.from('\n');

export class LineChannel implements Channel {
  private handlers: ChannelHandlers | undefined;
  private closed = false;
  /** The owner closed it: from then on nothing is reported as `closed` (the owner knows). */
  private closedByOwner = false;
  /** Writes are held until the end of the tick (see sendRaw). */
  private corked = false;
  /** Undoes this channel's input feeding its valves. */
  private unfeed: (() => void)[] = [];

  constructor(
    private readonly input: Readable,
    private readonly output: Writable,
    private readonly maxMessageBytes: number,
    private readonly label: string,
    /** False when the owner reports the closure itself, with a better reason (a child's exit status). */
    private readonly closeOnEnd = true,
    private readonly flow: Flow = {},
  ) {}

  start(handlers: ChannelHandlers): void {
    this.handlers = handlers;
    const handlersOf = (): ChannelHandlers | undefined => this.handlers;
    const framer = new LineFramer(this.maxMessageBytes, {
      line: (bytes) => this.handlers?.message(bytes),
      oversized: (bytes, head, tail) =>
        handlers.malformed(
          new OversizedFrameError(
            `Message of ${bytes} bytes from ${this.label} exceeds the limit of ${this.maxMessageBytes} bytes (max-message-bytes); it was dropped`,
            looksLikeResponse(head, tail),
          ),
          idOfOversized(head, tail),
        ),
      // Asked as each chunk comes: a line is scanned in pieces only while its receiver takes them.
      get pieces() {
        const receiver = handlersOf();
        return receiver?.pieces === undefined ? undefined : receiver.pieces.bind(receiver);
      },
    });
    this.input.on('data', (chunk: Buffer) => framer.push(chunk));
    const input = new PausableInput(this.input);
    this.unfeed = (this.flow.reads ?? []).map((valve) => valve.feed(input));
    if (this.closeOnEnd) this.input.on('end', () => this.inputEnded());
    this.input.on('error', (error) => this.broken(`${this.label} read failed: ${error.message}`));
    this.output.on('error', (error) => this.broken(`${this.label} write failed: ${error.message}`));
  }

  sendRaw(raw: Buffer | string): void {
    if (this.closed) return;
    this.corkForTick();
    // A forwarded message (bytes) is not copied to append its newline; a string one is, cheaply, to be
    // one write, not two, in the stream's queue.
    if (typeof raw === 'string') {
      this.output.write(raw + '\n');
    } else {
      this.output.write(raw);
      this.output.write(NEWLINE);
    }
    this.flow.writes?.wrote(this.output);
  }

  /** The pieces as they came, with the newline, in the tick's one writev: none is joined or copied. */
  sendPieces(line: Pieces): void {
    if (this.closed) return;
    this.corkForTick();
    for (const part of line.parts) this.output.write(part);
    this.output.write(NEWLINE);
    this.flow.writes?.wrote(this.output);
  }

  /**
   * Everything sent in one tick leaves in one system call: each write to a pipe wakes the reader, which
   * costs more than the JSON work (bench/PROFILING.md).
   */
  private corkForTick(): void {
    if (this.corked) return;
    this.corked = true;
    this.output.cork();
    process.nextTick(this.uncork);
  }

  private readonly uncork = (): void => {
    this.corked = false;
    this.output.uncork();
  };

  send(message: object): void {
    this.sendRaw(JSON.stringify(message));
  }

  /** Ends the output. The input ending after this (the peer following suit) is the close's doing: not reported. */
  async close(): Promise<void> {
    this.closed = true;
    this.stopFeeding();
    this.closedByOwner = true;
    this.output.end();
  }

  /** Nothing more will arrive; the output stays open for the answers still owed. */
  private inputEnded(): void {
    this.report({ reason: `${this.label} closed its output`, inputEnded: true });
  }

  /** The peer went away: the owner hears it once, unless it closed the channel itself. */
  private report(info: CloseInfo): void {
    if (!info.inputEnded) this.stopFeeding();
    const handlers = this.handlers;
    this.handlers = undefined;
    if (!this.closedByOwner) handlers?.closed(info);
  }

  /**
   * A pipe broke. Writing stops; the closure is reported here unless the owner reports it, whose reason
   * says more (a child that exited: its EPIPE comes first, its exit code is the news).
   */
  private broken(reason: string): void {
    if (this.closeOnEnd) return this.markClosed(reason);
    this.closed = true;
  }

  /** A channel gone holds no valve shut and is not paused by one. */
  private stopFeeding(): void {
    for (const undo of this.unfeed.splice(0)) undo();
  }

  /** Lets the owner report a closure it learned of first (the child exited); not after close(). */
  markClosed(reason: string): void {
    if (this.closed && this.handlers === undefined) return;
    this.closed = true;
    this.report({ reason });
  }
}

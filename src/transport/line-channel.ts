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
const NEWLINE_BYTE = 0x0a;
/** A line of fewer bytes is copied to be written with its newline as one Buffer (see `held`). */
const HELD_BELOW_BYTES = 4096;

/**
 * Reads of any LineChannel under way (one inside another when a write is read at once), and the channels
 * with a line held until the outermost ends: what a read makes is written when its handling is over.
 */
let readsUnderWay = 0;
const holding: LineChannel[] = [];

/** The line and its newline in one Buffer (from the pool: Buffer.concat costs twice this). */
function withNewline(raw: Buffer): Buffer {
  const line = Buffer.allocUnsafe(raw.length + 1);
  line.set(raw);
  line[raw.length] = NEWLINE_BYTE;
  return line;
}

function readEnded(): void {
  if (--readsUnderWay > 0) return;
  for (const channel of holding.splice(0)) channel.writeHeld();
}

export class LineChannel implements Channel {
  private handlers: ChannelHandlers | undefined;
  private closed = false;
  /** The owner closed it: from then on nothing is reported as `closed` (the owner knows). */
  private closedByOwner = false;
  /** Writes are held until the end of the tick (see sendRaw). */
  private corked = false;
  /**
   * The one line sent during a read, newline included, written when the read ends: alone, it is one
   * write(), with no cork, no tick deferred to uncork and no writev; a second line corks the stream
   * with this one first (corkForTick), as every line sent outside a read is.
   */
  private held: Buffer | string | undefined;
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
    this.input.on('data', (chunk: Buffer) => {
      readsUnderWay++;
      try {
        framer.push(chunk);
      } finally {
        readEnded();
      }
    });
    const input = new PausableInput(this.input);
    this.unfeed = (this.flow.reads ?? []).map((valve) => valve.feed(input));
    if (this.closeOnEnd) this.input.on('end', () => this.inputEnded());
    this.input.on('error', (error) => this.broken(`${this.label} read failed: ${error.message}`));
    this.output.on('error', (error) => this.broken(`${this.label} write failed: ${error.message}`));
  }

  sendRaw(raw: Buffer | string): void {
    if (this.closed) return;
    if (readsUnderWay > 0 && !this.corked && this.held === undefined) {
      if (typeof raw === 'string') return this.hold(raw + '\n');
      if (raw.length < HELD_BELOW_BYTES) return this.hold(withNewline(raw));
    }
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
    const held = this.held;
    this.held = undefined;
    if (held !== undefined) this.output.write(held);
  }

  private hold(line: Buffer | string): void {
    this.held = line;
    holding.push(this);
  }

  /** The read that held a line is over (readEnded), or the channel closes: it is written. */
  writeHeld(): void {
    const line = this.held;
    if (line === undefined) return;
    this.held = undefined;
    if (this.closed) return;
    this.output.write(line);
    this.flow.writes?.wrote(this.output);
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
    this.writeHeld();
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

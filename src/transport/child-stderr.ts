/**
 * An upstream child's stderr, read line by line: each line becomes a log record of its own (so the
 * server's output never breaks taskgate's JSON lines), and the last few are kept to say why it exited.
 * A crash usually ends in a stack trace, whose frames and dump push its error line (`Error: Cannot find
 * module …`) out of the last few: that line is kept apart and reported first.
 */
import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import type { Logger } from 'pino';

/** A longer line is cut (in its log record and in the tail). */
export const MAX_LINE_CHARS = 2_000;
/** The tail reported with the exit: at most this many lines, of at most TAIL_CHARS together. */
export const TAIL_LINES = 5;
export const TAIL_CHARS = 2_000;
/** A stack frame, as Node (`    at f (file:1:2)`) and most runtimes indent them. */
const FRAME = /^\s+at\s/;
/** How far above its first frame a trace's error line is looked for (Node puts `Require stack:` between). */
const HEAD_LINES = 5;
/** Lines after a trace's last frame within which its error line still explains the exit. */
const HEAD_KEPT = 20;

export class ChildStderr {
  private readonly decoder = new StringDecoder('utf8');
  /** The line being read; only its first MAX_LINE_CHARS are kept. */
  private partial = '';
  private partialCut = false;
  private readonly tail: string[] = [];
  /** The non-frame lines since the last blank line or frame, newest last: the start of a trace-to-be. */
  private block: string[] = [];
  private blockCut = false;
  private previousWasFrame = false;
  /** The error line of the latest stack trace, and the lines read since that trace's last frame. */
  private head: string | undefined;
  private sinceFrame = 0;
  readonly ended: Promise<void>;

  constructor(
    stream: Readable,
    private readonly logger: Logger,
  ) {
    stream.on('data', (chunk: Buffer) => this.push(this.decoder.write(chunk)));
    this.ended = new Promise((resolve) => {
      stream.once('close', () => {
        this.push(this.decoder.end());
        this.flush();
        resolve();
      });
    });
    // An error ends the stream too ('close' follows); nothing in it is worth more than the exit status.
    stream.on('error', () => undefined);
  }

  /**
   * The last lines, for a person: `a | b`, or '' when the child wrote nothing. When they are the end of a
   * stack trace whose error line fell out of them, that line comes first: `Error: … | … | b`.
   */
  lastLines(): string {
    const dropped = this.head !== undefined && !this.tail.includes(this.head);
    const head = dropped ? clip(this.head!, TAIL_CHARS / 2) : undefined;
    const budget = TAIL_CHARS - (head?.length ?? 0);
    let chars = 0;
    const lines: string[] = [];
    for (
      let i = this.tail.length - 1;
      i >= this.tail.length - (dropped ? TAIL_LINES - 1 : TAIL_LINES) && i >= 0;
      i--
    ) {
      const line = this.tail[i]!;
      chars += line.length;
      if (chars > budget) {
        if (lines.length === 0) lines.unshift(`…${line.slice(line.length - budget)}`);
        break;
      }
      lines.unshift(line);
    }
    return (head === undefined ? lines : [head, '…', ...lines]).join(' | ');
  }

  private push(text: string): void {
    let start = 0;
    for (let end = text.indexOf('\n'); end !== -1; end = text.indexOf('\n', start)) {
      this.append(text.slice(start, end));
      this.flush();
      start = end + 1;
    }
    this.append(text.slice(start));
  }

  private append(text: string): void {
    const room = MAX_LINE_CHARS - this.partial.length;
    if (text.length > room) this.partialCut = true;
    if (room > 0) this.partial += text.slice(0, room);
  }

  private flush(): void {
    const line = this.partial.replace(/\r$/, '') + (this.partialCut ? '…' : '');
    this.partial = '';
    this.partialCut = false;
    if (line.trim() === '') {
      this.block = [];
      this.blockCut = false;
      return;
    }
    this.logger.info(line);
    this.followTrace(line);
    this.tail.push(line);
    if (this.tail.length > TAIL_LINES) this.tail.shift();
  }

  /** Finds the error line each stack trace is about: the first line of the lines just above its frames. */
  private followTrace(line: string): void {
    const frame = FRAME.test(line);
    if (frame) {
      if (!this.previousWasFrame && this.block.length > 0) {
        this.head = this.blockCut ? this.block[this.block.length - 1] : this.block[0];
      }
      this.block = [];
      this.blockCut = false;
      this.sinceFrame = 0;
    } else {
      this.block.push(line);
      if (this.block.length > HEAD_LINES) {
        this.block.shift();
        this.blockCut = true;
      }
      if (this.head !== undefined && ++this.sinceFrame > HEAD_KEPT) this.head = undefined;
    }
    this.previousWasFrame = frame;
  }
}

function clip(line: string, chars: number): string {
  return line.length > chars ? `${line.slice(0, chars)}…` : line;
}

/**
 * An upstream child's stderr, read line by line: each line becomes a log record of its own (so the
 * server's output never breaks taskgate's JSON lines), and the last few are kept to say why it exited.
 */
import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import type { Logger } from 'pino';

/** A longer line is cut (in its log record and in the tail). */
export const MAX_LINE_CHARS = 2_000;
/** The tail reported with the exit: at most this many lines, of at most TAIL_CHARS together. */
export const TAIL_LINES = 5;
export const TAIL_CHARS = 2_000;

export class ChildStderr {
  private readonly decoder = new StringDecoder('utf8');
  /** The line being read; only its first MAX_LINE_CHARS are kept. */
  private partial = '';
  private partialCut = false;
  private readonly tail: string[] = [];
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

  /** The last lines, for a person: `a | b`, or '' when the child wrote nothing. */
  lastLines(): string {
    let chars = 0;
    const lines: string[] = [];
    for (let i = this.tail.length - 1; i >= 0; i--) {
      const line = this.tail[i]!;
      chars += line.length;
      if (chars > TAIL_CHARS) {
        if (lines.length === 0) lines.unshift(`…${line.slice(line.length - TAIL_CHARS)}`);
        break;
      }
      lines.unshift(line);
    }
    return lines.join(' | ');
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
    if (line.trim() === '') return;
    this.logger.info(line);
    this.tail.push(line);
    if (this.tail.length > TAIL_LINES) this.tail.shift();
  }
}

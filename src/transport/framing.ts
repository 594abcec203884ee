/**
 * Newline-delimited JSON framing for stdio, with a size limit.
 *
 * Unlike the SDK's ReadBuffer this does not re-concatenate its buffer on every chunk: chunks are kept as
 * a list until a newline arrives, and a line over the limit is not kept at all (only its first and last
 * bytes, enough to find the request id for an error reply). For a sink that takes pieces, a line that
 * arrives in several chunks is scanned chunk by chunk as they come and handed on as those chunks, never
 * joined (issue 33): only a line the scan refuses is joined, for the usual read to say why.
 */
import { ErrorCode, ProtocolError } from '../protocol/errors.js';
import { Pieces } from '../protocol/pieces.js';
import { JsonScanner, SCAN_FROM_BYTES } from '../protocol/scan.js';
import type { Scanned } from '../protocol/scanned.js';

const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;
const SPACE = 0x20;
const TAB = 0x09;
const KEEP_OF_OVERSIZED = 4096;
/** For every reset: `Buffer.alloc(0)` made a new ArrayBuffer for each line. */
const EMPTY = Buffer.alloc(0);

export interface FrameSink {
  /** One line's bytes, without its newline (and without a trailing CR). */
  line(bytes: Buffer): void;
  oversized(byteLength: number, head: string, tail: string): void;
  /**
   * Where a line of SCAN_FROM_BYTES or more that came in several chunks and that the scan takes goes, as
   * those chunks (without its newline and trailing CR); asked as each chunk comes. Without it, such a
   * line goes to `line`, joined.
   */
  readonly pieces?: ((line: Pieces, scanned: Scanned) => void) | undefined;
}

export class LineFramer {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private oversizedHead: Buffer | undefined;
  private oversizedTail: Buffer = EMPTY;
  /** The scan of the pending line, once it is in pieces and big enough; how many of them it has had. */
  private scanner: JsonScanner | undefined;
  private scannedParts = 0;

  constructor(
    private readonly maxMessageBytes: number,
    private readonly sink: FrameSink,
  ) {}

  push(chunk: Buffer): void {
    let start = 0;
    for (let nl = chunk.indexOf(NEWLINE); nl !== -1; nl = chunk.indexOf(NEWLINE, start)) {
      this.append(chunk.subarray(start, nl));
      this.flushLine();
      start = nl + 1;
    }
    if (start < chunk.length) {
      this.append(chunk.subarray(start));
      this.scanPending();
    }
  }

  /** The line goes on in the next chunk: what it has so far is scanned now, while the rest is on its way. */
  private scanPending(): void {
    if (this.sink.pieces === undefined || this.oversizedHead !== undefined) return;
    if (this.pendingBytes < SCAN_FROM_BYTES) return;
    this.scanner ??= new JsonScanner();
    while (this.scannedParts < this.pending.length) this.scanner.push(this.pending[this.scannedParts++]!);
  }

  private append(piece: Buffer): void {
    if (piece.length === 0) return;
    this.pendingBytes += piece.length;
    if (this.oversizedHead !== undefined) {
      this.oversizedTail = lastBytes([this.oversizedTail, piece], KEEP_OF_OVERSIZED);
    } else if (this.pendingBytes <= this.maxMessageBytes) {
      this.pending.push(piece);
    } else {
      // Over the limit: keep copies of the first and last bytes seen, and let go of the rest.
      const seen = [...this.pending, piece];
      this.oversizedHead = Buffer.concat(seen, Math.min(this.pendingBytes, KEEP_OF_OVERSIZED));
      this.oversizedTail = lastBytes(seen, KEEP_OF_OVERSIZED);
      this.pending = [];
    }
  }

  private flushLine(): void {
    const bytes = this.pendingBytes;
    if (this.oversizedHead !== undefined) {
      const head = this.oversizedHead.toString('utf8');
      const tail = this.oversizedTail.toString('utf8');
      this.reset();
      this.sink.oversized(bytes, head, tail);
      return;
    }
    if (this.scanner !== undefined && this.flushPieces()) return;
    let line = this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending, bytes);
    this.reset();
    // Tolerate CRLF, and skip blank keep-alive lines.
    if (line[line.length - 1] === CARRIAGE_RETURN) line = line.subarray(0, -1);
    if (!isBlank(line)) this.sink.line(line);
  }

  /** The pending line, scanned in pieces, handed on as them; false (nothing done) when the scan refuses it. */
  private flushPieces(): boolean {
    const take = this.sink.pieces;
    if (take === undefined) return false;
    this.scanPending();
    const scanned = this.scanner!.end();
    if (typeof scanned === 'string') return false;
    const parts = this.pending;
    let length = this.pendingBytes;
    this.reset();
    const last = parts.at(-1)!;
    if (last.at(-1) === CARRIAGE_RETURN) {
      length--;
      if (last.length === 1) parts.pop();
      else parts[parts.length - 1] = last.subarray(0, -1);
    }
    take(new Pieces(parts, length), scanned);
    return true;
  }

  private reset(): void {
    this.pending = [];
    this.pendingBytes = 0;
    this.oversizedHead = undefined;
    this.oversizedTail = EMPTY;
    this.scanner = undefined;
    this.scannedParts = 0;
  }
}

/**
 * Only spaces, tabs and CRs. Indexed reads: `at(-1)` and `some` with a Set of these bytes cost about
 * 800 instructions a line (callgrind; bench/PROFILING.md, session 17).
 */
function isBlank(line: Buffer): boolean {
  for (let i = 0; i < line.length; i++) {
    const byte = line[i];
    if (byte !== SPACE && byte !== TAB && byte !== CARRIAGE_RETURN) return false;
  }
  return true;
}

/** A copy of the last `count` bytes of the pieces, joined. */
export function lastBytes(pieces: Buffer[], count: number): Buffer {
  const picked: Buffer[] = [];
  let total = 0;
  for (let i = pieces.length - 1; i >= 0 && total < count; i--) {
    const piece = pieces[i]!;
    picked.unshift(piece.subarray(Math.max(0, piece.length - (count - total))));
    total += picked[0]!.length;
  }
  return Buffer.concat(picked, total);
}

/**
 * A line over the size limit, dropped unread. `answers`: its first and last bytes say it is a response
 * (a top-level "result" or "error", no "method"), which is never answered: its id is the reader's own.
 */
export class OversizedFrameError extends ProtocolError {
  constructor(
    message: string,
    readonly answers: boolean,
  ) {
    super(ErrorCode.InvalidRequest, message);
    this.name = 'OversizedFrameError';
  }
}

/** Whether an oversized line's first and last bytes show a response rather than a request or notification. */
export function looksLikeResponse(head: string, tail: string): boolean {
  const keys = leadingKeys(head);
  if (keys.includes('method') || keys.includes('params') || /"method"\s*:/.test(tail)) return false;
  return keys.includes('result') || keys.includes('error');
}

/** The keys of the top-level object that `head` (the start of a JSON text, cut anywhere) shows. */
function leadingKeys(head: string): string[] {
  const keys: string[] = [];
  if (!head.trimStart().startsWith('{')) return keys;
  let depth = 0;
  let keyNext = false;
  for (let i = 0; i < head.length; i++) {
    const char = head[i];
    if (char === '"') {
      let end = i + 1;
      while (end < head.length && head[end] !== '"') end += head[end] === '\\' ? 2 : 1;
      if (end >= head.length) break;
      if (depth === 1 && keyNext) {
        keys.push(head.slice(i + 1, end));
        keyNext = false;
      }
      i = end;
    } else if (char === '{' || char === '[') {
      depth++;
      keyNext = depth === 1;
    } else if (char === '}' || char === ']') {
      depth--;
    } else if (char === ',' && depth === 1) {
      keyNext = true;
    }
  }
  return keys;
}

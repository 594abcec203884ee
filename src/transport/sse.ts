/**
 * A parser for the text/event-stream format (the WHATWG "event stream interpretation"), as the client side
 * of Streamable HTTP reads it: bytes in, one callback per event out, with a size limit on an event's data.
 *
 * Like LineFramer it keeps the pieces of an unfinished line as a list instead of re-concatenating on every
 * chunk, and it does not decode the data: an event's data comes out as the bytes that were sent. The data
 * lines of one event are joined with a line feed, as the standard says: a server that cuts a JSON string
 * across lines sends a text with a raw LF in a string, which is not JSON, and must be refused as such (a
 * space in its place would make it valid). An event of several data lines that IS valid JSON is then put on
 * one line (line-breaks.ts): its bytes go on as they are, to a stdio peer that takes one message a line.
 * For a sink that takes them scanned (issue 33), a big event's data is scanned as its chunks come and
 * handed on as those chunks, never joined.
 */
import { onOneLine } from '../protocol/line-breaks.js';
import { Pieces } from '../protocol/pieces.js';
import { JsonScanner, SCAN_FROM_BYTES, scanJson } from '../protocol/scan.js';
import type { ScanFailure, Scanned } from '../protocol/scanned.js';
import { lastBytes } from './framing.js';

const LF = 0x0a;
const CR = 0x0d;
const COLON = 0x3a;
const SPACE = 0x20;
const KEEP_OF_OVERSIZED = 4096;
/** Room for a field name beside the data a line may carry. */
const FIELD_SLACK = 64;

export interface SseEvent {
  /**
   * The event's data (its `data:` lines joined; on one line if it is valid JSON). Empty only for an event
   * that carries nothing but an id (a server's "priming" event, sent so that the client can resume before
   * any message has gone out).
   */
  data: Buffer;
  /** The `event:` type; empty when the event named none (the default type, "message"). */
  type: string;
  /** The `id:` the event set (the stream's new last event id; empty resets it), if it set one. */
  id: string | undefined;
}

/** An event handed to `SseSink.scanned`: its data as the pieces it came in, and their scan. */
export interface ScannedEvent {
  data: Pieces;
  /** Made as the pieces came: JSON.parse's verdict on the data, and where its envelope stands. */
  scanned: Scanned | ScanFailure;
  type: string;
  id: string | undefined;
}

export interface SseSink {
  /** An event with data, an id, or both; events with neither are not dispatched. */
  event(event: SseEvent): void;
  /**
   * Where an event with SCAN_FROM_BYTES of data or more goes instead of `event`, when the sink has it: its
   * data unjoined, scanned as it came. Asked as each chunk comes.
   */
  readonly scanned?: ((event: ScannedEvent) => void) | undefined;
  /** The server asked, with a `retry:` field, for this reconnection delay. */
  retry(ms: number): void;
  /** An event whose data went over the limit: dropped, with enough of its edges to find a request id. */
  oversized(byteLength: number, head: string, tail: string): void;
}

export class SseParser {
  /** Pieces of the line being read. */
  private line: Buffer[] = [];
  private lineBytes = 0;
  /** Set when the line went over the limit: only its edges are kept. */
  private lineHead: Buffer | undefined;
  private lineTail: Buffer = Buffer.alloc(0);
  /** A chunk ended with CR: a LF at the start of the next one belongs to the same line end. */
  private afterCr = false;
  /** How many bytes of a leading byte order mark the stream began with so far; BOM_PASSED once it is past. */
  private bomBytes = 0;

  /** The event's data so far: its data lines' values with the line feeds that join them. */
  private data: Buffer[] = [];
  private dataBytes = 0;
  private hasData = false;
  /** The event has more than one data line: its data holds line feeds. */
  private lineBreaks = false;
  /** The line being read is a data line whose value goes to `data` as it comes (`lineGoesOn`). */
  private streaming = false;
  /** The scan of `data`, once it is big enough and the sink takes it scanned. */
  private scanner: JsonScanner | undefined;
  private dataHead: Buffer | undefined;
  private dataTail: Buffer = Buffer.alloc(0);
  private type = '';
  private id: string | undefined;

  constructor(
    private readonly maxEventBytes: number,
    private readonly sink: SseSink,
  ) {}

  push(chunk: Buffer): void {
    let start = this.bomBytes === BOM_PASSED ? 0 : this.pastBom(chunk);
    if (this.afterCr && chunk[start] === LF) start++;
    this.afterCr = false;
    // Line ends found with indexOf (memchr), not a loop over the bytes: a big event's data line is
    // megabytes, and a JavaScript loop over them was the sidecar's largest cost (bench/PROFILING.md).
    // Each is searched for again only once passed, so every byte is looked at once per kind.
    let lf = chunk.indexOf(LF, start);
    let cr = chunk.indexOf(CR, start);
    while (lf !== -1 || cr !== -1) {
      const end = lf === -1 ? cr : cr === -1 ? lf : Math.min(lf, cr);
      this.append(chunk.subarray(start, end));
      this.endLine();
      start = end + 1;
      if (end === cr) {
        if (start === chunk.length) this.afterCr = true;
        else if (chunk[start] === LF) start++;
      }
      if (lf !== -1 && lf < start) lf = chunk.indexOf(LF, start);
      if (cr !== -1 && cr < start) cr = chunk.indexOf(CR, start);
    }
    if (start < chunk.length) {
      this.append(chunk.subarray(start));
      this.lineGoesOn();
    }
  }

  /**
   * Where the stream's first chunks go on after one leading U+FEFF, which the standard says is ignored
   * (the stream is UTF-8, so its three bytes). Bytes that only began like one are the stream's own.
   */
  private pastBom(chunk: Buffer): number {
    let at = 0;
    while (at < chunk.length && this.bomBytes < BOM.length) {
      if (chunk[at] !== BOM[this.bomBytes]) {
        this.append(BOM.subarray(0, this.bomBytes));
        this.bomBytes = BOM_PASSED;
        return at;
      }
      this.bomBytes++;
      at++;
    }
    if (this.bomBytes === BOM.length) this.bomBytes = BOM_PASSED;
    return at;
  }

  /** The stream ended: an event without its blank line is incomplete, and is discarded (as the standard says). */
  end(): void {
    this.line = [];
    this.lineBytes = 0;
    this.lineHead = undefined;
    this.streaming = false;
    this.resetEvent();
  }

  /**
   * The line goes on in the next chunk: when it is a big data line and the sink takes events scanned, its
   * value so far goes to the event's data now, and the rest as it comes, for the scan to keep up with it.
   */
  private lineGoesOn(): void {
    if (this.streaming || this.lineHead !== undefined || this.lineBytes < SCAN_FROM_BYTES) return;
    if (this.sink.scanned === undefined) return;
    const field = Buffer.concat(this.line, DATA_FIELD.length + 1);
    if (!field.subarray(0, DATA_FIELD.length).equals(DATA_FIELD)) return;
    let skip = field[DATA_FIELD.length] === SPACE ? DATA_FIELD.length + 1 : DATA_FIELD.length;
    const parts = this.line;
    this.line = [];
    this.lineBytes = 0;
    this.streaming = true;
    this.dataLineStarts();
    for (const part of parts) {
      if (skip < part.length) this.moreData(skip === 0 ? part : part.subarray(skip));
      skip = Math.max(0, skip - part.length);
    }
  }

  private append(piece: Buffer): void {
    if (piece.length === 0) return;
    if (this.streaming) return this.moreData(piece);
    this.lineBytes += piece.length;
    if (this.lineHead !== undefined) {
      this.lineTail = lastBytes([this.lineTail, piece], KEEP_OF_OVERSIZED);
    } else if (this.lineBytes <= this.maxEventBytes + FIELD_SLACK) {
      this.line.push(piece);
    } else {
      const seen = [...this.line, piece];
      this.lineHead = Buffer.concat(seen, Math.min(this.lineBytes, KEEP_OF_OVERSIZED));
      this.lineTail = lastBytes(seen, KEEP_OF_OVERSIZED);
      this.line = [];
    }
  }

  private endLine(): void {
    if (this.streaming) {
      this.streaming = false;
      return;
    }
    if (this.lineHead !== undefined) {
      // Only a data line can be worth anything at this size.
      const head = this.lineHead;
      const bytes = this.lineBytes;
      const tail = this.lineTail;
      this.lineHead = undefined;
      this.lineBytes = 0;
      if (head.subarray(0, 5).toString('latin1') === 'data:') this.oversizedData(head, tail, bytes);
      return;
    }
    const line = this.line.length === 1 ? this.line[0]! : Buffer.concat(this.line, this.lineBytes);
    this.line = [];
    this.lineBytes = 0;
    if (line.length === 0) return this.dispatch();
    if (line[0] === COLON) return; // a comment (keep-alive)
    const colon = line.indexOf(COLON);
    const field = (colon === -1 ? line : line.subarray(0, colon)).toString('utf8');
    let value = colon === -1 ? Buffer.alloc(0) : line.subarray(colon + 1);
    if (value[0] === SPACE) value = value.subarray(1);
    switch (field) {
      case 'data':
        return this.addData(value);
      case 'event':
        this.type = value.toString('utf8');
        return;
      case 'id':
        if (!value.includes(0)) this.id = value.toString('utf8');
        return;
      case 'retry': {
        const text = value.toString('latin1');
        if (/^\d+$/.test(text)) this.sink.retry(Number(text));
        return;
      }
      default:
        return; // unknown fields are ignored
    }
  }

  private addData(value: Buffer): void {
    this.dataLineStarts();
    this.moreData(value);
  }

  /** A data line's value begins: after the line feed that joins it to the line before, if any. */
  private dataLineStarts(): void {
    if (this.hasData) {
      this.moreData(SEPARATOR);
      this.lineBreaks = true;
    }
    this.hasData = true;
  }

  private moreData(piece: Buffer): void {
    this.dataBytes += piece.length;
    if (this.dataHead !== undefined) {
      this.dataTail = lastBytes([this.dataTail, piece], KEEP_OF_OVERSIZED);
      return;
    }
    if (piece.length > 0) this.data.push(piece);
    if (this.dataBytes > this.maxEventBytes) {
      // Over the limit: keep copies of the edges, and let go of the rest.
      this.dataHead = Buffer.concat(this.data, Math.min(this.dataBytes, KEEP_OF_OVERSIZED));
      this.dataTail = lastBytes(this.data, KEEP_OF_OVERSIZED);
      this.data = [];
      this.scanner = undefined;
    } else if (this.scanner !== undefined) {
      this.scanner.push(piece);
    } else if (this.dataBytes >= SCAN_FROM_BYTES && this.sink.scanned !== undefined) {
      this.scanner = new JsonScanner();
      for (const part of this.data) this.scanner.push(part);
    }
  }

  /** A data line too long to keep: the event is oversized, whatever else it holds. */
  private oversizedData(lineHead: Buffer, lineTail: Buffer, lineBytes: number): void {
    let head = lineHead.subarray(5);
    let valueBytes = lineBytes - 5;
    if (head[0] === SPACE) {
      head = head.subarray(1);
      valueBytes--;
    }
    const hasData = this.hasData;
    this.hasData = true;
    if (this.dataHead === undefined) {
      const before = hasData ? [...this.data, SEPARATOR] : [];
      this.dataHead = Buffer.concat([...before, head]).subarray(0, KEEP_OF_OVERSIZED);
      this.data = [];
      this.scanner = undefined;
    }
    this.dataBytes += (hasData ? 1 : 0) + valueBytes;
    this.dataTail = lineTail;
  }

  private dispatch(): void {
    const id = this.id;
    if (this.dataHead !== undefined) {
      // The id still moves the stream on: the event was received, only not kept.
      if (id !== undefined) this.sink.event({ data: EMPTY, type: this.type, id });
      this.sink.oversized(this.dataBytes, this.dataHead.toString('utf8'), this.dataTail.toString('utf8'));
    } else if (this.dataBytes > 0 || id !== undefined) {
      const scanned = this.scanner === undefined ? undefined : this.sink.scanned;
      if (scanned !== undefined) {
        const data = new Pieces(this.data, this.dataBytes);
        const verdict = this.scanner!.end();
        const flat = this.lineBreaks && typeof verdict !== 'string';
        scanned({ data: flat ? onOneLine(data) : data, scanned: verdict, type: this.type, id });
      } else {
        const data = this.data.length === 1 ? this.data[0]! : Buffer.concat(this.data, this.dataBytes);
        // Rare (a pretty-printed message): only then is the data scanned here, to know it valid.
        const flat = this.lineBreaks && typeof scanJson(data) !== 'string';
        this.sink.event({ data: flat ? onOneLine(data) : data, type: this.type, id });
      }
    }
    this.resetEvent();
  }

  private resetEvent(): void {
    this.data = [];
    this.dataBytes = 0;
    this.hasData = false;
    this.lineBreaks = false;
    this.scanner = undefined;
    this.dataHead = undefined;
    this.dataTail = EMPTY;
    this.type = '';
    this.id = undefined;
  }
}

const EMPTY = Buffer.alloc(0);
const SEPARATOR = Buffer.from('\n');
const BOM = Buffer.from([0xef, 0xbb, 0xbf]);
const BOM_PASSED = -1;
const DATA_FIELD = Buffer.from('data:');

/**
 * The server side of one Streamable HTTP response: it stays undecided until the first message, so that a
 * request answered at once goes back as plain JSON, and becomes an SSE stream (each event with an id, kept
 * in the session's event log for resumption) as soon as anything else must go first.
 */
import type { ServerResponse } from 'node:http';
import { onOneLine } from '../protocol/line-breaks.js';
import { Pieces, type Bytes } from '../protocol/pieces.js';

/** A message for a client: a string, one Buffer, or the pieces it was read in (issue 33). */
export type Outbound = Bytes | string;

/** The bookkeeping of a message kept for a client: for replay after a dropped connection, or until a stream opens. */
export interface Kept {
  readonly bytes: number;
  /** Set once it is no longer kept (dropped for room, delivered, or its session is over). */
  released: boolean;
  readonly holder: { drop(kept: Kept): void };
}

/**
 * The bytes kept for clients across all sessions, bounded: past the bound, the oldest message kept
 * anywhere is dropped first.
 */
export class KeptBytes {
  private total = 0;
  private live = 0;
  /** Everything kept, oldest first; released entries are skipped, and swept out now and then. */
  private order: Kept[] = [];
  private head = 0;

  constructor(private readonly maxBytes: number) {}

  add(kept: Kept): void {
    this.total += kept.bytes;
    this.live++;
    this.order.push(kept);
    while (this.total > this.maxBytes && this.head < this.order.length) {
      const oldest = this.order[this.head++]!;
      if (!oldest.released) oldest.holder.drop(oldest);
    }
    if (this.order.length - this.head > 2 * this.live + 1024) {
      this.order = this.order.slice(this.head).filter((entry) => !entry.released);
      this.head = 0;
    }
  }

  release(kept: Kept): void {
    if (kept.released) return;
    kept.released = true;
    this.total -= kept.bytes;
    this.live--;
  }
}

/** Messages kept by one session, oldest first, bounded by count and by bytes (and by the shared total). */
export class KeptMessages<T extends { data: Outbound }> {
  private readonly items: { value: T; kept: Kept }[] = [];
  private bytes = 0;

  constructor(
    private readonly maxCount: number,
    private readonly maxBytes: number,
    private readonly shared: KeptBytes,
  ) {}

  get length(): number {
    return this.items.length;
  }

  get all(): T[] {
    return this.items.map((item) => item.value);
  }

  push(value: T): void {
    const bytes = typeof value.data === 'string' ? Buffer.byteLength(value.data) : value.data.length;
    const kept: Kept = { bytes, released: false, holder: this };
    this.items.push({ value, kept });
    this.bytes += bytes;
    this.shared.add(kept);
    while (this.items.length > this.maxCount || this.bytes > this.maxBytes) this.shift();
  }

  /** Takes the oldest message out. */
  shift(): T | undefined {
    const item = this.items.shift();
    if (item) this.forget(item.kept);
    return item?.value;
  }

  drop(kept: Kept): void {
    const at = this.items[0]?.kept === kept ? 0 : this.items.findIndex((item) => item.kept === kept);
    if (at !== -1) this.forget(this.items.splice(at, 1)[0]!.kept);
  }

  clear(): void {
    for (const item of this.items.splice(0)) this.forget(item.kept);
  }

  private forget(kept: Kept): void {
    this.bytes -= kept.bytes;
    this.shared.release(kept);
  }
}

/** Events of one session, for replay after a dropped connection (Last-Event-ID). */
export class EventLog {
  private readonly events: KeptMessages<{ streamId: string; seq: number; data: Outbound }>;

  constructor(maxCount: number, maxBytes: number, shared: KeptBytes) {
    this.events = new KeptMessages(maxCount, maxBytes, shared);
  }

  append(streamId: string, seq: number, data: Outbound): void {
    this.events.push({ streamId, seq, data });
  }

  /** The events of a stream after the given sequence number, in order. */
  after(streamId: string, seq: number): { seq: number; data: Outbound }[] {
    return this.events.all.filter((event) => event.streamId === streamId && event.seq > seq);
  }

  clear(): void {
    this.events.clear();
  }
}

export const eventId = (streamId: string, seq: number): string => `${streamId}.${seq}`;

export function parseEventId(text: string): { streamId: string; seq: number } | undefined {
  const dot = text.lastIndexOf('.');
  const seq = Number(text.slice(dot + 1));
  if (dot <= 0 || !Number.isSafeInteger(seq) || seq < 0) return undefined;
  return { streamId: text.slice(0, dot), seq };
}

export class ResponseStream {
  private mode: 'undecided' | 'sse' | 'done' = 'undecided';
  private seq = 0;
  /** Where events go now: the response it was opened on, or a GET that resumed it; none while detached. */
  private sink: ServerResponse | undefined;
  /** Settles the wait of poll() below when a GET resumes the stream. */
  private resumed: (() => void) | undefined;

  constructor(
    readonly streamId: string,
    sink: ServerResponse,
    private readonly log: EventLog,
    private readonly onDone: () => void,
    /** A GET stream is over when its connection drops (its missed events can still be replayed). */
    private readonly endsWithConnection = false,
  ) {
    this.attach(sink);
  }

  get open(): boolean {
    return this.mode !== 'done';
  }

  /** Still being sent on a connection (not over, nor waiting for a GET to resume it). */
  get attached(): boolean {
    return this.mode !== 'done' && this.sink !== undefined;
  }

  /** It sent events (kept in the log), so a GET with Last-Event-ID may pick it up. */
  get resumable(): boolean {
    return this.seq > 0;
  }

  /** Commits to SSE (headers out now), as a GET stream does at once. */
  begin(): void {
    if (this.mode !== 'undecided') return;
    this.mode = 'sse';
    this.sink?.writeHead(200, SSE_HEADERS);
    this.sink?.flushHeaders();
  }

  /** A message before the final one: switches to SSE if it was not yet. */
  event(data: Outbound): void {
    if (this.mode === 'done') return;
    this.begin();
    this.seq++;
    this.log.append(this.streamId, this.seq, data);
    if (this.sink) writeEvent(this.sink, eventId(this.streamId, this.seq), data);
  }

  /**
   * The last message: as JSON if nothing was sent before it (with this HTTP status), else as the last
   * event.
   */
  finish(data: Outbound, status = 200, headers: Record<string, string> = {}): void {
    if (this.mode === 'done') return;
    if (this.mode === 'undecided' && this.sink && data instanceof Pieces) {
      // Its length is known: no chunked encoding for a body written in pieces.
      const length = String(data.length);
      this.sink.writeHead(status, {
        ...headers,
        'content-type': 'application/json',
        'content-length': length,
      });
      this.sink.cork();
      for (const part of data.parts) this.sink.write(part);
      this.sink.end();
    } else if (this.mode === 'undecided' && this.sink) {
      this.sink.writeHead(status, { ...headers, 'content-type': 'application/json' });
      this.sink.end(data);
    } else {
      this.event(data);
      this.sink?.end();
    }
    this.mode = 'done';
    this.onDone();
  }

  /**
   * A GET with Last-Event-ID resumes the stream: missed events first, then what is still to come. The
   * connection it was still sent on, if any, ends there (a client resumes one it lost, maybe before
   * taskgate noticed). Refused when the log no longer holds all the events it missed.
   */
  resume(sink: ServerResponse, afterSeq: number): 'resumed' | 'dropped' {
    const missed = this.log.after(this.streamId, afterSeq);
    const expected = Math.max(0, this.seq - afterSeq);
    if (missed.length < expected) return 'dropped';
    if (this.attached) this.sink?.end();
    sink.writeHead(200, SSE_HEADERS);
    sink.flushHeaders();
    for (const event of missed) writeEvent(sink, eventId(this.streamId, event.seq), event.data);
    if (this.mode === 'done') {
      sink.end();
      return 'resumed';
    }
    this.mode = 'sse';
    this.attach(sink);
    this.resumed?.();
    this.resumed = undefined;
    return 'resumed';
  }

  /**
   * Ends its connection before the final message, for the client to resume it with Last-Event-ID
   * (SEP-1699 polling): last goes an event with an id to resume from (empty, as a priming event is) and
   * the reconnection delay, when there is one; what comes after is kept in the log for the resumption.
   * Settles when a GET resumes it; undefined when it was not on a connection (nothing to close).
   */
  poll(retryMs: number | undefined): Promise<void> | undefined {
    const sink = this.sink;
    if (sink === undefined || this.mode === 'done') return undefined;
    this.begin();
    this.seq++;
    this.log.append(this.streamId, this.seq, '');
    this.sink = undefined;
    const retry = retryMs === undefined ? '' : `retry: ${retryMs}\n`;
    sink.end(`id: ${eventId(this.streamId, this.seq)}\n${retry}data: \n\n`);
    return new Promise((resolve) => (this.resumed = resolve));
  }

  /**
   * Ends the stream without a final message (the session is over, or the request was cancelled): a
   * response not yet begun becomes an SSE stream without events, a valid answer that carries nothing.
   */
  abort(): void {
    if (this.mode === 'done') return;
    this.begin();
    this.mode = 'done';
    this.sink?.end();
    this.onDone();
  }

  private attach(sink: ServerResponse): void {
    this.sink = sink;
    sink.on('close', () => {
      if (this.sink !== sink) return;
      // The connection dropped: keep logging events, a GET with Last-Event-ID may pick them up. A stream
      // that sent none has no id to resume by, so it is over.
      this.sink = undefined;
      if (this.mode === 'undecided' || this.endsWithConnection) this.abort();
    });
  }
}

const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
};

/**
 * A client that does not read its stream may fall this far behind; then its connection is dropped (the
 * events stay in the log, so it can resume with Last-Event-ID) instead of buffering without end.
 */
const MAX_UNREAD_BYTES = 8 * 1024 * 1024;

/**
 * One SSE event, one data line: a message read over HTTP has no raw line break left (line-breaks.ts), and
 * a stdio line no LF, but it may hold a CR between tokens, which would end the data line here.
 */
function writeEvent(sink: ServerResponse, id: string, data: Outbound): void {
  if (sink.writableLength > MAX_UNREAD_BYTES) {
    sink.destroy();
    return;
  }
  sink.cork();
  sink.write(`id: ${id}\ndata: `);
  // A string is JSON.stringify's, with no raw line break.
  const line = typeof data === 'string' ? data : onOneLine(data);
  if (line instanceof Pieces) for (const part of line.parts) sink.write(part);
  else sink.write(line);
  sink.write('\n\n');
  sink.uncork();
}

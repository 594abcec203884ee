/**
 * The server side of one Streamable HTTP response: it stays undecided until the first message, so that a
 * request answered at once goes back as plain JSON, and becomes an SSE stream (each event with an id, kept
 * in the session's event log for resumption) as soon as anything else must go first.
 */
import type { ServerResponse } from 'node:http';

/** Events of one session, bounded, for replay after a dropped connection (Last-Event-ID). */
export class EventLog {
  private readonly events: { streamId: string; seq: number; data: Buffer | string }[] = [];

  constructor(private readonly capacity: number) {}

  append(streamId: string, seq: number, data: Buffer | string): void {
    this.events.push({ streamId, seq, data });
    if (this.events.length > this.capacity) this.events.shift();
  }

  /** The events of a stream after the given sequence number, in order. */
  after(streamId: string, seq: number): { seq: number; data: Buffer | string }[] {
    return this.events.filter((event) => event.streamId === streamId && event.seq > seq);
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

  constructor(
    readonly streamId: string,
    sink: ServerResponse,
    private readonly log: EventLog,
    private readonly onDone: () => void,
  ) {
    this.attach(sink);
  }

  get open(): boolean {
    return this.mode !== 'done';
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
  event(data: Buffer | string): void {
    if (this.mode === 'done') return;
    this.begin();
    this.seq++;
    this.log.append(this.streamId, this.seq, data);
    if (this.sink) writeEvent(this.sink, eventId(this.streamId, this.seq), data);
  }

  /** The last message: as JSON if nothing was sent before it, else as the last event. */
  finish(data: Buffer | string): void {
    if (this.mode === 'done') return;
    if (this.mode === 'undecided' && this.sink) {
      this.sink.writeHead(200, { 'content-type': 'application/json' });
      this.sink.end(data);
    } else {
      this.event(data);
      this.sink?.end();
    }
    this.mode = 'done';
    this.onDone();
  }

  /** A GET with Last-Event-ID resumes the stream: missed events first, then what is still to come. */
  resume(sink: ServerResponse, afterSeq: number): void {
    sink.writeHead(200, SSE_HEADERS);
    sink.flushHeaders();
    for (const event of this.log.after(this.streamId, afterSeq)) {
      writeEvent(sink, eventId(this.streamId, event.seq), event.data);
    }
    if (this.mode === 'done') {
      sink.end();
      return;
    }
    this.mode = 'sse';
    this.attach(sink);
  }

  /** Ends the stream without a final message (the session is over). */
  abort(): void {
    if (this.mode === 'done') return;
    this.mode = 'done';
    this.sink?.end();
    this.onDone();
  }

  private attach(sink: ServerResponse): void {
    this.sink = sink;
    sink.on('close', () => {
      // The connection dropped: keep logging events, a GET with Last-Event-ID may pick them up.
      if (this.sink === sink) this.sink = undefined;
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

/** One SSE event; a JSON-RPC message has no raw newline, so it is one data line, written as it is. */
function writeEvent(sink: ServerResponse, id: string, data: Buffer | string): void {
  if (sink.writableLength > MAX_UNREAD_BYTES) {
    sink.destroy();
    return;
  }
  sink.cork();
  sink.write(`id: ${id}\ndata: `);
  sink.write(data);
  sink.write('\n\n');
  sink.uncork();
}

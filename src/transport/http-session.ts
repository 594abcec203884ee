/**
 * One MCP session on taskgate's Streamable HTTP front, as a Channel: messages POSTed by the client come in;
 * messages for the client go out on the stream they belong to — a response on its request's stream, a
 * related message on that stream while it is open, anything else on the GET stream (or, without one, on
 * the newest open request stream, or queued until a GET stream opens).
 */
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { idKey, type RequestId } from '../protocol/messages.js';
import type { Channel, ChannelHandlers, Route } from './channel.js';
import { EventLog, ResponseStream, parseEventId } from './event-stream.js';

const MAX_QUEUED = 1_000;

export class HttpSession implements Channel {
  readonly id = randomBytes(16).toString('base64url');
  private handlers: ChannelHandlers | undefined;
  private readonly byRequest = new Map<string | number, ResponseStream>();
  private readonly streams = new Map<string, ResponseStream>();
  private standalone: ResponseStream | undefined;
  private readonly queued: (Buffer | string)[] = [];
  private readonly log: EventLog;
  private nextStream = 0;
  private closed = false;
  lastActivity = Date.now();

  constructor(
    eventLogSize: number,
    /** The identity that opened the session; only it may use the session. */
    readonly identity?: string,
  ) {
    this.log = new EventLog(eventLogSize);
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Streams still open (a session with none and no activity for a while is idle). */
  get openStreams(): number {
    return this.byRequest.size + (this.standalone?.open ? 1 : 0);
  }

  start(handlers: ChannelHandlers): void {
    this.handlers = handlers;
  }

  /** A POSTed request: its answer (and anything related) goes on this response. */
  request(id: RequestId, raw: Buffer, res: ServerResponse): void {
    this.lastActivity = Date.now();
    const key = idKey(id);
    const stream = this.newStream(res, () => {
      if (this.byRequest.get(key) === stream) this.byRequest.delete(key);
    });
    this.byRequest.set(key, stream);
    this.handlers?.message(raw);
  }

  /** A POSTed notification or response: accepted (202) at once. */
  accept(raw: Buffer): void {
    this.lastActivity = Date.now();
    this.handlers?.message(raw);
  }

  /** GET: the standalone stream for messages not tied to a request. False when one is already open. */
  openStandalone(res: ServerResponse): boolean {
    if (this.standalone?.open) return false;
    this.lastActivity = Date.now();
    this.standalone = this.newStream(res, () => undefined);
    res.on('close', () => this.standalone?.abort());
    this.standalone.begin();
    while (this.queued.length > 0 && this.standalone.open) this.standalone.event(this.queued.shift()!);
    return true;
  }

  /** GET with Last-Event-ID: false when the id names no stream of this session. */
  resume(lastEventId: string, res: ServerResponse): boolean {
    const at = parseEventId(lastEventId);
    const stream = at && this.streams.get(at.streamId);
    if (!at || !stream) return false;
    stream.resume(res, at.seq);
    return true;
  }

  sendRaw(raw: Buffer | string, route?: Route): void {
    if (this.closed) return;
    if (route && 'responseTo' in route) {
      this.byRequest.get(idKey(route.responseTo))?.finish(raw);
      return;
    }
    const related = route && this.byRequest.get(idKey(route.relatedTo));
    const stream = related ?? (this.standalone?.open ? this.standalone : this.newestRequestStream());
    if (stream) stream.event(raw);
    else if (this.queued.length < MAX_QUEUED) this.queued.push(raw);
  }

  send(message: object, route?: Route): void {
    this.sendRaw(JSON.stringify(message), route);
  }

  /** The client ended the session (DELETE), or taskgate did (and says why). */
  async close(reason = 'the client ended the HTTP session'): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const stream of [...this.byRequest.values(), ...(this.standalone ? [this.standalone] : [])])
      stream.abort();
    const handlers = this.handlers;
    this.handlers = undefined;
    handlers?.closed({ reason });
  }

  private newStream(res: ServerResponse, onDone: () => void): ResponseStream {
    const streamId = `${this.id.slice(0, 8)}${(this.nextStream++).toString(36)}`;
    const stream = new ResponseStream(streamId, res, this.log, () => {
      onDone();
      // A finished stream stays resumable while its events are in the log; one answered with plain JSON
      // has none to replay.
      if (!stream.resumable) this.streams.delete(streamId);
    });
    this.streams.set(streamId, stream);
    if (this.streams.size > 1_000) this.streams.delete(this.streams.keys().next().value!);
    return stream;
  }

  private newestRequestStream(): ResponseStream | undefined {
    let newest: ResponseStream | undefined;
    for (const stream of this.byRequest.values()) newest = stream;
    return newest;
  }
}

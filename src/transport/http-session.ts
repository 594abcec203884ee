/**
 * One MCP session on taskgate's Streamable HTTP front, as a Channel: messages POSTed by the client come in;
 * messages for the client go out on the stream they belong to — a response on its request's stream, a
 * related message on that stream while it is open, anything else on the GET stream (or, without one, on
 * the newest open request stream, or queued until a GET stream opens).
 */
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { ProtocolError } from '../protocol/errors.js';
import { toJsonRpcError } from '../tasks/wire-errors.js';
import { handed, serialize } from '../protocol/exact-ids.js';
import {
  errorResponse,
  idKey,
  type Notification,
  type Request,
  type RequestId,
  type Response,
} from '../protocol/messages.js';
import { Pieces } from '../protocol/pieces.js';
import type { Channel, ChannelHandlers, Route } from './channel.js';
import type { UpstreamChallenge } from './http-refusals.js';
import { upstreamRefusalOf } from './upstream-refusal.js';
import {
  EventLog,
  type KeptBytes,
  KeptMessages,
  type Outbound,
  ResponseStream,
  parseEventId,
} from './event-stream.js';
import type { Valve } from './valve.js';

const MAX_QUEUED = 1_000;

/**
 * The first version whose clients resume a request's stream closed before its answer (SEP-1699): an older
 * one may take the empty priming event for a message, and is not made to poll (nor is it by an SDK server).
 */
const POLLED_FROM = '2025-11-25';

/** How many bytes of messages a session keeps for its client, for replay and until a stream opens. */
export interface SessionRetention {
  /** SSE events kept for replay (Last-Event-ID). */
  eventLogSize: number;
  /** Bytes of those, and (separately) of messages queued for a GET stream not yet open. */
  eventLogBytes: number;
  /** What all sessions keep together. */
  shared: KeptBytes;
}

export type Resumption = 'resumed' | 'unknown' | 'dropped';

export class HttpSession implements Channel {
  readonly id = randomBytes(16).toString('base64url');
  private handlers: ChannelHandlers | undefined;
  private readonly byRequest = new Map<string | number, ResponseStream>();
  private readonly streams = new Map<string, ResponseStream>();
  /** Request streams whose client can resume them, so that they may be closed for it to poll. */
  private readonly pollable = new WeakSet<ResponseStream>();
  private standalone: ResponseStream | undefined;
  private readonly queued: KeptMessages<{ data: Outbound }>;
  private readonly log: EventLog;
  private nextStream = 0;
  private closed = false;
  /** The session's own initialize while it is unanswered, and what to do if it fails. */
  private opening: { key: string | number; res: ServerResponse; failed: () => void } | undefined;
  lastActivity = Date.now();
  /**
   * Shut while the session's stdio server holds too much of what was written to it unread: the front then
   * reads no more of the session's POSTed bodies (valve.ts). Absent for an upstream that is not a pipe.
   */
  intake: Valve | undefined;

  constructor(
    retention: SessionRetention,
    /** The identity that opened the session; only it may use the session. */
    readonly identity?: string,
    /** Answers an upstream's 401 to the caller's credential with a 401 (http-refusals.ts). */
    private readonly upstreamChallenge?: UpstreamChallenge,
  ) {
    this.log = new EventLog(retention.eventLogSize, retention.eventLogBytes, retention.shared);
    this.queued = new KeptMessages(MAX_QUEUED, retention.eventLogBytes, retention.shared);
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /**
   * Streams still open on a connection (a session with none and no activity for a while is idle; one whose
   * client dropped it waits for a resumption only that long).
   */
  get openStreams(): number {
    let open = this.standalone?.open ? 1 : 0;
    for (const stream of this.byRequest.values()) if (stream.attached) open++;
    return open;
  }

  /** Requests of the client not answered yet, on a connection or waiting for a resumption. */
  get requestsInFlight(): number {
    return this.byRequest.size;
  }

  start(handlers: ChannelHandlers): void {
    this.handlers = handlers;
  }

  /**
   * The initialize that opens the session. Its answer carries the session id; when it is an error, the
   * id is kept back and `failed` ends the session at once.
   */
  initialize(id: RequestId, raw: Buffer, res: ServerResponse, failed: () => void): void {
    res.setHeader('mcp-session-id', this.id);
    this.opening = { key: idKey(id), res, failed };
    this.request(id, raw, res);
  }

  /**
   * A POSTed request: its answer (and anything related) goes on this response. False, and nothing done,
   * when a request with this id is still in flight. `parsed`: the front's read of `raw`, handed on so that
   * the body is parsed once (ChannelHandlers.message).
   */
  request(id: RequestId, raw: Buffer, res: ServerResponse, parsed?: Request): boolean {
    this.lastActivity = Date.now();
    const key = idKey(id);
    if (this.byRequest.has(key)) return false;
    const stream = this.newStream(res, () => {
      if (this.byRequest.get(key) === stream) this.byRequest.delete(key);
    });
    this.byRequest.set(key, stream);
    const version = res.req.headers['mcp-protocol-version'];
    if (typeof version === 'string' && version >= POLLED_FROM) this.pollable.add(stream);
    try {
      this.handlers?.message(raw, undefined, parsed && handed(parsed));
    } catch (error) {
      // A bug on the way in: the request gets its own error, and its stream ends with it.
      this.answer(key, serialize(errorResponse(id, toJsonRpcError(error))), 500);
      throw error;
    }
    return true;
  }

  /**
   * A POSTed notification or response: accepted (202) at once. A cancelled request gets no answer (MCP
   * cancellation), so its stream ends here, empty.
   */
  accept(raw: Buffer, parsed?: Notification | Response): void {
    this.lastActivity = Date.now();
    this.handlers?.message(raw, undefined, parsed && handed(parsed));
    const notification = parsed !== undefined && 'method' in parsed ? parsed : undefined;
    const cancelled = notification?.method === 'notifications/cancelled' && notification.params?.requestId;
    if (typeof cancelled !== 'string' && typeof cancelled !== 'number') return;
    const key = idKey(cancelled);
    // initialize cannot be cancelled.
    if (key !== this.opening?.key) this.byRequest.get(key)?.abort();
  }

  /** A POSTed message dropped unread (too large): the session applies its rules to what it could be. */
  refuse(error: ProtocolError, id: RequestId | null): void {
    this.lastActivity = Date.now();
    this.handlers?.malformed(error, id);
  }

  /** GET: the standalone stream for messages not tied to a request. False when one is already open. */
  openStandalone(res: ServerResponse): boolean {
    if (this.standalone?.open) return false;
    this.lastActivity = Date.now();
    this.standalone = this.newStream(res, () => undefined, true);
    this.standalone.begin();
    while (this.queued.length > 0 && this.standalone.open) this.standalone.event(this.queued.shift()!.data);
    return true;
  }

  /** GET with Last-Event-ID: picks up the stream the id names, unless it cannot be (why not, then). */
  resume(lastEventId: string, res: ServerResponse): Resumption {
    const at = parseEventId(lastEventId);
    const stream = at && this.streams.get(at.streamId);
    if (!at || !stream) return 'unknown';
    const resumption = stream.resume(res, at.seq);
    if (resumption === 'resumed') this.countsAsActivity(res);
    return resumption;
  }

  sendRaw(raw: Buffer | string, route?: Route): void {
    this.deliver(raw, route);
  }

  /** A message in the pieces it was read in: written as them, never joined (issue 33). */
  sendPieces(line: Pieces, route?: Route): void {
    this.deliver(line, route);
  }

  private deliver(raw: Outbound, route: Route | undefined): void {
    if (this.closed) return;
    if (route && 'responseTo' in route) return this.answer(idKey(route.responseTo), raw);
    const related = route && this.byRequest.get(idKey(route.relatedTo));
    const stream = related ?? (this.standalone?.open ? this.standalone : this.newestRequestStream());
    if (stream) stream.event(raw);
    else this.queued.push({ data: raw });
  }

  send(message: object, route?: Route): void {
    this.sendRaw(JSON.stringify(message), route);
  }

  pauseStream(requestId: RequestId, retryMs: number | undefined): Promise<void> | undefined {
    const stream = this.byRequest.get(idKey(requestId));
    return stream !== undefined && this.pollable.has(stream) ? stream.poll(retryMs) : undefined;
  }

  /** The owner ends the session: its streams end, and nothing is reported back (the owner knows). */
  async close(): Promise<void> {
    this.shut();
  }

  /**
   * The client ended the session (DELETE), or the front did for it (and says why: idle, left, shutting
   * down): for the owner, the other side went away, and it hears so once. Nothing, after its own close().
   */
  end(reason = 'the client ended the HTTP session'): void {
    const handlers = this.handlers;
    if (this.shut()) handlers?.closed({ reason });
  }

  /** Ends the streams and drops what was kept; false when it was over already. */
  private shut(): boolean {
    if (this.closed) return false;
    this.closed = true;
    for (const stream of [...this.byRequest.values(), ...(this.standalone ? [this.standalone] : [])])
      stream.abort();
    this.log.clear();
    this.queued.clear();
    this.handlers = undefined;
    return true;
  }

  /** The final message for a request: a failed initialize ends the session, its id never given out. */
  private answer(key: string | number, raw: Outbound, status?: number): void {
    const stream = this.byRequest.get(key);
    // An upstream's 401 to the caller's credential is a 401 here, unless its stream has begun (then only the error).
    const refusal = this.upstreamChallenge && upstreamRefusalOf(raw);
    const refused = refusal ? { 'www-authenticate': this.upstreamChallenge!(refusal.wwwAuthenticate) } : {};
    if (refusal) status = 401;
    const opening = this.opening;
    if (opening?.key !== key) return stream?.finish(raw, status, refused);
    this.opening = undefined;
    if (!isError(raw)) return stream?.finish(raw, status);
    if (!opening.res.headersSent) opening.res.removeHeader('mcp-session-id');
    stream?.finish(raw, status, refused);
    opening.failed();
  }

  /** Idleness counts from the end of the last stream, or from when its connection dropped. */
  private countsAsActivity(res: ServerResponse): void {
    res.on('close', () => (this.lastActivity = Date.now()));
  }

  private newStream(res: ServerResponse, onDone: () => void, endsWithConnection = false): ResponseStream {
    const streamId = `${this.id.slice(0, 8)}${(this.nextStream++).toString(36)}`;
    this.countsAsActivity(res);
    const stream = new ResponseStream(
      streamId,
      res,
      this.log,
      () => {
        this.lastActivity = Date.now();
        onDone();
        // A finished stream stays resumable while its events are in the log; one answered with plain JSON
        // has none to replay.
        if (!stream.resumable) this.streams.delete(streamId);
      },
      endsWithConnection,
    );
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

/** Whether a response is an error (only the session's initialize is looked at this way: it is small). */
function isError(raw: Outbound): boolean {
  try {
    const text = typeof raw === 'string' ? raw : (raw instanceof Pieces ? raw.join() : raw).toString('utf8');
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && 'error' in value;
  } catch {
    return true;
  }
}

/**
 * The upstream MCP server over Streamable HTTP (MCP 2025-11-25, basic/transports), taskgate being its
 * client: a Channel like the stdio child's, so that the session cannot tell them apart.
 *
 * Every message goes out as its own POST. A request's answer comes back as one JSON body or on an SSE
 * stream, along with the requests and notifications the server makes for it: all of them are delivered
 * with `arrival.onStreamOf` = the id of that request. The standalone GET stream, opened once the client's
 * notifications/initialized has gone out, carries the rest.
 *
 * What the session can count on: every request it sends gets exactly one answer through `message`, or
 * is handed back by a `closed` (below), until the session closes the channel itself (then it is the
 * session's, unreported). The answer is the server's, or one made here (code
 * UpstreamUnavailable) when the server cannot be reached, answers with an HTTP error, loses the stream and
 * cannot resume it (GET with Last-Event-ID), or does not answer initialize within `handshakeTimeoutMs`. A
 * request it cancels (notifications/cancelled) gets none, as MCP says: that is how the session's deadline
 * ends one. An upstream that is down does not close the channel.
 *
 * A server that ends the session (HTTP 404 to its id) is reported as a stdio child that exits and is
 * restarted: `closed` with `reopening` (what was in flight in that session is the session's to answer),
 * then a new session set up with the client's own handshake, then `reopened` once the server has answered
 * it as it did the first time. One that answers otherwise is not used: a final `closed` says so. A new
 * session that cannot be started fails what waits for it and is tried again, ever more slowly.
 */
import type { Logger } from 'pino';
import { ErrorCode, ProtocolError, type JsonRpcErrorObject } from '../protocol/errors.js';
import { idOfOversized, idOfResultFrame, parseFrame } from '../protocol/frames.js';
import {
  errorResponse,
  idKey,
  isId,
  isObject,
  type JsonObject,
  type RequestId,
} from '../protocol/messages.js';
import { backoffDelay } from './backoff.js';
import type { Channel, ChannelHandlers, Route } from './channel.js';
import { promiseOf } from './handshake-promise.js';
import {
  HttpOrigin,
  connectionBroke,
  discard,
  header,
  mediaType,
  networkReason,
  pause,
  pump,
  readLimited,
  statusLine,
  type Headers,
  type Reply,
  type ReplyBody,
} from './http-wire.js';
import { SseParser, type SseEvent } from './sse.js';
import { STANDALONE_OPEN_WAIT_MS, StandaloneStream } from './standalone-stream.js';

export interface HttpUpstreamOptions {
  /** The server's MCP endpoint, e.g. `http://127.0.0.1:3000/mcp`. */
  url: string;
  /** Sent with every HTTP request (an API key, say); the transport's own headers win over these. */
  headers?: Record<string, string> | undefined;
  /**
   * How long initialize (the client's, or the one that opens a new session) may wait for its answer, and a
   * one-way POST for its acceptance: nobody cancels those. Other requests are bounded by their sender (the
   * session's `upstream.requestTimeout`), which cancels them. Default 5 minutes.
   */
  handshakeTimeoutMs?: number | undefined;
  /** Larger messages from the server are dropped and reported through `malformed`. */
  maxMessageBytes: number;
  /** Attempts to resume a dropped response stream before its request fails. Default 3. */
  resumeAttempts?: number | undefined;
  /**
   * How long a resumption (GET with Last-Event-ID) may bring nothing for its request before it is given up:
   * a request that only reads is then sent once more, any other fails. A server that answered while the
   * stream was closed and kept no event of it (typescript-sdk #2151) would otherwise hold it to its
   * deadline. Default 5 s.
   */
  resumeTimeoutMs?: number | undefined;
  /** Delay before reconnecting a dropped stream when the server set none; doubles up to the max. */
  reconnectDelayMs?: number | undefined;
  reconnectMaxDelayMs?: number | undefined;
}

export const HTTP_UPSTREAM_DEFAULTS = {
  handshakeTimeoutMs: 5 * 60_000,
  resumeAttempts: 3,
  resumeTimeoutMs: 5_000,
  reconnectDelayMs: 250,
  reconnectMaxDelayMs: 10_000,
} as const;

/**
 * Requests that only read, sent once more when their connection broke before any answer (a kept-alive
 * connection the server was closing as they went out). Nothing that acts is ever sent twice: a
 * tools/call may have run even though its answer never came.
 */
const REPEATABLE = new Set([
  'ping',
  'tools/list',
  'resources/list',
  'resources/templates/list',
  'resources/read',
  'prompts/list',
  'prompts/get',
  'completion/complete',
  'tasks/get',
  'tasks/result',
  'tasks/list',
]);

/** How long an answered stream may stay open before it is closed from this side. */
const ANSWERED_STREAM_GRACE_MS = 1_000;
const DELETE_TIMEOUT_MS = 2_000;
const ERROR_BODY_LIMIT = 64 * 1024;
/**
 * How long a notifications/cancelled may wait for the server to take the request it cancels. Answer headers
 * say the server has it; a server answering with one JSON body sends none until it is done.
 */
const CANCEL_HOLD_MAX_MS = 1_000;

/**
 * new: nothing sent yet · initializing: the client's initialize (or its notifications/initialized) is out,
 * others wait · ready · expired: the server forgot the session, a new one is needed · renewing: taskgate is
 * making it, others wait · closed.
 */
type Phase = 'new' | 'initializing' | 'ready' | 'expired' | 'renewing' | 'closed';

/** A message to send, with the little of its envelope the transport needs. */
interface Outgoing {
  body: Buffer | string;
  /** Present for a request. */
  id?: RequestId;
  /** Present for a request or a notification. */
  method?: string;
  /** The request a notifications/cancelled is about. */
  cancels?: RequestId;
  /** A notification already sent again once, after the server had forgotten the session. */
  resent?: boolean;
  /** The initialize that opens a session: its reply sets the session id and the protocol version. */
  opens?: boolean;
}

type OutgoingRequest = Outgoing & { id: RequestId; method: string };

/** A request waiting for its answer. */
interface Call {
  out: OutgoingRequest;
  /** The upstream session it was sent in. */
  generation: number;
  /** Ends its HTTP exchange (POST, or the GET resuming it); a new one when it is sent once more. */
  controller: AbortController;
  /** Settles once the server has taken the POST (answer headers came) or it failed. */
  taken: Promise<void>;
  markTaken(): void;
  timer: NodeJS.Timeout | undefined;
  /** Runs while a resumption has brought nothing for the request. */
  resumeTimer: NodeJS.Timeout | undefined;
  done: boolean;
  lastEventId: string | undefined;
  /** What the server asked for with `retry:`. */
  retryMs: number | undefined;
  /** Sent a second time, its connection having broken (only requests in REPEATABLE). */
  repeated: boolean;
  resumes: number;
  /** Ids of the events delivered, so that a replay never delivers one twice. */
  seen: Set<string>;
  /** For taskgate's own calls (the initialize of a new session): the answer goes here, not to the session. */
  own?: { resolve(raw: Buffer): void; reject(error: Error): void };
}

export class HttpUpstream implements Channel {
  private handlers: ChannelHandlers | undefined;
  private readonly origin: HttpOrigin;
  private readonly staticHeaders: Headers;
  private readonly logger: Logger;
  private readonly handshakeTimeoutMs: number;
  private readonly resumeAttempts: number;
  private readonly resumeTimeoutMs: number;
  private readonly reconnectDelayMs: number;
  private readonly reconnectMaxDelayMs: number;
  private readonly maxMessageBytes: number;

  private phase: Phase = 'new';
  /** Counts upstream sessions: a request remembers the one it was sent in. */
  private generation = 0;
  private upstreamSessionId: string | undefined;
  private protocolVersion: string | undefined;
  /** The client's initialize and whether its notifications/initialized went out: replayed for a new session. */
  private initializeBody: Buffer | string | undefined;
  private initializedSent = false;
  /** What the first session's initialize answer committed to: every later session is held to it. */
  private promised: string | undefined;
  /**
   * Sessions lost, and new ones that could not be started, since the server last answered a request: from
   * the second on, the next new session waits the longer (a server that forgets every session at once is
   * not asked for sessions in a spin).
   */
  private setbacks = 0;
  private renewTimer: NodeJS.Timeout | undefined;
  private readonly calls = new Set<Call>();
  /** Messages waiting for a session (while initializing or renewing), in order. */
  private queue: Outgoing[] = [];
  private standalone: StandaloneStream | undefined;
  private standaloneWaiters: ((stream: StandaloneStream | undefined) => void)[] = [];
  private closing: Promise<void> | undefined;
  /** The owner closed it: nothing more is reported as `closed`, not even a final one under way. */
  private closedByOwner = false;

  constructor(options: HttpUpstreamOptions, logger: Logger) {
    const url = new URL(options.url);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new Error(`The upstream URL must be http: or https:, not ${url.protocol}`);
    }
    this.origin = new HttpOrigin(url);
    this.staticHeaders = Object.fromEntries(
      Object.entries(options.headers ?? {}).map(([name, value]) => [name.toLowerCase(), value]),
    );
    // Never the query string or credentials in logs: either may carry a secret.
    this.logger = logger.child({ upstream: `${url.origin}${url.pathname}` });
    this.maxMessageBytes = options.maxMessageBytes;
    this.handshakeTimeoutMs = options.handshakeTimeoutMs ?? HTTP_UPSTREAM_DEFAULTS.handshakeTimeoutMs;
    this.resumeAttempts = options.resumeAttempts ?? HTTP_UPSTREAM_DEFAULTS.resumeAttempts;
    this.resumeTimeoutMs = options.resumeTimeoutMs ?? HTTP_UPSTREAM_DEFAULTS.resumeTimeoutMs;
    this.reconnectDelayMs = options.reconnectDelayMs ?? HTTP_UPSTREAM_DEFAULTS.reconnectDelayMs;
    this.reconnectMaxDelayMs = options.reconnectMaxDelayMs ?? HTTP_UPSTREAM_DEFAULTS.reconnectMaxDelayMs;
  }

  /** The session id the server assigned (Mcp-Session-Id), if it did. */
  get sessionId(): string | undefined {
    return this.upstreamSessionId;
  }

  /**
   * Resolves once the standalone GET stream of the current session is open (true), or when the server
   * offers none or the channel closed (false). For health checks and tests.
   */
  async standaloneStream(): Promise<boolean> {
    while (this.phase !== 'closed') {
      const stream =
        this.standalone ??
        (await new Promise<StandaloneStream | undefined>((r) => this.standaloneWaiters.push(r)));
      if (stream === undefined) return false;
      if (await stream.settled()) return true;
      if (stream === this.standalone) return false;
    }
    return false;
  }

  /** A getter, so that TypeScript does not narrow `phase` across an await. */
  private get closed(): boolean {
    return this.phase === 'closed';
  }

  start(handlers: ChannelHandlers): void {
    this.handlers = handlers;
  }

  sendRaw(raw: Buffer | string, _route?: Route, parsed?: object): void {
    let value: unknown = parsed;
    if (value === undefined) {
      try {
        value = JSON.parse(typeof raw === 'string' ? raw : raw.toString('utf8'));
      } catch {
        value = undefined; // the server will say what it thinks of it
      }
    }
    this.dispatch({ body: raw, ...envelopeOf(value) });
  }

  send(message: object): void {
    this.dispatch({ body: JSON.stringify(message), ...envelopeOf(message) });
  }

  close(): Promise<void> {
    this.closedByOwner = true;
    this.closing ??= this.shutDown('taskgate closed its connection to the upstream server');
    return this.closing;
  }

  // ── sending ──────────────────────────────────────────────────────────────────────────────────────

  private dispatch(out: Outgoing): void {
    switch (this.phase) {
      case 'closed':
        return;
      case 'initializing':
      case 'renewing':
        this.queue.push(out);
        return;
      case 'expired':
        this.queue.push(out);
        return this.background(this.renew());
      case 'new':
        if (out.method === 'initialize' && out.id !== undefined) {
          this.phase = 'initializing';
          this.initializeBody = out.body;
          out = { ...out, opens: true };
        }
        break;
      case 'ready':
        break;
    }
    if (out.method === 'notifications/initialized' && this.phase === 'ready') {
      return this.background(this.initialized(out));
    }
    if (out.cancels !== undefined) return this.cancel(out, out.cancels);
    if (isRequest(out)) this.background(this.runCall(this.newCall(out)));
    else this.background(this.postOneWay(out));
  }

  /**
   * Work that runs on its own. It handles its own failures; what escapes is a bug (in a handler, say),
   * logged rather than left to crash the process as an unhandled rejection.
   */
  private background(work: Promise<unknown>): void {
    work.catch((error: unknown) => this.logger.error({ err: error }, 'HTTP upstream: unexpected failure'));
  }

  /**
   * The client's notifications/initialized. Each message is its own POST, so one sent just after could
   * overtake it: the others wait until the server has taken it and the standalone stream it opens is up.
   */
  private async initialized(out: Outgoing): Promise<void> {
    this.initializedSent = true;
    this.phase = 'initializing';
    if (await this.postOneWay(out)) await this.standalone?.openedWithin(STANDALONE_OPEN_WAIT_MS);
    if (this.phase !== 'initializing') return;
    this.phase = 'ready';
    this.flush();
  }

  /** Sends what waited for a session, in order. */
  private flush(): void {
    const queued = this.queue;
    this.queue = [];
    for (const out of queued) this.dispatch(out);
  }

  private newCall(out: OutgoingRequest, own?: Call['own']): Call {
    let markTaken!: () => void;
    const taken = new Promise<void>((resolve) => (markTaken = resolve));
    const call: Call = {
      out,
      generation: this.generation,
      controller: new AbortController(),
      taken,
      markTaken,
      timer: undefined,
      resumeTimer: undefined,
      done: false,
      lastEventId: undefined,
      retryMs: undefined,
      repeated: false,
      resumes: 0,
      seen: new Set(),
      ...(own === undefined ? {} : { own }),
    };
    this.calls.add(call);
    if (out.opens) this.arm(call);
    return call;
  }

  private async runCall(call: Call): Promise<void> {
    const { method } = call.out;
    const headers = this.postHeaders();
    let reply: Reply;
    try {
      reply = await this.origin.request('POST', headers, call.controller.signal, call.out.body);
    } catch (error) {
      if (!call.done && !call.repeated && REPEATABLE.has(method) && connectionBroke(error)) {
        call.repeated = true;
        this.logger.info(
          { err: error },
          `the connection broke under ${method}, unanswered: sending it again`,
        );
        return this.runCall(call);
      }
      call.markTaken();
      if (call.done) return;
      this.logger.warn({ err: error }, `cannot reach the upstream server to send ${method}`);
      return this.fail(call, `Upstream server unavailable: ${networkReason(error)}`);
    }
    call.markTaken();
    if (call.done) return discard(reply.body);
    const status = reply.statusCode;
    if (status === 404 && headers['mcp-session-id'] !== undefined && !call.own) {
      // The server has forgotten the session: the request is lost with it, as it would be with a child that died.
      discard(reply.body);
      return this.sessionGone(call.generation);
    }
    if (status >= 300) return this.failFromReply(call, reply);
    if (call.out.opens) this.upstreamSessionId = header(reply, 'mcp-session-id');
    const type = mediaType(reply);
    if (status === 200 && type === 'text/event-stream') return this.readStream(call, reply.body);
    if (status === 200 && type === 'application/json') return this.readJson(call, reply.body);
    discard(reply.body);
    this.fail(
      call,
      status === 202
        ? `Upstream server accepted ${method} without answering it (HTTP 202)`
        : `Upstream server answered ${method} with ${statusLine(status)} and content type "${type}"`,
    );
  }

  /** A notification or a response: the server owes nothing back but 202. Says whether it was taken. */
  private async postOneWay(out: Outgoing): Promise<boolean> {
    const what = out.method ?? 'a response';
    const generation = this.generation;
    const headers = this.postHeaders();
    let reply: Reply;
    try {
      reply = await this.origin.request(
        'POST',
        headers,
        AbortSignal.timeout(this.handshakeTimeoutMs),
        out.body,
      );
    } catch (error) {
      if (this.phase !== 'closed') this.logger.warn({ err: error }, `could not send ${what} upstream`);
      return false;
    }
    discard(reply.body);
    const status = reply.statusCode;
    if (status === 404 && headers['mcp-session-id'] !== undefined) {
      // A notification goes to the next session too; a response answers a request of the session that is gone.
      const again =
        out.id === undefined &&
        out.method !== undefined &&
        out.method !== 'notifications/initialized' &&
        out.cancels === undefined &&
        !out.resent;
      this.sessionGone(generation, again ? { ...out, resent: true } : undefined);
      return false;
    }
    if (status >= 300) {
      this.logger.warn(`upstream server refused ${what}: ${statusLine(status)}`);
      return false;
    }
    if (out.method === 'notifications/initialized' && generation === this.generation) this.openStandalone();
    return true;
  }

  private baseHeaders(): Headers {
    const headers: Headers = { ...this.staticHeaders };
    if (this.upstreamSessionId !== undefined) headers['mcp-session-id'] = this.upstreamSessionId;
    if (this.protocolVersion !== undefined) headers['mcp-protocol-version'] = this.protocolVersion;
    return headers;
  }

  private postHeaders(): Headers {
    return {
      ...this.baseHeaders(),
      accept: 'application/json, text/event-stream',
      'content-type': 'application/json',
    };
  }

  // ── answers ──────────────────────────────────────────────────────────────────────────────────────

  private async readJson(call: Call, body: ReplyBody): Promise<void> {
    let raw: Buffer | undefined;
    try {
      raw = await readLimited(body, this.maxMessageBytes);
    } catch (error) {
      return this.fail(
        call,
        `Upstream server unavailable: the answer to ${call.out.method} was cut off (${networkReason(error)})`,
      );
    }
    if (call.done) return;
    if (raw === undefined) return this.tooLarge(call, `more than ${this.maxMessageBytes}`, call.out.id);
    this.fromStream(call, raw);
    if (!call.done)
      this.fail(
        call,
        `Upstream server answered ${call.out.method} with a JSON body that is not its response`,
      );
  }

  private async readStream(call: Call, body: ReplyBody): Promise<void> {
    const { controller } = call;
    const parser = new SseParser(this.maxMessageBytes, {
      event: (event) => {
        if (this.callEvent(call, event)) setTimeout(() => body.destroy(), ANSWERED_STREAM_GRACE_MS).unref();
      },
      retry: (ms) => (call.retryMs = ms),
      oversized: (bytes, head, tail) => this.tooLarge(call, String(bytes), idOfOversized(head, tail)),
    });
    const error = await pump(body, parser);
    if (call.done || this.phase === 'closed' || call.controller !== controller) return;
    await this.resume(call, error === undefined ? 'the server ended it' : networkReason(error));
  }

  /** One event on a request's stream; says whether it was the answer. */
  private callEvent(call: Call, event: SseEvent): boolean {
    if (event.id !== undefined) {
      if (event.id !== '' && call.seen.has(event.id)) return false; // replayed: delivered already
      if (event.id !== '') call.seen.add(event.id);
      call.lastEventId = event.id === '' ? undefined : event.id;
    }
    call.resumes = 0;
    if (event.data.length === 0 || (event.type !== '' && event.type !== 'message')) return false;
    clearTimeout(call.resumeTimer);
    return this.fromStream(call, event.data);
  }

  /** A message that came back for a request: its answer, or something the server sends on the way. */
  private fromStream(call: Call, raw: Buffer): boolean {
    const answer = answerOf(raw);
    const { id } = call.out;
    if (answer === undefined || (answer.id !== null && idKey(answer.id) !== idKey(id))) {
      if (!call.own) this.handlers?.message(raw, { onStreamOf: id });
      return false;
    }
    if (call.done) {
      this.logger.debug({ id }, 'dropping a second answer to one request');
      return false;
    }
    // An error the server could not tie to the request (id null) is still the answer to it.
    const fixed = answer.id === null ? encode(errorResponse(id, answer.error ?? unknownError())) : raw;
    this.answer(call, fixed);
    return true;
  }

  private answer(call: Call, raw: Buffer): void {
    this.finish(call);
    const { id, opens } = call.out;
    if (!call.own) this.setbacks = 0;
    const result = opens ? initializeResultOf(raw) : undefined;
    if (opens) this.protocolVersion = result?.protocolVersion as string | undefined;
    if (call.own) return call.own.resolve(raw);
    if (opens) {
      if (result !== undefined) this.promised = promiseOf(result);
      this.phase = result === undefined ? 'new' : 'ready';
      this.flush();
    }
    this.handlers?.message(raw, { onStreamOf: id });
  }

  /** Ends a request with an error made here (code UpstreamUnavailable). */
  private fail(call: Call, message: string): void {
    if (call.done) return;
    this.finish(call);
    call.controller.abort();
    if (call.own) return call.own.reject(new Error(message));
    if (call.out.opens) {
      this.phase = 'new';
      this.upstreamSessionId = undefined;
      this.flush();
    }
    this.deliverError(call.out.id, message);
  }

  private deliverError(id: RequestId, message: string): void {
    this.handlers?.message(encode(errorResponse(id, { code: ErrorCode.UpstreamUnavailable, message })), {
      onStreamOf: id,
    });
  }

  /** An HTTP error status: the server's own JSON-RPC error when the body is one, else one naming the status. */
  private async failFromReply(call: Call, reply: Reply): Promise<void> {
    const status = reply.statusCode;
    let raw: Buffer | undefined;
    try {
      raw = await readLimited(reply.body, ERROR_BODY_LIMIT);
    } catch {
      raw = undefined;
    }
    if (call.done) return;
    const error = raw === undefined ? undefined : jsonRpcErrorOf(raw);
    const words = `Upstream server answered ${call.out.method} with ${statusLine(status)}`;
    this.logger.warn(error === undefined ? words : `${words}: ${error.message}`);
    if (error === undefined) return this.fail(call, words);
    call.controller.abort();
    this.answer(call, encode(errorResponse(call.out.id, error)));
  }

  /** A message over the size limit: the session is told, and answers the request if it was its answer. */
  private tooLarge(call: Call, bytes: string, id: RequestId | null): void {
    const message = `Message of ${bytes} bytes from the upstream server exceeds the limit of ${this.maxMessageBytes} bytes (max-message-bytes); it was dropped`;
    if (call.own) return this.fail(call, message);
    this.handlers?.malformed(new ProtocolError(ErrorCode.InvalidRequest, message), id);
    if (id !== null && idKey(id) === idKey(call.out.id)) {
      this.finish(call);
      call.controller.abort();
    }
  }

  /** Stops waiting for a request: it was answered, failed, or cancelled. */
  private finish(call: Call): void {
    call.done = true;
    clearTimeout(call.timer);
    clearTimeout(call.resumeTimer);
    this.calls.delete(call);
  }

  /** Starts an initialize's timeout: from its sending to its answer, whatever arrives meanwhile. */
  private arm(call: Call): void {
    call.timer = setTimeout(() => this.timedOut(call), this.handshakeTimeoutMs).unref();
  }

  /** MCP never cancels initialize: it only fails. */
  private timedOut(call: Call): void {
    const message = `Upstream server did not answer ${call.out.method} within ${this.handshakeTimeoutMs} ms`;
    this.logger.warn(message);
    this.fail(call, message);
  }

  /**
   * The session cancelled a request: no answer is owed any more. Each message being its own POST, the
   * notification could overtake the request it cancels, and a server ignores a cancel for an id it has not
   * seen: it waits until the server has taken the request (bounded), then the request's stream is let go.
   */
  private cancel(out: Outgoing, requestId: RequestId): void {
    const call = [...this.calls].find((c) => !c.own && idKey(c.out.id) === idKey(requestId));
    if (call === undefined) return this.background(this.postOneWay(out));
    this.finish(call);
    const held = Promise.race([call.taken, pause(CANCEL_HOLD_MAX_MS, new AbortController().signal)]);
    this.background(
      held.then(async () => {
        await this.postOneWay(out);
        call.controller.abort();
      }),
    );
  }

  // ── resumption ───────────────────────────────────────────────────────────────────────────────────

  /**
   * A request's stream dropped before its answer: GET with Last-Event-ID continues it where it stopped,
   * after the delay the server asked for, a few times; without event ids there is nothing to resume from.
   */
  private async resume(call: Call, why: string): Promise<void> {
    const { method } = call.out;
    const { controller } = call;
    let reason = why;
    while (!call.done && call.controller === controller) {
      clearTimeout(call.resumeTimer);
      if (call.lastEventId === undefined || call.resumes >= this.resumeAttempts) {
        const tried = call.lastEventId === undefined ? 'it could not be resumed' : 'resuming it failed';
        return this.fail(
          call,
          `Upstream server unavailable: the stream carrying the answer to ${method} was lost (${reason}) and ${tried}`,
        );
      }
      const delay =
        call.retryMs ?? backoffDelay(this.reconnectDelayMs, this.reconnectMaxDelayMs, call.resumes);
      call.resumes++;
      if (!(await pause(delay, controller.signal))) return;
      const headers: Headers = {
        ...this.baseHeaders(),
        accept: 'text/event-stream',
        'last-event-id': call.lastEventId,
      };
      call.resumeTimer = setTimeout(() => this.resumedEmpty(call), this.resumeTimeoutMs).unref();
      let reply: Reply;
      try {
        reply = await this.origin.request('GET', headers, controller.signal);
      } catch (error) {
        reason = networkReason(error);
        continue;
      }
      if (call.done || call.controller !== controller) return discard(reply.body);
      const status = reply.statusCode;
      if (status === 404 && headers['mcp-session-id'] !== undefined) {
        discard(reply.body);
        return this.sessionGone(call.generation);
      }
      if (status === 200 && mediaType(reply) === 'text/event-stream') {
        this.logger.debug({ id: call.out.id }, `resuming the stream of ${method}`);
        return this.readStream(call, reply.body);
      }
      discard(reply.body);
      reason = `resuming was answered ${statusLine(status)}`;
    }
  }

  /**
   * A resumption brought nothing for its request within resumeTimeoutMs: the server may have answered
   * while no stream was open and kept nothing to replay. A request that only reads is sent once more (in
   * a new exchange; the old one is let go), any other fails: it may have run.
   */
  private resumedEmpty(call: Call): void {
    if (call.done) return;
    const { method } = call.out;
    const why = `resuming it brought nothing back within ${this.resumeTimeoutMs} ms`;
    if (call.repeated || !REPEATABLE.has(method)) {
      this.logger.warn(`the stream carrying the answer to ${method} was lost and ${why}: failing it`);
      return this.fail(
        call,
        `Upstream server unavailable: the stream carrying the answer to ${method} was lost and ${why}`,
      );
    }
    this.logger.info(`the stream carrying the answer to ${method} was lost and ${why}: sending it again`);
    call.controller.abort();
    Object.assign(call, {
      controller: new AbortController(),
      repeated: true,
      lastEventId: undefined,
      retryMs: undefined,
      resumes: 0,
    });
    this.background(this.runCall(call));
  }

  // ── sessions ─────────────────────────────────────────────────────────────────────────────────────

  /**
   * The server answered 404 to the session id: it has ended the session. The session hears of it as of a
   * server that went and is coming back: what was in flight in it is lost, and the session answers it. A
   * new session is started with the client's own initialize, and what comes next (with `resend`, a
   * notification the server refused unread) goes to it.
   */
  private sessionGone(generation: number, resend?: Outgoing): void {
    if (this.phase === 'closed') return;
    if (generation === this.generation && (this.phase === 'ready' || this.phase === 'initializing')) {
      this.generation++;
      const reason = 'the upstream server ended its session (HTTP 404)';
      this.logger.warn(`${reason}; starting a new one`);
      this.upstreamSessionId = undefined;
      this.protocolVersion = undefined;
      this.standalone?.stop();
      this.standalone = undefined;
      this.phase = 'expired';
      for (const call of [...this.calls]) {
        if (call.generation !== generation) continue;
        this.finish(call);
        call.controller.abort();
      }
      this.setbacks++;
      this.handlers?.closed({ reason, reopening: true });
    }
    if (resend !== undefined) this.dispatch(resend);
    else if (this.phase === 'expired') this.renewSoon();
  }

  /** Starts a new session: at once after the first setback, then after a delay that doubles with each. */
  private renewSoon(): void {
    if (this.setbacks <= 1) return this.background(this.renew());
    const delay = backoffDelay(this.reconnectDelayMs, this.reconnectMaxDelayMs, this.setbacks - 2);
    this.logger.warn(
      { setbacks: this.setbacks, delayMs: delay },
      `starting a new upstream session in ${delay} ms`,
    );
    clearTimeout(this.renewTimer);
    this.renewTimer = setTimeout(() => this.background(this.renew()), delay).unref();
  }

  /**
   * A new session, set up as the client set up the first one; its initialize result stays here, and is
   * held to the first one's.
   */
  private async renew(): Promise<void> {
    if (this.phase !== 'expired') return;
    clearTimeout(this.renewTimer);
    this.renewTimer = undefined;
    const body = this.initializeBody;
    if (body === undefined) {
      this.phase = 'new';
      return this.flush();
    }
    this.phase = 'renewing';
    try {
      const id = envelopeOf(safeParse(body)).id ?? 0;
      const raw = await new Promise<Buffer>((resolve, reject) => {
        const call = this.newCall({ body, id, method: 'initialize', opens: true }, { resolve, reject });
        this.runCall(call).catch(reject);
      });
      const result = initializeResultOf(raw);
      if (result === undefined) throw new Error('the server refused the initialize request');
      if (promiseOf(result) !== this.promised) {
        const reason =
          'the upstream server answered initialize differently in its new session (another protocol version or other capabilities), so taskgate does not use it';
        this.logger.error({ answered: result }, reason);
        this.closing ??= this.shutDown(reason);
        return;
      }
      if (this.initializedSent) {
        const initialized = { jsonrpc: '2.0', method: 'notifications/initialized' };
        // Sent while still "renewing" so that nothing overtakes it; it opens the standalone stream.
        if (!(await this.postOneWay({ body: JSON.stringify(initialized), method: initialized.method }))) {
          throw new Error('the server refused notifications/initialized');
        }
      }
    } catch (error) {
      if (this.closed) return;
      return this.renewFailed(error instanceof Error ? error.message : String(error));
    }
    if (this.closed) return;
    this.logger.info('new upstream session started');
    this.phase = 'ready';
    // The session's own restoring (the client's log level) goes ahead of what waited.
    this.handlers?.reopened?.();
    this.flush();
  }

  /** What waited for the new session fails; another is tried later, or at once for the next message. */
  private renewFailed(reason: string): void {
    this.setbacks++;
    this.logger.warn(`could not start a new upstream session: ${reason}`);
    this.phase = 'expired';
    const queued = this.queue;
    this.queue = [];
    for (const out of queued) {
      if (isRequest(out)) {
        this.deliverError(out.id, `Upstream server unavailable: could not start a new session (${reason})`);
      }
    }
    this.renewSoon();
  }

  private openStandalone(): void {
    if (this.phase === 'closed' || this.standalone !== undefined) return;
    const generation = this.generation;
    const stream = new StandaloneStream({
      origin: this.origin,
      headers: () => this.baseHeaders(),
      maxMessageBytes: this.maxMessageBytes,
      reconnectDelayMs: this.reconnectDelayMs,
      reconnectMaxDelayMs: this.reconnectMaxDelayMs,
      deliver: (raw) => this.handlers?.message(raw),
      oversized: (bytes, head, tail) =>
        this.handlers?.malformed(
          new ProtocolError(
            ErrorCode.InvalidRequest,
            `Message of ${bytes} bytes from the upstream server exceeds the limit of ${this.maxMessageBytes} bytes (max-message-bytes); it was dropped`,
          ),
          idOfOversized(head, tail),
        ),
      sessionGone: () => this.sessionGone(generation),
      logger: this.logger,
    });
    this.standalone = stream;
    const waiters = this.standaloneWaiters;
    this.standaloneWaiters = [];
    for (const resolve of waiters) resolve(stream);
  }

  private async shutDown(reason: string): Promise<void> {
    this.phase = 'closed';
    clearTimeout(this.renewTimer);
    this.standalone?.stop();
    for (const resolve of this.standaloneWaiters) resolve(undefined);
    this.standaloneWaiters = [];
    for (const call of [...this.calls]) {
      this.finish(call);
      call.controller.abort();
      call.own?.reject(new Error('closed'));
    }
    // What waited for the standalone stream (initialized) was sent before close(): its one-way messages
    // still go, in order, before the session ends; a request's answer has nobody left to take it.
    const unsent = this.initializedSent ? this.queue.filter((out) => !isRequest(out)) : [];
    this.queue = [];
    for (const out of unsent) await this.postOneWay(out);
    if (this.upstreamSessionId !== undefined) {
      try {
        const reply = await this.origin.request(
          'DELETE',
          this.baseHeaders(),
          AbortSignal.timeout(DELETE_TIMEOUT_MS),
        );
        discard(reply.body);
        // 405: the server does not let clients end sessions; 404: it already ended this one.
        if (reply.statusCode >= 300 && reply.statusCode !== 405 && reply.statusCode !== 404) {
          this.logger.debug(`ending the upstream session was answered ${statusLine(reply.statusCode)}`);
        }
      } catch (error) {
        this.logger.debug({ err: error }, 'could not end the upstream session');
      }
    }
    await this.origin.close().catch(() => undefined);
    const handlers = this.handlers;
    this.handlers = undefined;
    if (!this.closedByOwner) handlers?.closed({ reason });
  }
}

// ── envelopes (read only as far as needed) ─────────────────────────────────────────────────────────

function isRequest(out: Outgoing): out is OutgoingRequest {
  return out.id !== undefined && out.method !== undefined;
}

function envelopeOf(value: unknown): Omit<Outgoing, 'body'> {
  if (!isObject(value) || typeof value.method !== 'string') return {};
  const { method } = value;
  if (isId(value.id)) return { id: value.id, method };
  const requestId = isObject(value.params) ? value.params.requestId : undefined;
  return method === 'notifications/cancelled' && isId(requestId)
    ? { method, cancels: requestId }
    : { method };
}

function safeParse(body: Buffer | string): unknown {
  try {
    return JSON.parse(typeof body === 'string' ? body : body.toString('utf8'));
  } catch {
    return undefined;
  }
}

/**
 * Whether a message from the server is a response, and to which id; undefined for a request or a
 * notification. A large success response laid out as SDKs write them is recognised without parsing.
 */
function answerOf(raw: Buffer): { id: RequestId | null; error?: JsonRpcErrorObject } | undefined {
  const id = idOfResultFrame(raw);
  if (id !== null) return { id };
  const value = safeParse(raw);
  if (!isObject(value) || 'method' in value || !('result' in value || 'error' in value)) return undefined;
  // An id that is no id at all (a fraction, say) answers nothing here: the session judges the message.
  if (value.id !== undefined && value.id !== null && !isId(value.id)) return undefined;
  const error = isErrorObject(value.error) ? value.error : undefined;
  return { id: isId(value.id) ? value.id : null, ...(error === undefined ? {} : { error }) };
}

function isErrorObject(value: unknown): value is JsonRpcErrorObject {
  return isObject(value) && typeof value.code === 'number' && typeof value.message === 'string';
}

/** The error object of a JSON-RPC error response, as the server sent it. */
function jsonRpcErrorOf(raw: Buffer): JsonRpcErrorObject | undefined {
  const value = safeParse(raw);
  return isObject(value) && value.jsonrpc === '2.0' && isErrorObject(value.error) ? value.error : undefined;
}

/** The result of an initialize answer, if it is one (it names a protocol version). */
function initializeResultOf(raw: Buffer): JsonObject | undefined {
  let value: unknown;
  try {
    // Bounded like every parse: a deep result must not overflow the stack when it is compared.
    value = parseFrame(raw, 'the upstream server');
  } catch {
    return undefined;
  }
  const result = isObject(value) ? value.result : undefined;
  return isObject(result) && typeof result.protocolVersion === 'string' ? result : undefined;
}

const unknownError = (): JsonRpcErrorObject => ({
  code: ErrorCode.InternalError,
  message: 'The upstream server answered with an error it did not describe',
});

const encode = (message: object): Buffer => Buffer.from(JSON.stringify(message));

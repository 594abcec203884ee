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
 * it as it did the first time. One that answers otherwise is not used: a final `closed` says so. What is
 * sent meanwhile is held as for a restarted child (the supervisor contract, channel.ts); a new session
 * that cannot be started is tried again, ever more slowly.
 *
 * This module holds the session (its phase, id and renewal) and the order messages go out in; each POST
 * and its answer is http-calls.ts, and what is read of a message is http-envelope.ts.
 */
import type { Logger } from 'pino';
import { ErrorCode, ProtocolError } from '../protocol/errors.js';
import { idOfOversized } from '../protocol/frames.js';
import { errorResponse, type RequestId } from '../protocol/messages.js';
import { Pieces, type Bytes } from '../protocol/pieces.js';
import type { ScanFailure, Scanned } from '../protocol/scanned.js';
import type { UpstreamCredential } from '../security/upstream-credentials.js';
import { backoffDelay } from './backoff.js';
import { deliverPieces, type Arrival, type Channel, type ChannelHandlers, type Route } from './channel.js';
import { promiseOf } from './handshake-promise.js';
import { HttpCalls, type Call } from './http-calls.js';
import {
  encode,
  envelopeOf,
  initializeResultOf,
  isRequest,
  safeParse,
  type Outgoing,
} from './http-envelope.js';
import { HttpOrigin, discard, statusLine, type Headers, type OriginConnections } from './http-wire.js';
import type { Valve } from './valve.js';
import { STANDALONE_OPEN_WAIT_MS, StandaloneStream } from './standalone-stream.js';

export interface HttpUpstreamOptions {
  /** The server's MCP endpoint, e.g. `http://127.0.0.1:3000/mcp`. */
  url: string;
  /** Sent with every HTTP request (an API key, say); the transport's own headers win over these. */
  headers?: Record<string, string> | undefined;
  /** The Authorization of every request (upstream.auth, or the caller's own token), over any in `headers`. */
  credential?: UpstreamCredential | undefined;
  /** Keep-alive connections shared with the gateway's other sessions; its own without them. */
  connections?: OriginConnections | undefined;
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
  /**
   * How long a request sent while a new session is being started waits for it, then is refused
   * (`upstreamRestart.holdRequests`, as for a stdio child being restarted). Default 10 s.
   */
  holdRequestsMs?: number | undefined;
  /** While one of these is shut (a stdio client behind: valve.ts), the server's streams are not read. */
  paused?: readonly Valve[] | undefined;
}

export const HTTP_UPSTREAM_DEFAULTS = {
  handshakeTimeoutMs: 5 * 60_000,
  resumeAttempts: 3,
  resumeTimeoutMs: 5_000,
  reconnectDelayMs: 250,
  reconnectMaxDelayMs: 10_000,
  holdRequestsMs: 10_000,
} as const;

/** Messages held for a new session at most (and max-message-bytes of them), as for a restarted child. */
const MAX_HELD = 1_000;

const DELETE_TIMEOUT_MS = 2_000;

/**
 * new: nothing sent yet · initializing: the client's initialize (or its notifications/initialized) is out,
 * others wait · ready · expired: the server forgot the session, a new one is needed · renewing: taskgate is
 * making it, others wait · closed.
 */
type Phase = 'new' | 'initializing' | 'ready' | 'expired' | 'renewing' | 'closed';

export class HttpUpstream implements Channel {
  private handlers: ChannelHandlers | undefined;
  private readonly origin: HttpOrigin;
  private readonly staticHeaders: Headers;
  private readonly logger: Logger;
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
  private readonly calls: HttpCalls;
  /** Messages waiting for a session (while initializing or renewing), in order. */
  private queue: Outgoing[] = [];
  /** The hold timers of the queued requests that wait for a new session (not for the first one). */
  private readonly holds = new Map<Outgoing, NodeJS.Timeout>();
  private readonly holdRequestsMs: number;
  private readonly paused: readonly Valve[] | undefined;
  /** Why the last session ended, for the requests that wait for the next. */
  private downReason = '';
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
    this.origin = new HttpOrigin(url, options.credential, options.connections);
    this.staticHeaders = Object.fromEntries(
      Object.entries(options.headers ?? {}).map(([name, value]) => [name.toLowerCase(), value]),
    );
    // Never the query string or credentials in logs: either may carry a secret.
    this.logger = logger.child({ upstream: `${url.origin}${url.pathname}` });
    this.maxMessageBytes = options.maxMessageBytes;
    this.reconnectDelayMs = options.reconnectDelayMs ?? HTTP_UPSTREAM_DEFAULTS.reconnectDelayMs;
    this.reconnectMaxDelayMs = options.reconnectMaxDelayMs ?? HTTP_UPSTREAM_DEFAULTS.reconnectMaxDelayMs;
    this.holdRequestsMs = options.holdRequestsMs ?? HTTP_UPSTREAM_DEFAULTS.holdRequestsMs;
    this.paused = options.paused;
    this.calls = new HttpCalls({
      origin: this.origin,
      logger: this.logger,
      maxMessageBytes: this.maxMessageBytes,
      handshakeTimeoutMs: options.handshakeTimeoutMs ?? HTTP_UPSTREAM_DEFAULTS.handshakeTimeoutMs,
      resumeAttempts: options.resumeAttempts ?? HTTP_UPSTREAM_DEFAULTS.resumeAttempts,
      resumeTimeoutMs: options.resumeTimeoutMs ?? HTTP_UPSTREAM_DEFAULTS.resumeTimeoutMs,
      reconnectDelayMs: this.reconnectDelayMs,
      reconnectMaxDelayMs: this.reconnectMaxDelayMs,
      paused: this.paused,
      headers: () => this.baseHeaders(),
      generation: () => this.generation,
      closed: () => this.phase === 'closed',
      opened: (sessionId) => (this.upstreamSessionId = sessionId),
      answered: (call, raw, scanned) => this.answered(call, raw, scanned),
      failed: (call, message) => this.failed(call, message),
      sessionGone: (generation, resend) => this.sessionGone(generation, resend),
      initializedTaken: (generation) => {
        if (generation === this.generation) this.openStandalone();
      },
      deliver: (raw, onStreamOf, scanned) => this.toSession(raw, { onStreamOf }, scanned),
      polled: (onStreamOf, retryMs) => this.handlers?.streamPaused?.(onStreamOf, retryMs),
      malformed: (error, id) => this.handlers?.malformed(error, id),
      background: (work) => this.background(work),
    });
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
        this.queue.push(out);
        return;
      case 'renewing':
        return this.hold(out);
      case 'expired':
        this.hold(out);
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
    if (out.cancels !== undefined) return this.calls.cancel(out, out.cancels);
    if (isRequest(out)) this.background(this.calls.runCall(this.calls.newCall(out)));
    else this.background(this.calls.postOneWay(out));
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
    if (await this.calls.postOneWay(out)) await this.standalone?.openedWithin(STANDALONE_OPEN_WAIT_MS);
    if (this.phase !== 'initializing') return;
    this.phase = 'ready';
    this.flush();
  }

  /**
   * A message for the session to come: kept (a request for a bounded time), or refused when there is no
   * room: the supervisor contract (channel.ts), as SupervisedStdioUpstream holds for a restarted child.
   */
  private hold(out: Outgoing): void {
    const bytes = this.queue.reduce((sum, queued) => sum + byteLength(queued.body), byteLength(out.body));
    if (this.queue.length >= MAX_HELD || bytes > this.maxMessageBytes) {
      if (!isRequest(out)) return;
      const why = `and ${this.queue.length} messages already wait for it`;
      // Not from within the sender's own call: it may not have finished its bookkeeping.
      return queueMicrotask(() => this.refuseHeld(out, why));
    }
    this.queue.push(out);
    if (!isRequest(out)) return;
    const timer = setTimeout(() => {
      this.holds.delete(out);
      this.queue = this.queue.filter((queued) => queued !== out);
      this.refuseHeld(out, `and was not back within ${this.holdRequestsMs} ms`);
    }, this.holdRequestsMs).unref();
    this.holds.set(out, timer);
  }

  private refuseHeld(out: Outgoing & { id: RequestId }, why: string): void {
    this.logger.warn({ id: out.id }, `${out.method} was refused while a new upstream session starts: ${why}`);
    this.deliverError(
      out.id,
      `Upstream server unavailable: ${this.downReason}, and a new session is being started, ${why}`,
    );
  }

  /** The queue, taken: what waited for a session stops waiting for it. */
  private takeQueue(): Outgoing[] {
    for (const timer of this.holds.values()) clearTimeout(timer);
    this.holds.clear();
    const queued = this.queue;
    this.queue = [];
    return queued;
  }

  /** Sends what waited for a session, in order. */
  private flush(): void {
    const queued = this.takeQueue();
    for (const out of queued) this.dispatch(out);
  }

  private baseHeaders(): Headers {
    const headers: Headers = { ...this.staticHeaders };
    if (this.upstreamSessionId !== undefined) headers['mcp-session-id'] = this.upstreamSessionId;
    if (this.protocolVersion !== undefined) headers['mcp-protocol-version'] = this.protocolVersion;
    return headers;
  }

  // ── answers ──────────────────────────────────────────────────────────────────────────────────────

  /** A call's answer: the session's, or (own) that of taskgate's initialize of a new session. */
  private answered(call: Call, raw: Bytes, scanned: Scanned | ScanFailure | undefined): void {
    const { id, opens } = call.out;
    if (!call.own) this.setbacks = 0;
    const result = opens ? initializeResultOf(joined(raw)) : undefined;
    if (opens) this.protocolVersion = result?.protocolVersion as string | undefined;
    if (call.own) return call.own.resolve(joined(raw));
    if (opens) {
      if (result !== undefined) this.promised = promiseOf(result);
      this.phase = result === undefined ? 'new' : 'ready';
      this.flush();
    }
    this.toSession(raw, { onStreamOf: id }, scanned);
  }

  /**
   * A message for the session: a large one the scan took goes with its scan, as the pieces it was read in
   * (issue 33), so that the session neither joins nor reads it again; anything else as one Buffer.
   */
  private toSession(
    raw: Bytes,
    arrival: Arrival | undefined,
    scanned: Scanned | ScanFailure | undefined,
  ): void {
    const handlers = this.handlers;
    if (handlers === undefined) return;
    if (typeof scanned !== 'object') return handlers.message(joined(raw), arrival);
    deliverPieces(handlers, raw instanceof Pieces ? raw : new Pieces([raw], raw.length), scanned, arrival);
  }

  /** A call failed here: the session gets an error answer (code UpstreamUnavailable). */
  private failed(call: Call, message: string): void {
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
      this.downReason = reason;
      this.logger.warn(`${reason}; starting a new one`);
      this.upstreamSessionId = undefined;
      this.protocolVersion = undefined;
      this.standalone?.stop();
      this.standalone = undefined;
      this.phase = 'expired';
      this.calls.endGeneration(generation);
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
        const call = this.calls.newCall({ body, id, method: 'initialize', opens: true }, { resolve, reject });
        this.calls.runCall(call).catch(reject);
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
        if (
          !(await this.calls.postOneWay({ body: JSON.stringify(initialized), method: initialized.method }))
        ) {
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

  /**
   * What waits for the new session goes on waiting, each request until its hold runs out, as for a child
   * whose restart failed; another session is tried later, or at once for the next message.
   */
  private renewFailed(reason: string): void {
    this.setbacks++;
    this.logger.warn(`could not start a new upstream session: ${reason}`);
    this.downReason = `could not start a new session (${reason})`;
    this.phase = 'expired';
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
      paused: this.paused,
      deliver: (raw, scanned) => this.toSession(raw, undefined, scanned),
      takesPieces: () => this.handlers?.pieces !== undefined,
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
    this.calls.endAll();
    // What waited for the standalone stream (initialized) was sent before close(): its one-way messages
    // still go, in order, before the session ends; a request's answer has nobody left to take it.
    const queued = this.takeQueue();
    const unsent = this.initializedSent ? queued.filter((out) => !isRequest(out)) : [];
    for (const out of unsent) await this.calls.postOneWay(out);
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

const joined = (raw: Bytes): Buffer => (raw instanceof Pieces ? raw.join() : raw);

function byteLength(body: Buffer | string): number {
  return typeof body === 'string' ? Buffer.byteLength(body) : body.length;
}

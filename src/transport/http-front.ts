/**
 * taskgate's Streamable HTTP front (MCP 2025-11-25 transports): POST for messages (answered as JSON or
 * as an SSE stream), GET for the server-initiated stream and for resumption (Last-Event-ID), DELETE to
 * end a session. Safe by default: loopback only unless told, Origin and Host checked against DNS
 * rebinding, bodies and sessions bounded, misuse answered with the right status and a JSON-RPC error.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from 'pino';
import { ErrorCode, type JsonRpcErrorObject } from '../protocol/errors.js';
import { toJsonRpcError } from '../tasks/wire-errors.js';
import { digitsOf } from '../protocol/exact-ids.js';
import { idOfOversized } from '../protocol/frames.js';
import { OpenAnswers, callerKeyOf, postModern, type ModernFront } from './modern-answer.js';
import { telemetry } from '../telemetry/telemetry.js';
import { isObject, isResponseShaped, salvageId, type Message, type RequestId } from '../protocol/messages.js';
import { onOneLine } from '../protocol/line-breaks.js';
import { readMessage } from '../protocol/read-message.js';
import type { ModernServe } from '../protocol/modern/exchange.js';
import { MODERN_VERSIONS, isModernRequest } from '../protocol/modern/meta.js';
import { LEGACY_VERSIONS } from '../protocol/versions.js';
import type { SessionEnd } from '../observability/metrics.js';
import type { Authentication } from '../security/auth.js';
import { refuseCaller, type UpstreamChallenge } from './http-refusals.js';
import { KeptBytes } from './event-stream.js';
import { HttpSession, type Resumption } from './http-session.js';
import { OversizedFrameError, looksLikeResponse } from './framing.js';
import { accepts, json, readBody, reply, type OversizedBody } from './http-io.js';
import { listenOn } from './listen.js';
import { UpstreamStartError } from './stdio-upstream.js';
import { trustedOrigin } from '../security/loopback.js';
import { untilOpen, type Valve } from './valve.js';

/**
 * Connections the kernel may queue before taskgate accepts them (it caps this at net.core.somaxconn).
 * Node's 511 overflowed when a few hundred clients opened connections at once: the kernel dropped their
 * SYNs and clients saw resets and connect timeouts (test/integration/load.test.ts).
 */
const LISTEN_BACKLOG = 4096;

/** How long a DELETE waits for the session's upstream to stop, so that its 200 means the slot is free. */
const DELETE_WAITS_MS = 1_000;

/** How long closing waits for 2026-07-28 answers to reach their clients (a client may not be reading). */
const MODERN_FLUSH_MS = 1_000;

/** Why taskgate ends a session, as its client is told (and the log says). */
const ENDED_BECAUSE: Record<SessionEnd, string> = {
  deleted: 'the client ended the HTTP session',
  idle: 'nothing was heard from the client for http.sessionIdleTimeout',
  abandoned: 'its client left: no stream, request or task for http.abandonedSessionTimeout',
  shutdown: 'taskgate is shutting down',
};

/** An authenticated caller: the binding key of its tasks, and who it is for the logs. */
export type Caller = Extract<Authentication, { identity: string }>;

export interface HttpFrontOptions {
  host: string;
  port: number;
  path: string;
  allowedOrigins: readonly string[];
  maxMessageBytes: number;
  maxSessions: number;
  sessionIdleTimeoutMs: number;
  abandonedSessionTimeoutMs: number;
  eventLogSize: number;
  eventLogBytes: number;
  eventLogTotalBytes: number;
}

export interface HttpFrontHooks {
  /** A client initialized a new session: connect it to an upstream. Throwing refuses the session. */
  openSession(session: HttpSession, caller: Caller | undefined): Promise<void>;
  /**
   * Who is calling, before any MCP processing; absent when callers are not identified. A refusal is
   * answered 401 with WWW-Authenticate.
   */
  authenticate?(req: IncomingMessage): Authentication | Promise<Authentication>;
  /** What answers an HTTP upstream's 401 to the caller's credential (http-refusals.ts); absent: no 401. */
  upstreamChallenge?: UpstreamChallenge;
  /** False once taskgate is shutting down: new sessions are refused. */
  accepting?(): boolean;
  /** Serves a 2026-07-28 request (no session), its answer into the sink; absent, such requests are refused. */
  modern?: ModernServe;
  /** The intake valve of the caller's 2026-07-28 bridge, when its server is on stdio (valve.ts). */
  modernIntake?(caller: string): Valve | undefined;
  /** Why the upstream cannot be reached or started now (undefined when it can), for /readyz. */
  notReady(): Promise<string | undefined>;
  /** With several servers: each one's state, for the /readyz answer. */
  servers?(): Promise<Record<string, object>>;
  /**
   * Routes beside the MCP endpoint (the operator's /metrics and /dashboard), asked after the Origin and
   * Host checks: true when one of them answered.
   */
  extraRoutes?(req: IncomingMessage, res: ServerResponse, path: string): Promise<boolean>;
  /** A new session was refused because all max-sessions slots are in use. */
  sessionRefused?(): void;
  /** A session was ended, and why. */
  sessionEnded?(why: SessionEnd): void;
  /**
   * When the last task the session ran ended: Infinity while one runs, 0 when none ran. A session is
   * abandoned only that long after its tasks.
   */
  tasksEndedAt?(sessionId: string): number;
}

export class HttpFront {
  private readonly sessions = new Map<string, HttpSession>();
  /**
   * Sessions over for their client whose upstream still runs, finishing their tasks: each holds a
   * max-sessions slot until its upstream has stopped (`forget`), so that the limit bounds servers too.
   */
  private readonly lingering = new Map<string, () => void>();
  private readonly server: Server;
  private readonly sweeper: NodeJS.Timeout;
  private readonly kept: KeptBytes;
  private opening = 0;
  private closing: Promise<void> | undefined;
  /**
   * How 2026-07-28 requests are answered: whether taskgate takes them, and those not written yet (open
   * streams among them).
   */
  private readonly modernFront: ModernFront;

  constructor(
    private readonly options: HttpFrontOptions,
    private readonly hooks: HttpFrontHooks,
    private readonly logger: Logger,
  ) {
    this.server = createServer(
      // Idle keep-alive connections outlive a client's pause between calls, so a request rarely races their
      // close; headers must still arrive promptly.
      { headersTimeout: 35_000, requestTimeout: 60_000, keepAliveTimeout: 30_000 },
      (req, res) => {
        this.handle(req, res).catch((error: unknown) => this.failed(res, error));
      },
    );
    this.kept = new KeptBytes(options.eventLogTotalBytes);
    this.modernFront = {
      accepting: () => hooks.accepting?.() !== false,
      get upstreamChallenge() {
        return hooks.upstreamChallenge;
      },
      answers: new OpenAnswers(),
      failed: (res, error) => this.failed(res, error),
    };
    // Sessions are ended at most a quarter of their timeout late.
    const shortest = Math.min(options.sessionIdleTimeoutMs, options.abandonedSessionTimeoutMs);
    this.sweeper = setInterval(
      () => this.closeIdleSessions(),
      Math.max(10, Math.min(60_000, shortest / 4)),
    ).unref();
  }

  get sessionCount(): number {
    return this.sessions.size;
  }

  async listen(): Promise<URL> {
    await listenOn(this.server, this.options.host, this.options.port, LISTEN_BACKLOG);
    // Once listening, an error is one connection's (a failed accept), not the listener's.
    this.server.on('error', (error) => this.logger.error({ err: error }, 'HTTP front: listener error'));
    const { port } = this.server.address() as AddressInfo;
    return new URL(`http://${this.options.host}:${port}${this.options.path}`);
  }

  /** Handling a request threw: logged, and the client told so if it can still be. */
  private failed(res: ServerResponse, error: unknown): void {
    this.logger.error({ err: error }, 'HTTP request failed');
    if (!res.headersSent)
      reply(res, 500, null, { code: ErrorCode.InternalError, message: 'Internal error in taskgate' });
    else res.end();
  }

  /** The session is over (the session says so once its upstream is closed). */
  forget(sessionId: string): void {
    this.sessions.delete(sessionId);
    const stopped = this.lingering.get(sessionId);
    this.lingering.delete(sessionId);
    stopped?.();
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      clearInterval(this.sweeper);
      for (const session of [...this.sessions.values()]) {
        this.hooks.sessionEnded?.('shutdown');
        session.end(ENDED_BECAUSE.shutdown);
      }
      // A 2026-07-28 stream ended on closing (subscriptions/listen's closing result) reaches its client.
      await this.modernFront.answers.settled(MODERN_FLUSH_MS);
      this.server.closeAllConnections();
      await new Promise((resolve) => this.server.close(resolve));
    })();
    return this.closing;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!trustedOrigin(req.headers, this.options.allowedOrigins, this.options.host)) {
      return reply(res, 403, null, {
        code: ErrorCode.InvalidRequest,
        message: 'Forbidden: this Origin or Host is not allowed',
      });
    }
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (path === '/healthz' && req.method === 'GET') return json(res, 200, { status: 'ok' });
    if (path === '/readyz' && req.method === 'GET') {
      const [cause, servers] = await Promise.all([this.hooks.notReady(), this.hooks.servers?.()]);
      const each = servers === undefined ? {} : { servers };
      if (cause === undefined) return json(res, 200, { status: 'ready', ...each });
      return json(res, 503, { status: 'upstream unavailable', cause, ...each });
    }
    if (path !== this.options.path && (await this.hooks.extraRoutes?.(req, res, path))) return;
    if (path !== this.options.path)
      return reply(res, 404, null, {
        code: ErrorCode.InvalidRequest,
        message: `Not found: the MCP endpoint is ${this.options.path}`,
      });
    let caller: Caller | undefined;
    if (this.hooks.authenticate) {
      const outcome = await this.hooks.authenticate(req);
      if ('refused' in outcome) return refuseCaller(res, outcome);
      caller = outcome;
    }
    const version = req.headers['mcp-protocol-version'];
    if (req.method !== 'POST' && typeof version === 'string' && MODERN_VERSIONS.includes(version)) {
      // 2026-07-28 has no GET stream and no session to delete (streamable-http.mdx "Backward Compatibility").
      res.setHeader('allow', 'POST');
      return reply(res, 405, null, {
        code: ErrorCode.InvalidRequest,
        message: `Method ${req.method} not allowed for MCP-Protocol-Version ${version}: 2026-07-28 requests are POSTed, with no session`,
      });
    }
    if (req.method !== 'POST' && typeof version === 'string' && !LEGACY_VERSIONS.includes(version)) {
      return reply(res, 400, null, unsupportedVersion(version));
    }
    switch (req.method) {
      case 'POST':
        return telemetry().inRequestContext(req, () => this.post(req, res, caller));
      case 'GET':
        return this.get(req, res, caller);
      case 'DELETE':
        return this.delete(req, res, caller);
      default:
        res.setHeader('allow', 'GET, POST, DELETE');
        return reply(res, 405, null, {
          code: ErrorCode.InvalidRequest,
          message: `Method ${req.method} not allowed`,
        });
    }
  }

  private async post(req: IncomingMessage, res: ServerResponse, caller: Caller | undefined): Promise<void> {
    if (!accepts(req, 'application/json') || !accepts(req, 'text/event-stream')) {
      return reply(res, 406, null, {
        code: ErrorCode.InvalidRequest,
        message: 'Not Acceptable: the Accept header must list application/json and text/event-stream',
      });
    }
    if (!/^application\/json\b/i.test(req.headers['content-type'] ?? '')) {
      return reply(res, 415, null, {
        code: ErrorCode.InvalidRequest,
        message: 'Unsupported Media Type: send application/json',
      });
    }
    // Awaited only when shut: an await of nothing is a turn of the microtasks on every POST.
    const shut = this.intakeShut(req, caller);
    if (shut !== undefined) await shut;
    const received = await readBody(req, this.options.maxMessageBytes);
    if (!Buffer.isBuffer(received)) return this.tooLarge(req, res, received, caller);
    const read = readMessage(received, 'the client');
    if (!read.ok && isResponseShaped(read.value))
      return this.badAnswer(req, res, received, read.error, caller);
    if (!read.ok) return reply(res, 400, salvageId(read.value), toJsonRpcError(read.error));
    // Known valid only now: its bytes go on, and a stdio server takes one message a line.
    const body = onOneLine(received);
    const { message } = read;
    const sessionId = req.headers['mcp-session-id'];
    const version = req.headers['mcp-protocol-version'];
    if (sessionId === undefined && this.hooks.modern !== undefined && isModernTraffic(message, version)) {
      return postModern(req, res, message, caller, this.hooks.modern, this.modernFront);
    }
    if (typeof version === 'string' && !LEGACY_VERSIONS.includes(version)) {
      return reply(res, 400, message.kind === 'request' ? message.msg.id : null, unsupportedVersion(version));
    }
    if (message.kind === 'request' && message.msg.method === 'initialize') {
      if (sessionId !== undefined) {
        return reply(res, 400, message.msg.id, {
          code: ErrorCode.InvalidRequest,
          message: 'initialize starts a new session: send it without Mcp-Session-Id',
        });
      }
      return this.initialize(message.msg.id, body, res, caller);
    }
    const session = this.sessionFor(
      sessionId,
      res,
      message.kind === 'request' ? message.msg.id : null,
      caller,
    );
    if (!session) return;
    if (message.kind === 'request') {
      if (!session.request(message.msg.id, body, res, message.msg)) {
        reply(res, 409, message.msg.id, {
          code: ErrorCode.InvalidRequest,
          message: `Conflict: request id ${digitsOf(message.msg.id) ?? JSON.stringify(message.msg.id)} is already in use by a request in flight in this session`,
        });
      }
      return;
    }
    session.accept(body, message.msg);
    res.writeHead(202).end();
  }

  /**
   * A malformed response: 400 with an error of no id (a response is never answered: its id is taskgate's),
   * and its session fails the request of taskgate's it names, if any (bad-frames.ts).
   */
  /**
   * 413. A body shaped like an answer is an answer to one of the session's server requests, which fails
   * now rather than at its deadline (the rules of session/bad-frames.ts, as on stdio).
   */
  private tooLarge(
    req: IncomingMessage,
    res: ServerResponse,
    body: OversizedBody,
    caller: Caller | undefined,
  ): void {
    const limit = this.options.maxMessageBytes;
    res.setHeader('connection', 'close');
    const refusal = {
      code: ErrorCode.InvalidRequest,
      message: `Payload Too Large: the limit is ${limit} bytes (max-message-bytes)`,
    };
    if (looksLikeResponse(body.head, body.tail)) {
      const session = this.sessionFor(req.headers['mcp-session-id'], res, null, caller);
      if (!session) return;
      const size = body.complete ? `of ${body.bytes} bytes` : `of more than ${body.bytes} bytes`;
      session.refuse(
        new OversizedFrameError(
          `Message ${size} from the client exceeds the limit of ${limit} bytes (max-message-bytes); it was dropped`,
          true,
        ),
        idOfOversized(body.head, body.tail),
      );
    }
    reply(res, 413, null, refusal);
  }

  private badAnswer(
    req: IncomingMessage,
    res: ServerResponse,
    body: Buffer,
    error: unknown,
    caller?: Caller,
  ): void {
    const session = this.sessionFor(req.headers['mcp-session-id'], res, null, caller);
    if (!session) return;
    session.accept(body);
    reply(res, 400, null, toJsonRpcError(error));
  }

  private async initialize(
    id: RequestId,
    body: Buffer,
    res: ServerResponse,
    caller: Caller | undefined,
  ): Promise<void> {
    if (this.hooks.accepting?.() === false) {
      res.setHeader('connection', 'close');
      return reply(res, 503, id, {
        code: ErrorCode.UpstreamUnavailable,
        message: 'Service Unavailable: taskgate is shutting down and takes no new sessions',
      });
    }
    const lingering = this.lingering.size;
    if (this.sessions.size + this.opening + lingering >= this.options.maxSessions) {
      this.hooks.sessionRefused?.();
      res.setHeader('retry-after', '5');
      const why =
        lingering === 0
          ? ''
          : `, ${lingering} of them by ended sessions whose upstream servers are still finishing tasks`;
      return reply(res, 503, id, {
        code: ErrorCode.LimitExceeded,
        message: `Service Unavailable: all ${this.options.maxSessions} sessions are in use (max-sessions)${why}`,
      });
    }
    const session = new HttpSession(
      {
        eventLogSize: this.options.eventLogSize,
        eventLogBytes: this.options.eventLogBytes,
        shared: this.kept,
      },
      caller?.identity,
      this.hooks.upstreamChallenge,
    );
    this.opening++;
    try {
      await this.hooks.openSession(session, caller);
    } catch (error) {
      // A server that cannot be started (warned of at start-up) is one line per session, not a stack.
      if (error instanceof UpstreamStartError) this.logger.warn(`session refused: ${error.message}`);
      else this.logger.error({ err: error }, 'could not connect a new session to the upstream server');
      return reply(res, 502, id, {
        code: ErrorCode.UpstreamUnavailable,
        message: `Bad Gateway: ${error instanceof Error ? error.message : 'the upstream server is unavailable'}`,
      });
    } finally {
      this.opening--;
    }
    this.sessions.set(session.id, session);
    session.initialize(id, body, res, () => {
      this.sessions.delete(session.id);
      session.end('its initialize failed: the session was never opened');
    });
  }

  private get(req: IncomingMessage, res: ServerResponse, caller: Caller | undefined): void {
    if (!accepts(req, 'text/event-stream')) {
      return reply(res, 406, null, {
        code: ErrorCode.InvalidRequest,
        message: 'Not Acceptable: GET opens an SSE stream; accept text/event-stream',
      });
    }
    const session = this.sessionFor(req.headers['mcp-session-id'], res, null, caller);
    if (!session) return;
    const lastEventId = req.headers['last-event-id'];
    if (typeof lastEventId === 'string') {
      const resumption = session.resume(lastEventId, res);
      if (resumption !== 'resumed') reply(res, ...refusedResumption(resumption, lastEventId));
      return;
    }
    if (!session.openStandalone(res)) {
      reply(res, 409, null, {
        code: ErrorCode.InvalidRequest,
        message: 'Conflict: this session already has an open GET stream',
      });
    }
  }

  private async delete(req: IncomingMessage, res: ServerResponse, caller: Caller | undefined): Promise<void> {
    const session = this.sessionFor(req.headers['mcp-session-id'], res, null, caller);
    if (!session) return;
    // Its 200 waits for the upstream to stop, unless that waits for tasks: then the slot stays held.
    const timer = new AbortController();
    const waited = delay(DELETE_WAITS_MS, undefined, { signal: timer.signal }).catch(() => undefined);
    await Promise.race([this.retire(session, 'deleted'), waited]);
    timer.abort();
    res.writeHead(200).end();
  }

  /**
   * Settles once the stdio server the POST is for reads again, when it is behind: until then the body
   * stays in the socket and TCP holds the client back, rather than taskgate holding every body it sent.
   * The server is the session's, or (no session, a 2026-07-28 version) that of the caller's bridge.
   */
  private intakeShut(req: IncomingMessage, caller: Caller | undefined) {
    const header = req.headers['mcp-session-id'];
    const version = req.headers['mcp-protocol-version'];
    if (header === undefined && typeof version === 'string' && MODERN_VERSIONS.includes(version)) {
      const intake = this.hooks.modernIntake?.(callerKeyOf(req, caller));
      return intake?.shut === true ? untilOpen([intake]) : undefined;
    }
    const session = typeof header === 'string' ? this.sessions.get(header) : undefined;
    if (session?.intake?.shut !== true || session.identity !== caller?.identity) return undefined;
    return untilOpen([session.intake]);
  }

  private sessionFor(
    header: string | string[] | undefined,
    res: ServerResponse,
    id: RequestId | null,
    caller: Caller | undefined,
  ): HttpSession | undefined {
    if (typeof header !== 'string') {
      reply(res, 400, id, {
        code: ErrorCode.InvalidRequest,
        message: 'Bad Request: Mcp-Session-Id header is required (initialize first)',
      });
      return undefined;
    }
    const session = this.sessions.get(header);
    // Another identity's session is answered exactly like an unknown one.
    if (!session || session.isClosed || session.identity !== caller?.identity) {
      reply(res, 404, id, {
        code: ErrorCode.InvalidRequest,
        message: 'Session not found: it ended or expired; initialize a new one',
      });
      return undefined;
    }
    return session;
  }

  /** Ends a session for its client; its slot is held until its upstream has stopped (then this resolves). */
  private retire(session: HttpSession, why: SessionEnd): Promise<void> {
    const stopped = new Promise<void>((resolve) => {
      if (this.sessions.delete(session.id)) {
        this.lingering.set(session.id, resolve);
        this.hooks.sessionEnded?.(why);
      } else resolve();
    });
    session.end(ENDED_BECAUSE[why]);
    return stopped;
  }

  /**
   * A session without an open stream whose client was not heard from for the idle timeout is ended, even
   * while its tasks run (they finish in its lingering upstream). One with nothing at all going on — no
   * stream, no request, no task — was left by its client (which did not DELETE it): it is ended sooner.
   */
  private closeIdleSessions(): void {
    const now = Date.now();
    for (const session of this.sessions.values()) {
      if (session.openStreams > 0) continue;
      let why: SessionEnd | undefined;
      if (session.lastActivity < now - this.options.sessionIdleTimeoutMs) why = 'idle';
      else if (session.requestsInFlight === 0) {
        const quietSince = Math.max(session.lastActivity, this.hooks.tasksEndedAt?.(session.id) ?? 0);
        if (quietSince < now - this.options.abandonedSessionTimeoutMs) why = 'abandoned';
      }
      if (why === undefined) continue;
      this.logger.info({ session: session.id.slice(0, 8) }, `ending an ${why} session`);
      void this.retire(session, why);
    }
  }
}

function refusedResumption(
  why: Exclude<Resumption, 'resumed'>,
  lastEventId: string,
): [number, null, JsonRpcErrorObject] {
  const refusals = {
    unknown: [404, `No stream to resume for Last-Event-ID "${lastEventId}"`],
    dropped: [
      410,
      `Gone: events after Last-Event-ID "${lastEventId}" are no longer kept (the replay log is bounded by http.eventLogBytes and http.eventLogTotalBytes)`,
    ],
  } as const;
  const [status, message] = refusals[why];
  return [status, null, { code: ErrorCode.InvalidRequest, message }];
}

/** 2026-07-28 traffic: modern `_meta`, the discovery probe, or a modern version header. */
function isModernTraffic(message: Message, version: string | string[] | undefined): boolean {
  if (message.kind === 'response') return typeof version === 'string' && MODERN_VERSIONS.includes(version);
  const params = isObject(message.msg.params) ? message.msg.params : undefined;
  return (
    isModernRequest(params) ||
    message.msg.method === 'server/discover' ||
    (typeof version === 'string' && MODERN_VERSIONS.includes(version))
  );
}

function unsupportedVersion(version: string): JsonRpcErrorObject {
  return {
    code: ErrorCode.InvalidRequest,
    message: `Unsupported MCP-Protocol-Version "${version}" (supported: ${[...MODERN_VERSIONS, ...LEGACY_VERSIONS].join(', ')})`,
  };
}

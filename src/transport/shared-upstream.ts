/**
 * One upstream connection multiplexed across many client sessions (`upstream.sharing: shared`). Each
 * session gets a port: a Channel of its own that looks, to the Session, like an upstream of its own.
 *
 * What is separated per port: request ids and progress tokens (renumbered on the shared connection and
 * given back as the port sent them), cancellations, the server's requests (sent to the port whose request
 * they belong to), the server's notifications (each to the port it shows it belongs to), resource
 * subscriptions, log levels, task status. What is shared: the handshake. The first port's initialize
 * goes upstream and every later port is answered with its result, so the server sees the first client's
 * capabilities and clientInfo only. A server that keeps other state per connection (an identity,
 * anything a tool call sets) mixes its clients up: it is not one to share.
 *
 * This is the wire: ids, streams, cancellations, who is connected (each port is shared-port.ts). What
 * belongs to the sessions (which one owns each of the server's tasks, their log levels, their
 * subscriptions) is the session layer's, given as SharedRules (shared-rules.ts; made by
 * src/session/shared-sessions.ts) and asked here.
 */
import type { Logger } from 'pino';
import { attribute, type Evidence } from '../protocol/attribution.js';
import {
  Correlation,
  Inbound,
  ProgressTokens,
  cancellation,
  carriedCancellation,
  goneError,
} from '../protocol/correlation.js';
import { ErrorCode, type ProtocolError } from '../protocol/errors.js';
import { CALLER_CAPABILITIES_META } from '../protocol/modern/meta.js';
import { envelopeOf, piecesWithIdAt, scanWithIdAt, type Envelope } from '../protocol/envelope.js';
import { digitsOf, handed, withExactRequestId } from '../protocol/exact-ids.js';
import type { Pieces } from '../protocol/pieces.js';
import { readHanded } from '../protocol/read-message.js';
import { valueOf } from '../protocol/scan.js';
import type { Scanned } from '../protocol/scanned.js';
import {
  RELATED_TASK_META,
  errorResponse,
  idKey,
  isId,
  isObject,
  metaOf,
  successResponse,
  withMeta,
  type JsonObject,
  type Message,
  type Notification,
  type Request,
  type RequestId,
  type Response,
} from '../protocol/messages.js';
import type { Arrival, Channel, CloseInfo, Route } from './channel.js';
import { Port, type PortHost } from './shared-port.js';
import type {
  SharedLevelRules,
  SharedRules,
  SharedSubscriptionRules,
  SharedTaskRules,
} from './shared-rules.js';

type Key = string | number;

/** A request on the shared connection, under its wire id (its port is its origin in the engine). */
interface InFlight {
  /** undefined: the multiplexer's own (an unsubscribe, a log level) or let go, whose answer nobody waits for. */
  port: Port | undefined;
  id: RequestId;
  method: string;
  /** The wire progress token given to it, if it had one. */
  progress?: Key;
}

type Handshake =
  | { phase: 'none' }
  | { phase: 'asked'; waiting: { port: Port; id: RequestId }[] }
  | { phase: 'done'; result: JsonObject };

/**
 * Requests whose answers the multiplexer or its rules read (the handshake, subscriptions, log levels; and
 * every tasks/ method, with any answer that creates a task): each is parsed, the rest may go as bytes.
 */
const ANSWER_READ = new Set([
  'initialize',
  'resources/subscribe',
  'resources/unsubscribe',
  'logging/setLevel',
]);

/** Notifications whose params the multiplexer reads beyond their route (each small by nature): parsed. */
const NOTIFICATION_READ = new Set([
  'notifications/progress',
  'notifications/cancelled',
  'notifications/resources/updated',
  'notifications/elicitation/complete',
  'notifications/tasks/status',
]);

/** A notification handed to a port, with the port's request whose stream it came on. */
type Delivery = (port: Port, into?: Arrival) => void;

/** URL-mode elicitations remembered for their completion notification, across all sessions. */
const MAX_ELICITATIONS = 1_024;

export class SharedUpstream implements PortHost {
  private readonly ports = new Set<Port>();
  /** Requests on the shared connection, each port's renumbered 1, 2, … so that no two collide. */
  private readonly inFlight = new Correlation<InFlight, Port>({ renumber: true, mint: (n) => n + 1 });
  private readonly progress = new ProgressTokens<Port>();
  /** The server's requests, by their id, to the port that has them. */
  private readonly serverRequests = new Inbound<Port>();
  /** URL-mode elicitations by their elicitationId, to the port asked: its completion is for it alone. */
  private readonly elicitations = new Map<string, Port>();
  private readonly tasks: SharedTaskRules;
  private readonly levels: SharedLevelRules;
  private readonly subscriptions: SharedSubscriptionRules;
  private handshake: Handshake = { phase: 'none' };
  private initializedSent = false;
  private started = false;
  private gone: CloseInfo | undefined;

  constructor(
    private readonly upstream: Channel,
    private readonly logger: Logger,
    rules: SharedRules,
  ) {
    this.tasks = rules.tasks;
    this.levels = rules.levels;
    this.subscriptions = rules.subscriptions;
    this.tasks.bind({
      isOpen: (port) => this.ports.has(port),
      progressEnded: (token) => this.progress.end(token),
    });
    this.levels.bind({
      logger,
      ports: () => this.ports,
      ask: (port, request, registered) => this.forward(port, request, registered),
    });
    this.subscriptions.bind({
      ask: (port, request, registered) => this.forward(port, request, registered),
      release: (wireId) => this.release(wireId),
      drop: (wireId, reason) => {
        this.settle(wireId);
        if (this.gone === undefined) this.upstream.send(cancellation(wireId, reason));
      },
    });
  }

  /** A channel for one client session. The upstream is started with the first. */
  port(): Channel {
    const port = new Port(this);
    if (!this.started) {
      this.started = true;
      this.upstream.start({
        message: (raw, arrival, parsed) => this.fromUpstream(raw, arrival, parsed),
        pieces: (line, scanned, arrival) => this.fromUpstreamPieces(line, scanned, arrival),
        malformed: (error, id) => this.malformed(error, id),
        closed: (info) => this.upstreamClosed(info),
        reopened: () => this.upstreamReopened(),
        streamPaused: (wireId, retryMs) => {
          const entry = this.inFlight.get(wireId);
          return entry?.port?.streamPaused(entry.id, retryMs);
        },
      });
    }
    return port;
  }

  /**
   * Closes the upstream. The upstream does not report its owner's close, but for each port's session the
   * server is gone: the ports still open hear it from here.
   */
  async close(): Promise<void> {
    await this.upstream.close();
    this.stopped();
  }

  /**
   * Whoever started the upstream stopped it (the pool, shutting down): for the sessions on the ports
   * still open, the server went away, and they hear so once (not from the upstream: it was its owner's).
   */
  stopped(): void {
    if (this.gone === undefined)
      this.upstreamClosed({ reason: 'taskgate stopped the shared upstream server' });
  }

  /** A 2026-07-28 server behind the translator: each port's requests say what its own client can do. */
  get takesCallerCapabilities(): boolean {
    return this.upstream.takesCallerCapabilities === true;
  }

  // ── from the ports ──────────────────────────────────────────────────────────────────────────────

  /** @internal */
  attached(port: Port): CloseInfo | undefined {
    if (this.gone !== undefined) return this.gone;
    this.ports.add(port);
    if (this.handshake.phase === 'done') this.levels.keep();
    return undefined;
  }

  /** @internal */
  fromPort(port: Port, message: Message, raw: Buffer | string | undefined, route: Route | undefined): void {
    switch (message.kind) {
      case 'request':
        return this.portRequest(port, message.msg);
      case 'notification':
        return this.portNotification(port, message.msg, raw, route);
      case 'response':
        return this.portResponse(port, message.msg, raw, route);
    }
  }

  private portRequest(port: Port, request: Request): void {
    switch (request.method) {
      case 'initialize':
        return this.initialize(port, request);
      case 'resources/subscribe':
        return this.subscriptions.subscribe(port, request);
      case 'resources/unsubscribe':
        return this.subscriptions.unsubscribe(port, request);
      case 'logging/setLevel':
        return this.levels.setLevel(port, request);
      case 'tasks/get':
      case 'tasks/result':
      case 'tasks/cancel': {
        const refusal = this.tasks.refusal(port, request);
        return refusal === undefined ? this.forward(port, request) : port.deliver(refusal);
      }
      default:
        return this.forward(port, request);
    }
  }

  /** The request stays upstream, and its answer goes to nobody: its port no longer waits for it. */
  private release(wireId: Key): void {
    const entry = this.inFlight.get(wireId);
    if (entry === undefined) return;
    this.inFlight.letGo(wireId);
    entry.port = undefined;
  }

  /** A request upstream whose answer will not be seen here (cancelled, unreadable). */
  private abandoned(wireId: Key): void {
    this.levels.abandoned(wireId);
  }

  private initialize(port: Port, request: Request): void {
    const handshake = this.handshake;
    const capabilities = request.params?.capabilities;
    if (isObject(capabilities)) port.capabilities = capabilities;
    if (handshake.phase === 'done') return port.deliver(successResponse(request.id, handshake.result));
    if (handshake.phase === 'asked') {
      handshake.waiting.push({ port, id: request.id });
      return;
    }
    this.handshake = { phase: 'asked', waiting: [] };
    this.forward(port, request);
  }

  /** Sends the request upstream under a wire id of its own, which `registered` is told before it is sent. */
  private forward(port: Port | undefined, request: Request, registered?: (wireId: Key) => void): void {
    const entry: InFlight = { port, id: request.id, method: request.method };
    const wireId =
      port === undefined ? this.inFlight.own(entry) : this.inFlight.forward(request.id, entry, port);
    let params = request.params;
    const token = metaOf(params)?.progressToken;
    if (port !== undefined && (typeof token === 'string' || typeof token === 'number')) {
      const wireToken = `taskgate-shared-progress-${wireId}`;
      this.progress.open(wireToken, port, token);
      entry.progress = wireToken;
      params = withMeta(params, 'progressToken', wireToken);
    }
    // Only the first session's initialize reaches the server: the others' capabilities go with each request.
    const capabilities = port?.capabilities;
    if (capabilities !== undefined && this.takesCallerCapabilities && request.method !== 'initialize') {
      if (metaOf(params)?.[CALLER_CAPABILITIES_META] === undefined) {
        params = withMeta(params, CALLER_CAPABILITIES_META, capabilities);
      }
    }
    registered?.(wireId as Key);
    this.upstream.send({ ...request, id: wireId, ...(params === undefined ? {} : { params }) });
  }

  private portNotification(
    port: Port,
    notification: Notification,
    raw: Buffer | string | undefined,
    route: Route | undefined,
  ): void {
    if (notification.method === 'notifications/initialized') {
      if (this.initializedSent) return;
      this.initializedSent = true;
    } else if (notification.method === 'notifications/cancelled') {
      const requestId = notification.params?.requestId;
      if (isId(requestId) && this.subscriptions.cancelled(port, idKey(requestId))) return;
      const wireId = isId(requestId) ? this.inFlight.wireIdOf(requestId, port) : undefined;
      // A request answered here (a later initialize, a shared subscription) has nothing to cancel upstream.
      if (wireId === undefined) return;
      if (this.subscriptions.orphaned(wireId)) return;
      this.settle(wireId);
      this.abandoned(wireId);
      return this.upstream.send(carriedCancellation(notification, wireId));
    }
    this.passOn(notification, raw, route);
  }

  /**
   * A port's answer to one of the server's requests: upstream as it is, if the server asked that port.
   * Server ids are small integers another session can guess; one session must not settle another's.
   */
  private portResponse(
    port: Port,
    response: Response,
    raw: Buffer | string | undefined,
    route: Route | undefined,
  ): void {
    if (response.id !== null && !this.serverRequests.answered(response.id, port)) {
      this.logger.debug(
        { id: response.id },
        'dropped an answer to a server request this session was not asked',
      );
      return;
    }
    this.passOn(response, raw, route);
  }

  private passOn(message: Message['msg'], raw: Buffer | string | undefined, route: Route | undefined): void {
    // The message goes beside its bytes, unless it holds an id JSON cannot (exact-ids.ts).
    if (raw !== undefined) this.upstream.sendRaw(raw, route, handed(message));
    else this.upstream.send(message, route);
  }

  /** @internal A port closed: what it had upstream is withdrawn. */
  detached(port: Port): void {
    if (!this.ports.delete(port)) return;
    this.subscriptions.leaving(port);
    for (const wireId of this.inFlight.wireIdsOf(port)) {
      if (this.gone === undefined && this.subscriptions.orphaned(wireId)) continue;
      const entry = this.settle(wireId);
      this.abandoned(wireId);
      // MCP never cancels initialize: its answer is the handshake of every port.
      if (entry === undefined || entry.method === 'initialize' || this.gone !== undefined) continue;
      this.upstream.send(cancellation(wireId, 'the client session closed'));
    }
    if (this.handshake.phase === 'asked') {
      this.handshake.waiting = this.handshake.waiting.filter((waiting) => waiting.port !== port);
    }
    this.progress.dropOwner((owner) => owner === port);
    this.tasks.detached(port);
    for (const id of this.serverRequests.takeOrigin(port)) {
      this.upstream.send(
        errorResponse(id, goneError('client', 'The client session this request was sent to has closed')),
      );
    }
    for (const [elicitationId, asked] of this.elicitations) {
      if (asked === port) this.elicitations.delete(elicitationId);
    }
    if (this.gone !== undefined) return;
    this.subscriptions.left(port);
    this.levels.detached(port);
  }

  /** Forgets a request on the shared connection (answered, cancelled, or moot). */
  private settle(wireId: RequestId): InFlight | undefined {
    return this.inFlight.take(wireId);
  }

  // ── from the upstream ───────────────────────────────────────────────────────────────────────────

  /**
   * A message that came in pieces, scanned as it came (issue 33): an answer nothing here reads goes to its
   * port as those pieces, the port's id written over the wire id; anything else is joined and read.
   */
  private fromUpstreamPieces(line: Pieces, scanned: Scanned, arrival: Arrival | undefined): void {
    const envelope = envelopeOf(line, scanned);
    if (envelope?.kind === 'response' && this.answeredAsBytes(envelope, line, scanned)) return;
    const notified = envelope?.kind === 'notification' ? envelope.method! : undefined;
    if (notified !== undefined && this.notifiedAsBytes(notified, line, scanned, arrival)) return;
    this.fromUpstream(line.join(), arrival, undefined);
  }

  /** upstreamNotification's routing by the scan's `_meta` and `level`, as pieces; false for one it reads. */
  private notifiedAsBytes(method: string, line: Pieces, scanned: Scanned, arrival?: Arrival): boolean {
    if (NOTIFICATION_READ.has(method)) return false;
    const { _meta: meta, level } = scanned.params;
    const params: JsonObject = {};
    if (meta !== undefined) params._meta = valueOf(line, meta);
    if (level !== undefined) params.level = valueOf(line, level);
    this.routed(method, (port, into) => port.receivePieces(line, scanned, into), params, arrival);
    return true;
  }

  /** What upstreamResponse does for an answer no rule reads, short of parsing it. False: nothing done. */
  private answeredAsBytes(envelope: Envelope, line: Pieces, scanned: Scanned): boolean {
    // Writing over one id of several would leave the others for a reader that takes the first.
    if (envelope.idRepeated || envelope.task !== undefined) return false;
    const wireId = envelope.id as RequestId;
    const entry = this.inFlight.get(wireId);
    if (entry?.port === undefined || ANSWER_READ.has(entry.method) || entry.method.startsWith('tasks/')) {
      return false;
    }
    this.settle(wireId);
    if (entry.progress !== undefined) this.progress.end(entry.progress);
    const span = envelope.idSpan!;
    const id = Buffer.from(digitsOf(entry.id) ?? JSON.stringify(entry.id));
    entry.port.receivePieces(piecesWithIdAt(line, span, id), scanWithIdAt(scanned, span, id));
    return true;
  }

  private fromUpstream(raw: Buffer, arrival: Arrival | undefined, parsed: object | undefined): void {
    const read = readHanded(raw, parsed, 'the upstream server');
    if (!read.ok) {
      this.logger.warn(
        { err: read.error },
        'shared upstream: a message that could not be routed was dropped',
      );
      return;
    }
    const message = read.message;
    switch (message.kind) {
      case 'response':
        return this.upstreamResponse(message.msg);
      case 'request':
        return this.upstreamRequest(message.msg, raw, arrival);
      case 'notification':
        return this.upstreamNotification(withExactRequestId(message.msg, raw), raw, arrival);
    }
  }

  private upstreamResponse(response: Response): void {
    const wireId = response.id;
    const entry = wireId === null ? undefined : this.settle(wireId);
    if (entry === undefined || wireId === null) return;
    const result = 'result' in response ? response.result : undefined;
    const seen = this.tasks.answered(entry.port, entry.method, result, entry.progress);
    if (entry.progress !== undefined && !seen.keepsProgress) this.progress.end(entry.progress);
    if (entry.method === 'initialize') this.initializeAnswered(response);
    this.subscriptions.answered(wireId, response);
    this.levels.answered(wireId, entry.port, response);
    const given = seen.result === undefined ? response : { ...response, result: seen.result };
    entry.port?.deliver({ ...given, id: entry.id });
  }

  private initializeAnswered(response: Response): void {
    const waiting = this.handshake.phase === 'asked' ? this.handshake.waiting : [];
    // Refused: the next port to ask tries again.
    this.handshake = 'result' in response ? { phase: 'done', result: response.result } : { phase: 'none' };
    for (const { port, id } of waiting) port.deliver({ ...response, id });
  }

  private upstreamRequest(request: Request, raw: Buffer, arrival: Arrival | undefined): void {
    const tied = arrival?.onStreamOf === undefined ? undefined : this.inFlight.get(arrival.onStreamOf);
    const owner = attribute(request.method, this.evidence(request, tied));
    // A ping asks whether the connection is alive, which it is whichever client it would have gone to.
    if ('nobody' in owner && request.method === 'ping') {
      return this.upstream.send(successResponse(request.id, {}));
    }
    if ('nobody' in owner) {
      this.upstream.send(
        errorResponse(request.id, {
          code: ErrorCode.ClientUnavailable,
          message: `taskgate shares this server among client sessions and cannot tell which one ${request.method} is for: ${owner.nobody}`,
        }),
      );
      return;
    }
    const chosen = owner.to;
    this.serverRequests.held(request.id, chosen);
    const elicitationId = request.method === 'elicitation/create' ? request.params?.elicitationId : undefined;
    if (typeof elicitationId === 'string') this.rememberElicitation(elicitationId, chosen);
    chosen.receive(raw, tied?.port === undefined ? undefined : { onStreamOf: tied.id }, handed(request));
  }

  /**
   * What says which session a request of the server's is for (protocol/attribution.ts): the request stream
   * of an HTTP server that carried it, its related task, or the server serving one session alone. Another
   * session being the only one with requests in flight is no evidence: the server may ask on its own.
   */
  private evidence(request: Request, tied: InFlight | undefined): Evidence<Port> {
    if (tied?.port !== undefined) return { stream: this.ports.has(tied.port) ? tied.port : null };
    const taskId = relatedTaskOf(request.params);
    const owner = taskId === undefined ? undefined : this.tasks.routeOf(taskId);
    if (owner !== undefined) return { task: typeof owner === 'string' ? null : owner };
    return this.ports.size === 1 ? { oneCallers: [...this.ports] } : {};
  }

  /** Bounded: the oldest elicitation still waiting for its completion is forgotten first. */
  private rememberElicitation(elicitationId: string, port: Port): void {
    this.elicitations.delete(elicitationId);
    this.elicitations.set(elicitationId, port);
    if (this.elicitations.size > MAX_ELICITATIONS) {
      this.elicitations.delete(this.elicitations.keys().next().value!);
    }
  }

  private upstreamNotification(notification: Notification, raw: Buffer, arrival: Arrival | undefined): void {
    const params = notification.params;
    switch (notification.method) {
      case 'notifications/progress': {
        const token = params?.progressToken;
        const to = isId(token) ? this.progress.ownerOf(token) : undefined;
        to?.owner.deliver({ ...notification, params: { ...params, progressToken: to.token } });
        return;
      }
      case 'notifications/cancelled': {
        const requestId = params?.requestId;
        const port = isId(requestId) ? this.serverRequests.cancelled(requestId) : undefined;
        return port?.receive(raw);
      }
      case 'notifications/resources/updated': {
        const uri = params?.uri;
        if (typeof uri === 'string')
          for (const port of this.subscriptions.subscribers(uri)) port.receive(raw);
        return;
      }
      case 'notifications/elicitation/complete': {
        // Another session's elicitation is not even named to the rest: unknown, it goes nowhere.
        const elicitationId = params?.elicitationId;
        const port = typeof elicitationId === 'string' ? this.elicitations.get(elicitationId) : undefined;
        if (port === undefined) return;
        this.elicitations.delete(elicitationId as string);
        return port.receive(raw);
      }
      case 'notifications/tasks/status':
        if (params !== undefined) this.tasks.status(params)?.receive(raw, undefined, notification);
        return;
      default:
        return this.routed(notification.method, (port, into) => port.receive(raw, into), params, arrival);
    }
  }

  /** A list changed, to every port; any other, to its session if it says whose, on the stream it came on. */
  private routed(method: string, deliver: Delivery, params?: JsonObject, arrival?: Arrival): void {
    const owner = method.endsWith('/list_changed') ? undefined : this.belongsTo(params, arrival);
    if (owner === null) return;
    const onStream = arrival?.onStreamOf === undefined ? undefined : this.inFlight.get(arrival.onStreamOf);
    const into = owner !== undefined && onStream?.port === owner ? { onStreamOf: onStream.id } : undefined;
    for (const port of owner === undefined ? this.ports : [owner]) {
      if (method !== 'notifications/message' || this.levels.wants(port, params?.level)) deliver(port, into);
    }
  }

  /**
   * The session a notification of the server's belongs to, by evidence: the request stream of an HTTP
   * server that carried it, or its related task. null: it belongs to a request or task whose session is
   * no longer here (it closed, or stopped waiting), and no other may have it. undefined: no evidence (the
   * multiplexer's own request's stream counts as none): it is for every session.
   */
  private belongsTo(params: JsonObject | undefined, arrival: Arrival | undefined): Port | null | undefined {
    const stream = arrival?.onStreamOf;
    if (stream !== undefined) {
      const entry = this.inFlight.get(stream);
      if (entry === undefined) return null;
      if (entry.port !== undefined) return this.ports.has(entry.port) ? entry.port : null;
    }
    const taskId = relatedTaskOf(params);
    if (taskId === undefined) return undefined;
    const owner = this.tasks.routeOf(taskId);
    return owner === undefined || typeof owner === 'string' ? null : owner;
  }

  private malformed(error: ProtocolError, id: RequestId | null): void {
    const entry = id === null ? undefined : this.settle(id);
    if (entry === undefined || id === null) return;
    this.abandoned(id);
    // An answer too large to read is no subscription: those waiting on it are refused with the same error.
    this.subscriptions.answered(id, errorResponse(entry.id, { code: error.code, message: error.message }));
    entry.port?.reportMalformed(error, entry.id);
  }

  /**
   * Every port hears it, as a session of its own would: what it had in flight fails there. What was
   * pending here is moot, and a restarted server holds no subscription and its default log level.
   */
  private upstreamClosed(info: CloseInfo): void {
    this.inFlight.drain();
    this.progress.clear();
    this.tasks.upstreamClosed();
    this.serverRequests.clear();
    this.elicitations.clear();
    this.subscriptions.upstreamClosed();
    this.levels.upstreamClosed();
    if (!info.reopening) this.gone = info;
    const ports = [...this.ports];
    if (!info.reopening) this.ports.clear();
    for (const port of ports) port.upstreamClosed(info);
  }

  private upstreamReopened(): void {
    for (const port of this.ports) port.upstreamReopened();
  }
}

/** The task a message says it is about, in its related-task `_meta`. */
function relatedTaskOf(params: JsonObject | undefined): string | undefined {
  const related = metaOf(params)?.[RELATED_TASK_META];
  const taskId = isObject(related) ? related.taskId : undefined;
  return typeof taskId === 'string' ? taskId : undefined;
}

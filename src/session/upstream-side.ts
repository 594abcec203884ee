/**
 * The session's upstream side: what the upstream sends, taken to where it belongs (a response to the
 * client request it answers, a request to the client or served here for client-side tasks, a notification
 * on the stream of what it concerns, progress only while its request or task lasts), and the upstream's
 * going away and coming back. The parts it works with are the session's (session.ts).
 */
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import { carriedCancellation } from '../protocol/correlation.js';
import { ErrorCode, type ProtocolError } from '../protocol/errors.js';
import {
  RELATED_TASK_META,
  errorResponse,
  isObject,
  metaOf,
  successResponse,
  withMeta,
  type JsonObject,
  type Notification,
  type Request,
  type RequestId,
  type Response,
} from '../protocol/messages.js';
import { readHanded } from '../protocol/read-message.js';
import { handed, withExactRequestId } from '../protocol/exact-ids.js';
import type { Augmenter } from '../tasks/augment.js';
import type { ClientTasks } from '../tasks/client-tasks.js';
import { withoutRelatedTask, type Unwrapper } from '../tasks/unwrap.js';
import type { TaskSightings } from '../observability/task-board.js';
import { envelopeOf, type Envelope } from '../protocol/envelope.js';
import { Pieces, type Bytes } from '../protocol/pieces.js';
import { SCAN_FROM_BYTES, scanJson, valueOf } from '../protocol/scan.js';
import type { Scanned } from '../protocol/scanned.js';
import { smallAnswer, type SmallAnswer } from '../protocol/small-answer.js';
import { sendBytes, type Arrival, type Channel, type Route } from '../transport/channel.js';
import type { ExactIdChannel } from '../transport/exact-id-channel.js';
import { badUpstreamAnswer, parsedAnswer, upstreamFrameRefusal } from './bad-frames.js';
import type { ClientPeer } from './client-peer.js';
import type { Correlator } from './correlator.js';
import type { RequestContexts } from './request-contexts.js';
import { ServedRequests } from './served-requests.js';
import type { Forwarded, UpstreamPeer, UpstreamState } from './upstream-peer.js';
import type { UpstreamOwnTasks } from './upstream-own-tasks.js';
import type { UpstreamProfile } from './upstream-profile.js';

/** The session reads the result of an answer to these when the upstream has tasks of its own. */
const READS_RESULT = new Set(['tasks/result', 'tasks/get', 'tasks/cancel']);

/** The session's parts and state the upstream side works with. */
export interface UpstreamSideParts {
  client: ExactIdChannel;
  /** What travels with the client's requests (the client's channel under `client`). */
  contexts: RequestContexts;
  upstream: Channel;
  upstreamPeer: UpstreamPeer;
  clientPeer: ClientPeer;
  correlator: Correlator;
  profile: UpstreamProfile;
  upstreamTasks: UpstreamOwnTasks;
  unwrapper: Unwrapper;
  augmenter: Augmenter;
  clientTasks: ClientTasks;
  logger: Logger;
  config: Config;
  onUpstreamAnswer?: ((method: string, seconds: number) => void) | undefined;
  sightings?: TaskSightings | undefined;
  /** Whether all the client's requests come from one caller (Session.servesCallers). */
  oneCaller(): boolean;
  /** The client's capabilities, from its initialize request. */
  clientCapabilities(): JsonObject;
  /** The params of the client's latest logging/setLevel. */
  clientLogLevel(): JsonObject | undefined;
  /** The client request is answered: nothing more belongs with it. */
  answered(id: RequestId): void;
  /** The upstream is gone for good (SessionEvents.upstreamGone). */
  upstreamGone(state: UpstreamState): void;
}

/**
 * Notifications whose params the session reads (each small by nature): parsed. Any other it only routes,
 * by its `_meta` and `progressToken`, and may forward as its bytes.
 */
const NOTIFICATION_READ = new Set([
  'notifications/tasks/status',
  'notifications/progress',
  'notifications/cancelled',
]);

/** The client capability a server-to-client request needs. */
const CAPABILITY_FOR: Record<string, string | undefined> = {
  'elicitation/create': 'elicitation',
  'sampling/createMessage': 'sampling',
  'roots/list': 'roots',
};

export class UpstreamSide {
  /** The upstream's requests taskgate answers itself (for client-side tasks): anew when it restarts. */
  private servedForUpstream: ServedRequests;

  constructor(private readonly parts: UpstreamSideParts) {
    this.servedForUpstream = this.servedRequestsOfUpstream();
  }

  /** The session closes: the upstream's requests waiting here (tasks/result of client-side tasks) stop. */
  stopBlocking(): void {
    this.servedForUpstream.stopBlocking();
  }

  /**
   * The upstream closed a request's stream to be polled (SEP-1699): a client request forwarded as it is
   * has its stream closed alike, so that its client resumes on its own schedule, as it would directly.
   * Settles when it did; undefined when the client's stream stays open.
   */
  streamPaused(wireId: RequestId, retryMs: number | undefined): Promise<void> | undefined {
    const clientId = this.parts.upstreamPeer.clientRequestOf(wireId);
    return clientId === undefined ? undefined : this.parts.client.pauseStream(clientId, retryMs);
  }

  /**
   * One message from the upstream that came in pieces, scanned as they came (ChannelHandlers.pieces): an
   * answer or a notification forwarded as its bytes goes out as those pieces, an answer to a task's call is
   * kept as them; anything else is joined and read as usual.
   */
  fromUpstreamPieces(line: Pieces, scanned: Scanned, arrival: Arrival | undefined): void {
    if (!this.parts.client.handsParsed) {
      const envelope = envelopeOf(line, scanned);
      if (
        envelope?.kind === 'response' &&
        (this.forwardedAsBytes(envelope, line) || this.settledFromScan(envelope, line, scanned))
      ) {
        return;
      }
      if (envelope?.kind === 'notification' && this.notifiedAsBytes(envelope, line, scanned, arrival)) return;
    }
    this.fromUpstream(line.join(), arrival, undefined, scanned);
  }

  /** One message from the upstream (ChannelHandlers.message); `known`: its scan, when made already. */
  fromUpstream(raw: Buffer, arrival: Arrival | undefined, parsed: object | undefined, known?: Scanned): void {
    // A client in memory (the 2026-07-28 bridge) reads the value handed to it: parsing once here serves it
    // best, but for a small answer its request's context takes as bytes (forwardedAsBytes).
    if (parsed === undefined && raw.length < SCAN_FROM_BYTES) {
      const answer = smallAnswer(raw);
      if (typeof answer === 'object' && this.forwardedAsBytes(answer, raw)) return;
    } else if (parsed === undefined && !this.parts.client.handsParsed) {
      const scanned = known ?? scanJson(raw);
      const envelope = envelopeOf(raw, scanned);
      if (
        envelope?.kind === 'response' &&
        typeof scanned !== 'string' &&
        (this.forwardedAsBytes(envelope, raw) || this.settledFromScan(envelope, raw, scanned))
      ) {
        return;
      }
      if (
        envelope?.kind === 'notification' &&
        typeof scanned !== 'string' &&
        this.notifiedAsBytes(envelope, raw, scanned, arrival)
      ) {
        return;
      }
    }
    const read = readHanded(raw, parsed, 'the upstream server');
    if (!read.ok) return this.upstreamInvalid(read.error, read.value, raw);
    const { message } = read;
    switch (message.kind) {
      case 'response':
        return this.upstreamResponse(message.msg, raw);
      case 'request':
        return this.upstreamRequest(
          message.msg,
          raw,
          this.parts.correlator.routeFor(message.msg.params, arrival),
          arrival,
        );
      case 'notification': {
        const notification = withExactRequestId(message.msg, raw);
        return this.upstreamNotification(notification, raw, this.notificationRoute(notification, arrival));
      }
    }
  }

  /**
   * An upstream message taskgate cannot take is dropped; when it answers a call, that call fails, and when
   * it is a request, the upstream is told why, so that neither side waits for what will never come.
   */
  private upstreamInvalid(error: unknown, value: unknown, raw: Buffer): void {
    this.parts.logger.warn({ err: error }, 'dropping an invalid message from the upstream server');
    const { reply, fails } = upstreamFrameRefusal(error, value, raw);
    if (fails !== undefined && this.parts.upstreamPeer.awaits(fails.id)) {
      this.upstreamResponse(errorResponse(fails.id, fails.error), undefined);
    }
    if (reply !== undefined && !this.parts.upstreamPeer.isAway) this.parts.upstream.send(reply);
  }

  private upstreamResponse(response: Response, raw: Buffer | undefined): void {
    const entry = response.id === null ? undefined : this.parts.upstreamPeer.answered(response.id);
    if (!entry) {
      this.parts.logger.debug(
        { id: response.id },
        'dropping an upstream response that answers no pending request',
      );
      return;
    }
    if (entry.kind === 'own') {
      entry.settle(raw === undefined ? { response, bytes: 0 } : { response, bytes: raw.length, raw });
      return;
    }
    this.parts.correlator.plainCallEnded(response.id as RequestId);
    this.parts.onUpstreamAnswer?.(entry.method, (performance.now() - entry.sentAt) / 1000);
    if (this.parts.profile.hasTasks) {
      this.parts.upstreamTasks.answered(entry, response);
      this.upstreamTaskProgress(entry, response);
    }
    const route = { responseTo: entry.clientId };
    this.parts.answered(entry.clientId);
    if ('result' in response && entry.onResult) {
      this.parts.client.send(successResponse(entry.clientId, entry.onResult(response.result)), route);
    } else if (entry.clientId === response.id && raw !== undefined) {
      this.parts.client.sendRaw(raw, route, handed(response));
    } else {
      this.parts.client.send({ ...response, id: entry.clientId }, route);
    }
  }

  /**
   * A success response forwarded as its bytes, when nothing taskgate does with it needs it parsed: what
   * upstreamResponse does for it, short of reading the result. False (nothing done) otherwise.
   */
  private forwardedAsBytes(envelope: Envelope | SmallAnswer, raw: Bytes): boolean {
    // Writing over one id of several would leave the others for a reader that takes the first.
    if (envelope.idRepeated) return false;
    const wireId = envelope.id as RequestId;
    const entry = this.parts.upstreamPeer.awaiting(wireId);
    if (entry?.kind !== 'client' || entry.onResult !== undefined) return false;
    // A client that takes values takes the bytes of a small answer (one Buffer, its result's place known)
    // only where its request's context does: the 2026-07-28 bridge's call, of a tools/call (any other
    // answer it reads whole: read here, it is not read again after a detour).
    const toContext = this.parts.client.handsParsed;
    const small = 'result' in envelope && raw instanceof Buffer && entry.method === 'tools/call';
    if (toContext && !(small && this.parts.contexts.takesBytes(entry.clientId))) return false;
    // The upstream's own tasks are followed through what their answers say (upstreamTaskProgress): of a
    // tasks/result, only whether it failed; tasks/get|cancel and a CreateTaskResult are small.
    const followsTasks = this.parts.profile.hasTasks;
    const taskResult = followsTasks && entry.method === 'tasks/result';
    if (followsTasks && !taskResult && (READS_RESULT.has(entry.method) || envelope.task !== undefined)) {
      return false;
    }
    this.parts.upstreamPeer.answered(wireId);
    this.parts.correlator.plainCallEnded(wireId);
    this.parts.onUpstreamAnswer?.(entry.method, (performance.now() - entry.sentAt) / 1000);
    if (taskResult) {
      const failed = envelope.isError !== undefined && valueOf(raw, envelope.isError) === true;
      this.parts.upstreamTasks.resultAnswered(entry.taskId, failed);
      if (entry.taskId !== undefined) this.parts.correlator.upstreamTaskEnded(entry.taskId);
    }
    const route = { responseTo: entry.clientId };
    this.parts.answered(entry.clientId);
    if (toContext) this.parts.contexts.sendAnswerBytes(raw as Buffer, envelope as SmallAnswer, route);
    else this.parts.client.sendAnswerBytes(raw, envelope.idSpan!, wireId, route);
    return true;
  }

  /**
   * A success answer to one of taskgate's own calls (a task's tool call), settled from its scan: parsed
   * only if the call reads it, not when its task keeps the result as bytes. False when it answers none.
   */
  private settledFromScan(envelope: Envelope, raw: Bytes, scanned: Scanned): boolean {
    const wireId = envelope.id as RequestId;
    const entry = this.parts.upstreamPeer.awaiting(wireId);
    if (entry?.kind !== 'own') return false;
    this.parts.upstreamPeer.answered(wireId);
    let response: Response | undefined;
    entry.settle({
      get response(): Response {
        return (response ??= parsedAnswer(raw instanceof Pieces ? raw.join() : raw, wireId));
      },
      bytes: raw.length,
      raw,
      scanned,
    });
    return true;
  }

  /** What an answer of the upstream tells of how long its tasks' progress lasts. */
  private upstreamTaskProgress(entry: Forwarded, response: Response): void {
    if (entry.method === 'tasks/result' && entry.taskId !== undefined) {
      return this.parts.correlator.upstreamTaskEnded(entry.taskId);
    }
    if (!('result' in response)) return;
    const task = response.result.task;
    if (entry.method === 'tools/call' && isObject(task) && typeof task.taskId === 'string') {
      this.parts.correlator.upstreamTaskMade(entry.clientId, task.taskId);
    } else if (entry.method === 'tasks/get' || entry.method === 'tasks/cancel') {
      this.parts.correlator.upstreamTaskSeen(response.result);
    }
  }

  private upstreamRequest(
    request: Request,
    raw: Buffer,
    route: Route | undefined,
    arrival: Arrival | undefined,
  ): void {
    const params = request.params;
    if (params?.task !== undefined && this.parts.clientTasks.serves(request.method)) {
      return this.servedForUpstream.answer(request.id, () =>
        this.parts.clientTasks.create(request.method, params),
      );
    }
    switch (request.method) {
      case 'tasks/get':
        return this.upstreamTaskRequest(request, raw, route, () => this.parts.clientTasks.get(params));
      case 'tasks/cancel':
        return this.upstreamTaskRequest(request, raw, route, () => this.parts.clientTasks.cancel(params));
      case 'tasks/result':
        return this.upstreamTaskRequest(request, raw, route);
    }
    const tag = metaOf(params)?.[RELATED_TASK_META];
    if (isObject(tag) && typeof tag.taskId === 'string' && this.parts.unwrapper.follows(tag.taskId)) {
      return this.relayForUnwrappedTask(request, route);
    }
    const taskId =
      tag === undefined ? this.parts.correlator.taskOfRequest(request.method, arrival) : undefined;
    if (taskId === undefined) return this.relayToClient(request, raw, route);
    const taskRoute = this.parts.correlator.routeForTask(taskId) ?? route;
    this.parts.clientPeer.relay(
      { ...request, params: withMeta(request.params, RELATED_TASK_META, { taskId }) },
      { taskId, ...(taskRoute && { route: taskRoute }) },
    );
    void this.parts.augmenter.inputRequested(taskId);
  }

  /** The upstream's tasks/get|result|cancel: served here for client-side tasks taskgate holds, else the client's. */
  private upstreamTaskRequest(
    request: Request,
    raw: Buffer,
    route: Route | undefined,
    serve?: () => Promise<JsonObject>,
  ): void {
    const served = this.servedForUpstream;
    this.parts.clientTasks.knows(request.params).then(
      (known) => {
        if (served.isGone) return;
        if (!known) return this.relayToClient(request, raw, route);
        if (serve) return served.answer(request.id, serve);
        served.answerBlocking(request.id, (signal) => this.parts.clientTasks.result(request.params, signal));
      },
      (error: unknown) => served.refuse(request.id, error),
    );
  }

  private relayToClient(request: Request, raw: Buffer, route: Route | undefined): void {
    this.parts.clientPeer.relay(
      request,
      { ...(route && { route }), ...(request.params?.task !== undefined && { asTask: true }) },
      raw,
      handed(request),
    );
  }

  /**
   * A request the upstream makes for a task taskgate follows for a client without tasks: the client gets
   * it as an ordinary request, if it declared the capability to answer it.
   */
  private relayForUnwrappedTask(request: Request, route: Route | undefined): void {
    const needed = CAPABILITY_FOR[request.method];
    if (needed !== undefined && !isObject(this.parts.clientCapabilities()[needed])) {
      this.parts.upstream.send(
        errorResponse(request.id, {
          code: ErrorCode.MethodNotFound,
          message: `The client cannot answer ${request.method}: it did not declare the "${needed}" capability`,
        }),
      );
      return;
    }
    const params = withoutRelatedTask(request.params);
    this.parts.clientPeer.relay(params === undefined ? request : { ...request, params }, {
      ...(route && { route }),
    });
  }

  /** Where a notification of the upstream goes: with what it concerns, or a log line with the one call. */
  private notificationRoute(
    { method, params }: { method: string; params?: JsonObject | undefined },
    arrival: Arrival | undefined,
  ): Route | undefined {
    return (
      this.parts.correlator.routeFor(params, arrival) ??
      (method === 'notifications/message' && this.parts.oneCaller()
        ? this.parts.correlator.routeForLog()
        : undefined)
    );
  }

  /**
   * A notification the session only routes, forwarded as its bytes (issue 33): what upstreamNotification
   * does for it, its route read off the members the scan kept. False (nothing done) for one it reads.
   */
  private notifiedAsBytes(
    envelope: Envelope,
    raw: Bytes,
    scanned: Scanned,
    arrival: Arrival | undefined,
  ): boolean {
    const method = envelope.method!;
    if (NOTIFICATION_READ.has(method)) return false;
    const params: JsonObject = {};
    const { _meta: meta, progressToken } = scanned.params;
    if (meta !== undefined) params._meta = valueOf(raw, meta);
    if (progressToken !== undefined) params.progressToken = valueOf(raw, progressToken);
    if (method === 'notifications/tools/list_changed') this.parts.profile.toolsChanged();
    const route = this.notificationRoute({ method, params }, arrival);
    sendBytes(this.parts.client, raw, route);
    return true;
  }

  private upstreamNotification(notification: Notification, raw: Buffer, route: Route | undefined): void {
    if (notification.method === 'notifications/tools/list_changed') this.parts.profile.toolsChanged();
    if (notification.method === 'notifications/tasks/status') {
      const taskId = notification.params?.taskId;
      // A client without tasks never saw the task taskgate follows for it.
      if (typeof taskId === 'string' && this.parts.unwrapper.follows(taskId)) {
        return this.parts.unwrapper.statusAnnounced(notification.params);
      }
      this.parts.upstreamTasks.announced(notification.params);
      this.parts.correlator.upstreamTaskSeen(notification.params);
    }
    if (notification.method === 'notifications/progress') {
      const token = notification.params?.progressToken;
      const hasToken = typeof token === 'string' || typeof token === 'number';
      if (hasToken) this.parts.unwrapper.progressSeen(token, notification.params);
      const taskId = hasToken ? this.parts.augmenter.calls.taskForProgressToken(token) : undefined;
      if (hasToken && taskId === undefined && this.parts.correlator.progressIsOver(token)) {
        this.parts.logger.debug(
          { progressToken: token },
          'dropping progress of a request or task that ended',
        );
        return;
      }
      if (taskId !== undefined) this.parts.sightings?.progress(taskId, notification.params);
      if (taskId !== undefined && metaOf(notification.params)?.[RELATED_TASK_META] === undefined) {
        this.parts.client.send(
          { ...notification, params: withMeta(notification.params, RELATED_TASK_META, { taskId }) },
          this.parts.correlator.routeForTask(taskId) ?? route,
        );
        return;
      }
    }
    if (notification.method === 'notifications/cancelled') {
      const requestId = notification.params?.requestId;
      if (typeof requestId === 'string' || typeof requestId === 'number') {
        if (this.servedForUpstream.cancel(requestId)) return;
        const wireId = this.parts.clientPeer.withdraw(requestId);
        if (wireId !== undefined && wireId !== requestId) {
          return this.parts.client.send(carriedCancellation(notification, wireId), route);
        }
      }
    }
    this.parts.client.sendRaw(raw, route);
  }

  upstreamMalformed(error: ProtocolError, id: RequestId | null): void {
    this.parts.logger.warn(`upstream server sent an unusable message: ${error.message}`);
    if (id !== null && this.parts.upstreamPeer.awaits(id)) {
      this.upstreamResponse(errorResponse(id, badUpstreamAnswer(error.message)), undefined);
    }
  }

  /** The upstream is gone: it went away (as its channel says), or the session closed it. */
  upstreamClosed(reason: string, reopening: boolean): void {
    this.upstreamLost(reason, reopening);
    if (!reopening) this.parts.upstreamGone(this.parts.upstreamPeer.state);
  }

  /**
   * Everything in flight upstream is answered with the reason. Later calls too until it is back, unless
   * it is being restarted and requests are held for it (the restarting channel answers them if it is not
   * back in time).
   */
  private upstreamLost(reason: string, reopening: boolean): void {
    this.parts.upstreamPeer.away(reason, reopening);
    this.forgetUpstreamRequests(reason);
    this.parts.upstreamPeer.failInFlight(reason);
    this.parts.correlator.plainCallsLost();
    this.parts.correlator.upstreamTasksLost();
    this.parts.upstreamTasks.lose(`Upstream server unavailable: ${reason}`, (task) => {
      if (this.parts.config.tasks.statusNotifications) {
        this.parts.client.send({ jsonrpc: '2.0', method: 'notifications/tasks/status', params: task });
      }
    });
  }

  /**
   * What the gone server asked is moot, and a restarted one must not get answers to requests it never
   * made: the client is told to stop on the request's own stream, before the calls those streams belong
   * to are answered (a request that asked for a task would need tasks/cancel, with an id not known yet: it
   * is only forgotten), the client-side tasks it made are cancelled, and what taskgate was answering for
   * it is dropped.
   */
  private forgetUpstreamRequests(reason: string): void {
    this.parts.clientPeer.withdrawAllRelayed(reason);
    this.parts.clientTasks.abandon();
    this.servedForUpstream.abandon();
    this.servedForUpstream = this.servedRequestsOfUpstream();
  }

  private servedRequestsOfUpstream(): ServedRequests {
    return new ServedRequests(
      (id, message) => this.parts.upstream.send(message, { responseTo: id }),
      (id, raw) => sendBytes(this.parts.upstream, raw, { responseTo: id }),
      this.parts.logger,
    );
  }

  /** A restarted upstream is back: it is told the log level the client had set. */
  upstreamReopened(): void {
    this.parts.upstreamPeer.back();
    const level = this.parts.clientLogLevel();
    if (level === undefined) return;
    void this.parts.upstreamPeer.call('logging/setLevel', level).done.then((answer) => {
      if (answer !== undefined && 'error' in answer.response) {
        this.parts.logger.warn(
          { error: answer.response.error },
          'the restarted upstream server refused the log level',
        );
      }
    });
  }
}

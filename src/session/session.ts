/**
 * One client connection paired with one upstream connection. Messages are routed by their envelope; only
 * initialize, tools/list, tools/call, tasks/*, progress, cancellation and the upstream's requests made
 * during a task are looked into. Everything else goes through as the exact text it arrived as.
 *
 * This is the wiring; each part owns one thing: the peers (what is in flight to each side), the requests
 * answered here, the decision for a tools/call, the upstream's profile and own tasks, the correlator.
 */
import type { Logger } from 'pino';
import type { Policy } from '../config/policy.js';
import { DEFAULT_REQUEST_TIMEOUT_MS, type Config } from '../config/schema.js';
import type { RequestCaller } from '../protocol/caller.js';
import { ErrorCode, methodNotFound, type ProtocolError } from '../protocol/errors.js';
import {
  RELATED_TASK_META,
  errorResponse,
  idKey,
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
import { digitsOf, handed, serialize, withExactRequestId } from '../protocol/exact-ids.js';
import type { AuditLog } from '../tasks/audit-log.js';
import { Augmenter, type AugmentHost } from '../tasks/augment.js';
import { ClientTasks } from '../tasks/client-tasks.js';
import type { TaskStore } from '../tasks/store.js';
import type { TaskRunner } from '../tasks/task-runner.js';
import { Unwrapper, withoutRelatedTask } from '../tasks/unwrap.js';
import type { TaskSightings } from '../observability/task-board.js';
import type { Limits } from '../security/limits.js';
import type { Arrival, Channel, Route } from '../transport/channel.js';
import { ExactIdChannel } from '../transport/exact-id-channel.js';
import {
  badUpstreamAnswer,
  clientFrameRefusal,
  unreadClientFrameRefusal,
  upstreamFrameRefusal,
  type Refusal,
} from './bad-frames.js';
import { ClientPeer } from './client-peer.js';
import { EarlyMessages } from './early-messages.js';
import { Correlator } from './correlator.js';
import { decideToolCall } from './decide.js';
import { ServedRequests, type Outcome } from './served-requests.js';
import { StatusReads } from './status-reads.js';
import { UpstreamPeer, type Forwarded, type UpstreamState } from './upstream-peer.js';
import { UpstreamOwnTasks } from './upstream-own-tasks.js';
import { UpstreamProfile } from './upstream-profile.js';

export type { UpstreamState } from './upstream-peer.js';

export interface SessionOptions {
  id: string;
  /** The caller's identity (a binding key) and, for logs, who that is; absent without authentication. */
  identity?: string;
  subject?: string;
  limits?: Limits;
  audit?: AuditLog;
  /** The process's running task calls: no task starts once it drains. */
  runner?: TaskRunner;
  /** Told how long the upstream took to answer each forwarded request (for metrics). */
  onUpstreamAnswer?: (method: string, seconds: number) => void;
  /** Told of tasks as they pass, for the operator's dashboard. */
  sightings?: TaskSightings;
  config: Config;
  policy: Policy;
  store: TaskStore;
  logger: Logger;
  /**
   * Keep the upstream connection until the session's running tasks end when the client goes away, so
   * their results stay retrievable from another session (HTTP). Over stdio nobody could retrieve them.
   */
  lingerForTasks?: boolean;
}

export interface SessionEvents {
  /**
   * The upstream is gone for good: it went away and is not being restarted, or the session closed it
   * (not for a shared server's, which goes on).
   */
  upstreamGone(state: UpstreamState): void;
  /** The session is over: the client went away or close() was called; the upstream channel is closed. */
  closed(): Promise<void> | void;
}

/** The client capability a server-to-client request needs. */
const CAPABILITY_FOR: Record<string, string | undefined> = {
  'elicitation/create': 'elicitation',
  'sampling/createMessage': 'sampling',
  'roots/list': 'roots',
};

export class Session {
  private readonly upstreamPeer: UpstreamPeer;
  private readonly clientPeer: ClientPeer;
  /** The client's requests taskgate answers itself. */
  private readonly servedForClient: ServedRequests;
  private readonly correlator: Correlator;
  private readonly statusReads = new StatusReads();
  private readonly profile: UpstreamProfile;
  /** Client requests not answered yet: once the client's input has ended, the session closes when none is left. */
  private readonly clientRequestsOpen = new Set<string | number>();
  /** Why the client's input ended, once it has. */
  private clientInputEnded: string | undefined;
  private readonly early = new EarlyMessages((raw, parsed) => this.fromClient(raw, parsed));
  /** Who made each client request (see countCallersBy): this session's caller, unless its client serves many. */
  private callerOf: (requestId: RequestId) => RequestCaller = () =>
    (this.ownCaller ??= {
      ...(this.options.identity === undefined ? {} : { identity: this.options.identity }),
      ...(this.options.subject === undefined ? {} : { subject: this.options.subject }),
      quota: this.caller,
    });
  private ownCaller: RequestCaller | undefined;
  /** Whether all the client's requests come from one caller (see countCallersBy). */
  private oneCaller = true;
  /** The client has sent a request (it knows the session is there). */
  private clientAsked = false;
  private closeWhenAnswered = false;
  /** The upstream's requests taskgate answers itself (for client-side tasks): anew when it restarts. */
  private servedForUpstream: ServedRequests;
  private readonly augmenter: Augmenter;
  /** The params of the client's latest logging/setLevel. */
  private clientLogLevel: JsonObject | undefined;
  /** The client's capabilities, from its initialize request. */
  private clientCapabilities: JsonObject = {};
  private readonly unwrapper: Unwrapper;
  /** The upstream's own tasks, to fail them here if it goes away while they run. */
  private readonly upstreamTasks: UpstreamOwnTasks;
  private readonly clientTasks: ClientTasks;
  private closing: Promise<void> | undefined;

  private readonly client: Channel;
  private readonly upstream: Channel;
  /** The upstream is a shared server's: closing lets go of it, and it goes on with what it runs. */
  private readonly upstreamOutlivesClose: boolean;

  constructor(
    client: Channel,
    upstream: Channel,
    private readonly options: SessionOptions,
    private readonly events: SessionEvents,
  ) {
    this.client = new ExactIdChannel(client, false);
    this.upstream = new ExactIdChannel(upstream, true);
    this.upstreamOutlivesClose = upstream.outlivesClose === true;
    this.clientPeer = new ClientPeer(this.client);
    this.servedForClient = new ServedRequests((id, m) => this.respond(id, m), options.logger);
    this.servedForUpstream = this.servedRequestsOfUpstream();
    this.profile = new UpstreamProfile(options.policy, options.logger);
    this.upstreamTasks = new UpstreamOwnTasks(options.sightings);
    this.upstreamPeer = new UpstreamPeer(this.upstream, {
      requestTimeoutMs: options.config.upstream?.requestTimeout ?? DEFAULT_REQUEST_TIMEOUT_MS,
      holdsRequests: options.config.upstreamRestart.holdRequests > 0,
      logger: options.logger,
      unanswered: (entry, wireId, error) => {
        if (wireId !== undefined) this.correlator.plainCallEnded(wireId);
        this.respond(entry.clientId, errorResponse(entry.clientId, error));
      },
    });
    const host: AugmentHost = {
      callUpstream: (method, params, timeoutMs) => this.upstreamPeer.call(method, params, timeoutMs),
      cancelUpstream: (wireId, reason) => this.upstreamPeer.cancelCall(wireId, reason),
      notifyClient: (method, params) => {
        if (method === 'notifications/tasks/status') this.statusReads.notified(params);
        this.client.send({ jsonrpc: '2.0', method, params });
      },
    };
    this.unwrapper = new Unwrapper(
      {
        callUpstream: (method, params, timeoutMs) => this.upstreamPeer.call(method, params, timeoutMs),
        cancelUpstream: (wireId, reason) => this.upstreamPeer.cancelCall(wireId, reason),
        notifyClient: (method, params, relatedTo) =>
          this.client.send({ jsonrpc: '2.0', method, params }, { relatedTo }),
        answerClient: (id, outcome) =>
          this.respond(
            id,
            'error' in outcome ? errorResponse(id, outcome.error) : successResponse(id, outcome.result),
          ),
        tasks: this.upstreamTasks.unwrapped,
      },
      options.config,
      options.logger,
    );
    this.clientTasks = new ClientTasks(
      options.store,
      options.policy,
      options.config,
      {
        callClient: (method, params) => this.clientPeer.call(method, params),
        cancelClient: (wireId, reason) => this.clientPeer.cancelCall(wireId, reason),
        // Nothing goes to a server that is down, nor to its successor, which never had these tasks.
        notifyUpstream: (method, params) => {
          if (!this.upstreamPeer.isAway) this.upstream.send({ jsonrpc: '2.0', method, params });
        },
      },
      options.id,
      options.logger,
    );
    this.augmenter = new Augmenter(
      options.store,
      options.policy,
      options.config,
      host,
      {
        sessionId: options.id,
        ...(options.identity === undefined ? {} : { identity: options.identity }),
        ...(options.subject === undefined ? {} : { subject: options.subject }),
      },
      options.logger,
      options.audit,
      options.runner,
    );
    this.correlator = new Correlator({
      clientRequestOf: (wireId) => this.upstreamPeer.clientRequestOf(wireId),
      unwrappedCallOf: (taskId) => this.unwrapper.clientRequestOf(taskId),
      taskOfCall: (wireId) => this.augmenter.calls.taskOfCall(wireId),
      soleRunningTask: () => this.augmenter.calls.soleRunningTask(),
    });
  }

  /** Whom per-caller limits count against: the identity, or this session without one. */
  get caller(): string {
    return this.options.identity ?? `session:${this.options.id}`;
  }

  /**
   * The client of this session is a bridge serving many callers: each request is made by the caller the
   * bridge says it carries (its identity binds the tasks it makes and names, its quota counts it), and one
   * it names no quota for (the bridge's own, already counted for its client) counts against nobody.
   * `oneCaller`: every request still comes from one client (a stdio connection), so what the upstream
   * sends unlabelled may go with that client's one call in flight; never so across many callers.
   */
  countCallersBy(callerOf: (requestId: RequestId) => RequestCaller, oneCaller: boolean): void {
    this.callerOf = callerOf;
    this.oneCaller = oneCaller;
  }

  start(): void {
    this.client.start({
      message: (raw, _arrival, parsed) => this.fromClient(raw, parsed),
      malformed: (error, id) => this.refuseClientFrame(unreadClientFrameRefusal(error, id)),
      closed: ({ reason, inputEnded }) => {
        if (inputEnded) return this.finishAnswering(reason);
        this.options.logger.info(`session closed: ${reason}`);
        void this.close();
      },
    });
    this.upstream.start({
      message: (raw, arrival, parsed) => this.fromUpstream(raw, arrival, parsed),
      malformed: (error, id) => this.upstreamMalformed(error, id),
      closed: ({ reason, reopening }) => this.upstreamClosed(reason, reopening === true),
      reopened: () => this.upstreamReopened(),
    });
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      this.servedForClient.stopBlocking();
      this.servedForUpstream.stopBlocking();
      this.unwrapper.abandonAll();
      this.clientTasks.close();
      if (this.options.lingerForTasks && !this.upstreamPeer.isAway) {
        await this.augmenter.idle(this.options.config.tasks.maxTtl);
      } else if (this.clientInputEnded !== undefined) {
        await this.augmenter.stopTasks(
          `The task ended unfinished: the client's input ended (${this.clientInputEnded}), and taskgate closed its session`,
        );
      }
      this.augmenter.close();
      await this.upstream.close();
      // A channel does not report its owner's close: what is left in flight on an upstream of the session's
      // own ends here (a shared one goes on, and answers nobody: its requests end at their deadline).
      if (!this.upstreamOutlivesClose && !this.upstreamPeer.isGoneForGood) {
        this.upstreamClosed('taskgate closed the session', false);
      }
      await this.client.close();
      await this.events.closed();
    })();
    return this.closing;
  }

  /**
   * Closes the session once the client has had an answer (an upstream that never started: the client's
   * initialize gets the reason, whenever it comes), or after `graceMs` if it asks nothing.
   */
  closeOnceAnswered(graceMs: number): void {
    if (this.clientAsked && this.onlyTasksAwaited) {
      void this.close();
      return;
    }
    this.closeWhenAnswered = true;
    setTimeout(() => void this.close(), graceMs).unref();
  }

  /** Sends the answer to a client request, on that request's stream. */
  private respond(id: RequestId | null, message: object): void {
    if (id === null) return this.client.send(message);
    this.client.send(this.statusReads.answer(id, message), { responseTo: id });
    this.answered(id);
  }

  /**
   * The client's input ended (a pipe at its end): it asks nothing more, but what it asked is still answered,
   * as the server alone would. What the upstream asks of it can no longer be answered, so it is refused.
   */
  private finishAnswering(reason: string): void {
    this.clientInputEnded = reason;
    for (const { upstreamId, error } of this.clientPeer.inputEnded(reason)) {
      this.upstream.send(errorResponse(upstreamId, error));
    }
    if (this.onlyTasksAwaited) {
      this.options.logger.info(`client went away (${reason})`);
      void this.close();
      return;
    }
    this.options.logger.info(
      `client closed its input (${reason}); answering the ${this.clientRequestsOpen.size} request(s) it sent before closing`,
    );
  }

  /**
   * Nothing the client asked is still on its way, except tasks/result waiting on tasks: those may wait for
   * as long as a task runs, for a client that may be gone (its vanishing looks the same), so they are not
   * waited for.
   */
  private get onlyTasksAwaited(): boolean {
    const waiting = this.servedForClient;
    if (this.clientRequestsOpen.size > waiting.blockingCount) return false;
    for (const key of this.clientRequestsOpen) if (!waiting.isBlocking(key)) return false;
    return true;
  }

  /** The client request is answered (or cancelled): nothing more belongs with it. */
  private answered(id: RequestId): void {
    const wasOpen = this.clientRequestsOpen.delete(idKey(id));
    this.statusReads.close(id);
    // onlyTasksAwaited walks every open request: asked only when the answer could close the session, or
    // 10 000 waiting tasks/result would each walk the others as they are answered.
    if (wasOpen && (this.clientInputEnded !== undefined || this.closeWhenAnswered) && this.onlyTasksAwaited) {
      void this.close();
    }
    this.correlator.requestAnswered(id);
    this.early.answered(id);
  }

  // ── client → upstream ────────────────────────────────────────────────────────────────────────────

  private fromClient(raw: Buffer, parsed: object | undefined): void {
    const read = readHanded(raw, parsed, 'the client');
    if (!read.ok) return this.refuseFromClient(read.error, read.value, raw);
    const { message } = read;
    if (message.kind !== 'response' && this.early.hold(raw, parsed)) {
      // Open already: the session does not close before it is answered.
      if (message.kind === 'request') this.clientRequestsOpen.add(idKey(message.msg.id));
      return;
    }
    // Forwarded, a request must carry the alias of a large id (the upstream answers with what it was
    // sent), and so must a cancellation of one (below).
    if (message.kind === 'request' && digitsOf(message.msg.id) !== undefined) {
      raw = Buffer.from(JSON.stringify(message.msg));
    }
    switch (message.kind) {
      case 'request':
        return this.clientRequest(message.msg, raw);
      case 'notification': {
        const notification = withExactRequestId(message.msg, raw);
        const forwarded = notification === message.msg ? raw : Buffer.from(JSON.stringify(notification));
        return this.clientNotification(notification, forwarded);
      }
      case 'response':
        return this.clientResponse(message.msg, raw);
    }
  }

  /** A client message taskgate cannot take (bad-frames.ts): a response is never answered. */
  private refuseFromClient(error: unknown, value: unknown, raw: Buffer): void {
    this.refuseClientFrame(clientFrameRefusal(error, value, raw));
  }

  private refuseClientFrame({ reply, fails }: Refusal): void {
    if (fails !== undefined && this.clientPeer.awaits(fails.id)) {
      this.options.logger.warn(
        `the client's answer to request ${String(fails.id)} is refused: ${fails.error.message}`,
      );
      const response = errorResponse(fails.id, fails.error);
      this.clientResponse(response, Buffer.from(serialize(response)));
    }
    if (reply !== undefined) this.respond(reply.id, reply);
  }

  private clientRequest(request: Request, raw: Buffer): void {
    this.clientAsked = true;
    this.clientRequestsOpen.add(idKey(request.id));
    const params = request.params;
    const limits = this.options.limits;
    const caller = limits && this.callerOf(request.id).quota;
    if (
      caller !== undefined &&
      (request.method.startsWith('tasks/') || (request.method === 'tools/call' && params?.task !== undefined))
    ) {
      try {
        if (request.method === 'tools/call') limits!.admitTask(caller);
        else limits!.admitTaskRequest(caller);
      } catch (error) {
        return this.servedForClient.refuse(request.id, error);
      }
    }
    this.correlator.requestOpened(request.id, params);
    switch (request.method) {
      case 'initialize':
        return this.initialize(request, raw);
      case 'tools/list':
        return this.forwardRequest(request, raw, (result) =>
          this.profile.rewriteToolsList(result, this.clientHasTasks),
        );
      case 'tools/call':
        return this.toolCall(request, raw);
      case 'logging/setLevel':
        // Kept, to set again on a restarted upstream.
        this.clientLogLevel = params;
        return this.forwardRequest(request, raw);
      case 'tasks/get':
        this.statusReads.opened(request.id, params);
        return this.taskRequest(request, raw, (by) => this.augmenter.getTask(params, by));
      case 'tasks/cancel':
        return this.taskRequest(request, raw, (by) => this.augmenter.cancelTask(params, by));
      case 'tasks/result':
        return this.taskRequest(request, raw);
      case 'tasks/list':
        return this.servedForClient.answer(request.id, () =>
          this.augmenter.listTasks(params, this.profile.lists, this.callerOf(request.id)),
        );
      default:
        // A receiver must process a request normally and ignore task metadata for a request type it never
        // advertised tasks for; some SDK servers fail on it instead, so it is taken off.
        if (params?.task !== undefined && !this.profile.takesTask(request.method)) {
          const { task: _, ...rest } = params;
          return this.forwardRequest({ ...request, params: rest });
        }
        return this.forwardRequest(request, raw);
    }
  }

  /**
   * Notes what the client can do and, unless told not to, declares client-side tasks to the upstream on
   * behalf of a client that lacks them.
   */
  private initialize(request: Request, raw: Buffer): void {
    const capabilities = isObject(request.params?.capabilities) ? request.params.capabilities : {};
    this.clientCapabilities = capabilities;
    this.early.initializeSent(request.id);
    const declared = this.options.config.clientTasks
      ? this.clientTasks.declareFor(capabilities)
      : capabilities;
    const onResult = (result: JsonObject): JsonObject => this.rewriteInitialize(result);
    if (declared === capabilities) return this.forwardRequest(request, raw, onResult);
    this.forwardRequest(
      { ...request, params: { ...request.params, capabilities: declared } },
      undefined,
      onResult,
    );
  }

  /** What the table of docs/design.md says for this call (decide.ts), carried out; `listed`: the profile was updated for it. */
  private toolCall(request: Request, raw: Buffer, listed = false): void {
    const params = request.params;
    const name = typeof params?.name === 'string' ? params.name : undefined;
    if (!listed && this.profile.needsListing(name, params?.task !== undefined, this.clientHasTasks)) {
      void this.profile
        .learn((method, p) => this.upstreamPeer.call(method, p))
        .then(() => {
          if (this.clientRequestsOpen.has(idKey(request.id))) this.toolCall(request, raw, true);
        });
      return;
    }
    const policy = name === undefined ? undefined : this.options.policy.forTool(name);
    const plan = decideToolCall({
      asTask: params?.task !== undefined,
      clientHasTasks: this.clientHasTasks,
      upstream: this.profile.tool(name),
      policy: policy ?? { taskSupport: 'optional', unwrap: false },
    });
    switch (plan.kind) {
      case 'unwrap':
        return this.unwrapper.start(request, this.options.policy.ttlFor(policy!, undefined));
      case 'forward':
        return this.forwardRequest(request, raw);
      case 'refuse-task': {
        const why = plan.taskSupport === 'forbidden' ? 'forbidden' : 'left to the server, which has no tasks';
        return this.servedForClient.refuse(
          request.id,
          methodNotFound(
            `Tool "${name}" cannot be called as a task (its taskSupport is "${why}"); call it without "task"`,
          ),
        );
      }
      case 'refuse-plain':
        return this.servedForClient.refuse(
          request.id,
          methodNotFound(
            `Tool "${name}" must be called as a task (its taskSupport is "required"): add a "task" field to the tools/call params`,
          ),
        );
      case 'augment': {
        if (this.upstreamPeer.refuses) return this.refuseUpstreamGone(request);
        const limits = this.options.limits;
        const caller = this.callerOf(request.id);
        const quota = caller.quota;
        return this.servedForClient.answer(request.id, () =>
          limits && quota !== undefined
            ? limits.withinLiveTasks(quota, (limit) => this.augmenter.createTask(params, limit, caller))
            : this.augmenter.createTask(params, undefined, caller),
        );
      }
    }
  }

  /**
   * tasks/get, tasks/result, tasks/cancel: served here for taskgate's own tasks, forwarded for the
   * upstream's (an id this store does not know, when the upstream has tasks of its own).
   */
  private taskRequest(
    request: Request,
    raw: Buffer,
    serve?: (caller: RequestCaller) => Promise<JsonObject>,
  ): void {
    const caller = this.callerOf(request.id);
    const local = (): void =>
      serve
        ? this.servedForClient.answer(request.id, () => serve(caller))
        : this.servedForClient.answerBlocking(request.id, (signal) =>
            this.taskResultFor(request, signal, caller),
          );
    if (!this.profile.hasTasks) return local();
    this.augmenter.knows(request.params, caller).then(
      (known) => {
        if (known) return local();
        const lost = this.upstreamTasks.answerIfLost(request);
        if (lost === undefined) return this.forwardRequest(request, raw);
        if ('refusal' in lost) return this.servedForClient.refuse(request.id, lost.refusal);
        this.respond(request.id, lost.answer);
      },
      (error: unknown) => this.servedForClient.refuse(request.id, error),
    );
  }

  private refuseUpstreamGone(request: Request): void {
    this.respond(request.id, errorResponse(request.id, this.upstreamPeer.unavailable()));
  }

  private forwardRequest(
    request: Request,
    raw?: Buffer,
    onResult?: (result: JsonObject) => JsonObject,
  ): void {
    if (this.upstreamPeer.refuses) return this.refuseUpstreamGone(request);
    const entry: Forwarded = {
      kind: 'client',
      clientId: request.id,
      method: request.method,
      sentAt: performance.now(),
    };
    if (onResult) entry.onResult = onResult;
    const taskId = request.params?.taskId;
    if (request.method === 'tasks/result' && typeof taskId === 'string') entry.taskId = taskId;
    if (request.method === 'tools/call' && typeof request.params?.name === 'string') {
      entry.tool = request.params.name;
    }
    const wireId = this.upstreamPeer.register(request.id, entry);
    // Known as a plain call before it is sent: a channel may answer within send.
    if (request.method === 'tools/call') this.correlator.plainCallSent(wireId);
    this.upstreamPeer.send(request, wireId, raw);
  }

  /** tasks/result of one of taskgate's tasks, noting that it is open so related messages can use its stream. */
  private taskResultFor(request: Request, signal: AbortSignal, caller: RequestCaller): Promise<Outcome> {
    const taskId = request.params?.taskId;
    if (typeof taskId !== 'string') return this.augmenter.taskResult(request.params, signal, caller);
    const closed = this.correlator.taskResultOpened(taskId, request.id);
    // then(), not an await in try/finally: fewer turns of the microtask queue per released waiter.
    return this.augmenter.taskResult(request.params, signal, caller).then(
      (outcome) => {
        closed();
        return outcome;
      },
      (error: unknown) => {
        closed();
        throw error;
      },
    );
  }

  private clientNotification(notification: Notification, raw: Buffer): void {
    // Progress on what the gone server asked: nobody to tell (and its successor must not hear it).
    if (notification.method === 'notifications/progress' && this.upstreamPeer.isAway) return;
    if (notification.method === 'notifications/cancelled') {
      const requestId = notification.params?.requestId;
      if (typeof requestId === 'string' || typeof requestId === 'number') {
        // A cancelled request gets no answer: it is over for the client.
        this.answered(requestId);
        if (this.servedForClient.cancel(requestId)) return;
        if (this.unwrapper.cancel(requestId)) return;
        const wireId = this.upstreamPeer.withdraw(requestId);
        if (wireId === undefined) return; // already answered, or never ours to forward
        this.correlator.plainCallEnded(wireId);
        if (wireId !== requestId) {
          this.upstream.send({ ...notification, params: { ...notification.params, requestId: wireId } });
          return;
        }
      }
    }
    this.upstream.sendRaw(raw);
  }

  private clientResponse(response: Response, raw: Buffer): void {
    const entry = response.id === null ? undefined : this.clientPeer.answered(response.id);
    if (!entry) {
      this.options.logger.debug(
        { id: response.id },
        'dropping a client response that answers no pending request',
      );
      return;
    }
    if (entry.kind === 'own') return entry.settle({ response, bytes: raw.length });
    if (entry.taskId !== undefined) void this.augmenter.inputAnswered(entry.taskId);
    if (entry.upstreamId === response.id) this.upstream.sendRaw(raw, undefined, handed(response));
    else this.upstream.send({ ...response, id: entry.upstreamId });
  }

  // ── upstream → client ────────────────────────────────────────────────────────────────────────────

  private fromUpstream(raw: Buffer, arrival: Arrival | undefined, parsed: object | undefined): void {
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
          this.correlator.routeFor(message.msg.params, arrival),
          arrival,
        );
      case 'notification': {
        const notification = withExactRequestId(message.msg, raw);
        const route =
          this.correlator.routeFor(notification.params, arrival) ??
          (notification.method === 'notifications/message' && this.oneCaller
            ? this.correlator.routeForLog()
            : undefined);
        return this.upstreamNotification(notification, raw, route);
      }
    }
  }

  /**
   * An upstream message taskgate cannot take is dropped; when it answers a call, that call fails, and when
   * it is a request, the upstream is told why, so that neither side waits for what will never come.
   */
  private upstreamInvalid(error: unknown, value: unknown, raw: Buffer): void {
    this.options.logger.warn({ err: error }, 'dropping an invalid message from the upstream server');
    const { reply, fails } = upstreamFrameRefusal(error, value, raw);
    if (fails !== undefined && this.upstreamPeer.awaits(fails.id)) {
      this.upstreamResponse(errorResponse(fails.id, fails.error), undefined);
    }
    if (reply !== undefined && !this.upstreamPeer.isAway) this.upstream.send(reply);
  }

  private upstreamResponse(response: Response, raw: Buffer | undefined): void {
    const entry = response.id === null ? undefined : this.upstreamPeer.answered(response.id);
    if (!entry) {
      this.options.logger.debug(
        { id: response.id },
        'dropping an upstream response that answers no pending request',
      );
      return;
    }
    if (entry.kind === 'own') {
      entry.settle({ response, bytes: raw?.length ?? 0 });
      return;
    }
    this.correlator.plainCallEnded(response.id as RequestId);
    this.options.onUpstreamAnswer?.(entry.method, (performance.now() - entry.sentAt) / 1000);
    if (this.profile.hasTasks) {
      this.upstreamTasks.answered(entry, response);
      this.upstreamTaskProgress(entry, response);
    }
    const route = { responseTo: entry.clientId };
    this.answered(entry.clientId);
    if ('result' in response && entry.onResult) {
      this.client.send(successResponse(entry.clientId, entry.onResult(response.result)), route);
    } else if (entry.clientId === response.id && raw !== undefined) {
      this.client.sendRaw(raw, route, handed(response));
    } else {
      this.client.send({ ...response, id: entry.clientId }, route);
    }
  }

  /** What an answer of the upstream tells of how long its tasks' progress lasts. */
  private upstreamTaskProgress(entry: Forwarded, response: Response): void {
    if (entry.method === 'tasks/result' && entry.taskId !== undefined) {
      return this.correlator.upstreamTaskEnded(entry.taskId);
    }
    if (!('result' in response)) return;
    const task = response.result.task;
    if (entry.method === 'tools/call' && isObject(task) && typeof task.taskId === 'string') {
      this.correlator.upstreamTaskMade(entry.clientId, task.taskId);
    } else if (entry.method === 'tasks/get' || entry.method === 'tasks/cancel') {
      this.correlator.upstreamTaskSeen(response.result);
    }
  }

  private upstreamRequest(
    request: Request,
    raw: Buffer,
    route: Route | undefined,
    arrival: Arrival | undefined,
  ): void {
    const params = request.params;
    if (params?.task !== undefined && this.clientTasks.serves(request.method)) {
      return this.servedForUpstream.answer(request.id, () => this.clientTasks.create(request.method, params));
    }
    switch (request.method) {
      case 'tasks/get':
        return this.upstreamTaskRequest(request, raw, route, () => this.clientTasks.get(params));
      case 'tasks/cancel':
        return this.upstreamTaskRequest(request, raw, route, () => this.clientTasks.cancel(params));
      case 'tasks/result':
        return this.upstreamTaskRequest(request, raw, route);
    }
    const tag = metaOf(params)?.[RELATED_TASK_META];
    if (isObject(tag) && typeof tag.taskId === 'string' && this.unwrapper.follows(tag.taskId)) {
      return this.relayForUnwrappedTask(request, route);
    }
    const taskId = tag === undefined ? this.correlator.taskOfRequest(request.method, arrival) : undefined;
    if (taskId === undefined) return this.relayToClient(request, raw, route);
    const taskRoute = this.correlator.routeForTask(taskId) ?? route;
    this.clientPeer.relay(
      { ...request, params: withMeta(request.params, RELATED_TASK_META, { taskId }) },
      { taskId, ...(taskRoute && { route: taskRoute }) },
    );
    void this.augmenter.inputRequested(taskId);
  }

  /** The upstream's tasks/get|result|cancel: served here for client-side tasks taskgate holds, else the client's. */
  private upstreamTaskRequest(
    request: Request,
    raw: Buffer,
    route: Route | undefined,
    serve?: () => Promise<JsonObject>,
  ): void {
    const served = this.servedForUpstream;
    this.clientTasks.knows(request.params).then(
      (known) => {
        if (served.isGone) return;
        if (!known) return this.relayToClient(request, raw, route);
        if (serve) return served.answer(request.id, serve);
        served.answerBlocking(request.id, (signal) => this.clientTasks.result(request.params, signal));
      },
      (error: unknown) => served.refuse(request.id, error),
    );
  }

  private relayToClient(request: Request, raw: Buffer, route: Route | undefined): void {
    this.clientPeer.relay(
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
    if (needed !== undefined && !isObject(this.clientCapabilities[needed])) {
      this.upstream.send(
        errorResponse(request.id, {
          code: ErrorCode.MethodNotFound,
          message: `The client cannot answer ${request.method}: it did not declare the "${needed}" capability`,
        }),
      );
      return;
    }
    const params = withoutRelatedTask(request.params);
    this.clientPeer.relay(params === undefined ? request : { ...request, params }, {
      ...(route && { route }),
    });
  }

  private upstreamNotification(notification: Notification, raw: Buffer, route: Route | undefined): void {
    if (notification.method === 'notifications/tools/list_changed') this.profile.toolsChanged();
    if (notification.method === 'notifications/tasks/status') {
      const taskId = notification.params?.taskId;
      // A client without tasks never saw the task taskgate follows for it.
      if (typeof taskId === 'string' && this.unwrapper.follows(taskId)) {
        return this.unwrapper.statusAnnounced(notification.params);
      }
      this.upstreamTasks.announced(notification.params);
      this.correlator.upstreamTaskSeen(notification.params);
    }
    if (notification.method === 'notifications/progress') {
      const token = notification.params?.progressToken;
      const hasToken = typeof token === 'string' || typeof token === 'number';
      if (hasToken) this.unwrapper.progressSeen(token, notification.params);
      const taskId = hasToken ? this.augmenter.calls.taskForProgressToken(token) : undefined;
      if (hasToken && taskId === undefined && this.correlator.progressIsOver(token)) {
        this.options.logger.debug(
          { progressToken: token },
          'dropping progress of a request or task that ended',
        );
        return;
      }
      if (taskId !== undefined) this.options.sightings?.progress(taskId, notification.params);
      if (taskId !== undefined && metaOf(notification.params)?.[RELATED_TASK_META] === undefined) {
        this.client.send(
          { ...notification, params: withMeta(notification.params, RELATED_TASK_META, { taskId }) },
          this.correlator.routeForTask(taskId) ?? route,
        );
        return;
      }
    }
    if (notification.method === 'notifications/cancelled') {
      const requestId = notification.params?.requestId;
      if (typeof requestId === 'string' || typeof requestId === 'number') {
        if (this.servedForUpstream.cancel(requestId)) return;
        const wireId = this.clientPeer.withdraw(requestId);
        if (wireId !== undefined) {
          if (wireId !== requestId) {
            this.client.send(
              { ...notification, params: { ...notification.params, requestId: wireId } },
              route,
            );
            return;
          }
        }
      }
    }
    this.client.sendRaw(raw, route);
  }

  private upstreamMalformed(error: ProtocolError, id: RequestId | null): void {
    this.options.logger.warn(`upstream server sent an unusable message: ${error.message}`);
    if (id !== null && this.upstreamPeer.awaits(id)) {
      this.upstreamResponse(errorResponse(id, badUpstreamAnswer(error.message)), undefined);
    }
  }

  /** The upstream is gone: it went away (as its channel says), or the session closed it. */
  private upstreamClosed(reason: string, reopening: boolean): void {
    this.upstreamLost(reason, reopening);
    if (!reopening) this.events.upstreamGone(this.upstreamPeer.state);
  }

  /**
   * Everything in flight upstream is answered with the reason. Later calls too until it is back, unless
   * it is being restarted and requests are held for it (the restarting channel answers them if it is not
   * back in time).
   */
  private upstreamLost(reason: string, reopening: boolean): void {
    this.upstreamPeer.away(reason, reopening);
    this.forgetUpstreamRequests(reason);
    this.upstreamPeer.failInFlight(reason);
    this.correlator.plainCallsLost();
    this.correlator.upstreamTasksLost();
    this.upstreamTasks.lose(`Upstream server unavailable: ${reason}`, (task) => {
      if (this.options.config.tasks.statusNotifications) {
        this.client.send({ jsonrpc: '2.0', method: 'notifications/tasks/status', params: task });
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
    this.clientPeer.withdrawAllRelayed(reason);
    this.clientTasks.abandon();
    this.servedForUpstream.abandon();
    this.servedForUpstream = this.servedRequestsOfUpstream();
  }

  private servedRequestsOfUpstream(): ServedRequests {
    return new ServedRequests(
      (id, message) => this.upstream.send(message, { responseTo: id }),
      this.options.logger,
    );
  }

  /** A restarted upstream is back: it is told the log level the client had set. */
  private upstreamReopened(): void {
    this.upstreamPeer.back();
    if (this.clientLogLevel === undefined) return;
    void this.upstreamPeer.call('logging/setLevel', this.clientLogLevel).done.then((answer) => {
      if (answer !== undefined && 'error' in answer.response) {
        this.options.logger.warn(
          { error: answer.response.error },
          'the restarted upstream server refused the log level',
        );
      }
    });
  }

  // ── rewrites ─────────────────────────────────────────────────────────────────────────────────────

  private rewriteInitialize(result: JsonObject): JsonObject {
    this.upstreamPeer.state.initialized = true;
    return this.profile.rewriteInitialize(result, (ownTasks) => this.augmenter.capabilities(ownTasks));
  }

  /** How a call of the tool may run (UpstreamProfile.taskSupportFor): what a 2026-07-28 front decides by. */
  taskSupportFor(name: string): ReturnType<UpstreamProfile['taskSupportFor']> {
    return this.profile.taskSupportFor(name);
  }

  /** A client that declared no tasks capability cannot make task-augmented requests. */
  private get clientHasTasks(): boolean {
    return isObject(this.clientCapabilities.tasks);
  }
}

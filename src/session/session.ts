/**
 * One client connection paired with one upstream connection. Messages are routed by their envelope; only
 * initialize, tools/list, tools/call, tasks/*, progress, cancellation and the upstream's requests made
 * during a task are looked into. Everything else goes through as the exact text it arrived as.
 *
 * This is the wiring, and the client's side: what the client sends, taken where it goes. Each part owns
 * one thing: the peers (what is in flight to each side), the upstream's side (what it sends, its going
 * and coming back), the requests answered here, the decision for a tools/call, the upstream's profile and
 * own tasks, the correlator, the order of task statuses.
 */
import { DEFAULT_REQUEST_TIMEOUT_MS } from '../config/schema.js';
import type { RequestCaller } from '../protocol/caller.js';
import { carriedCancellation } from '../protocol/correlation.js';
import type { ProtocolError } from '../protocol/errors.js';
import { callableTools, taskListRefused, toolRefusal } from '../security/access.js';
import type { AccessRefusal } from '../tasks/audit-log.js';
import {
  errorResponse,
  isObject,
  type JsonObject,
  type Notification,
  type Request,
  type RequestId,
  type Response,
} from '../protocol/messages.js';
import type { Pieces } from '../protocol/pieces.js';
import { readHanded } from '../protocol/read-message.js';
import { digitsOf, handed, serialize, withExactRequestId } from '../protocol/exact-ids.js';
import type { Augmenter } from '../tasks/augment.js';
import type { ClientTasks } from '../tasks/client-tasks.js';
import type { Unwrapper } from '../tasks/unwrap.js';
import { sendBytes, type Channel } from '../transport/channel.js';
import { ExactIdChannel } from '../transport/exact-id-channel.js';
import { clientFrameRefusal, unreadClientFrameRefusal, type Refusal } from './bad-frames.js';
import { ClientPeer } from './client-peer.js';
import { EarlyMessages } from './early-messages.js';
import { Correlator } from './correlator.js';
import { decideToolCall, refusalOf, taskOf, type UpstreamTool } from './decide.js';
import { OpenRequests } from './open-requests.js';
import { ServedRequests, type Outcome } from './served-requests.js';
import type { SessionEvents, SessionOptions } from './session-options.js';
import { StatusReads } from './status-reads.js';
import { RequestContexts, sessionCaller, type RequestContext } from './request-contexts.js';
import { taskParts } from './task-parts.js';
import { UpstreamPeer, type Forwarded } from './upstream-peer.js';
import { UpstreamOwnTasks } from './upstream-own-tasks.js';
import { UpstreamSide } from './upstream-side.js';
import { UpstreamProfile } from './upstream-profile.js';

export type { UpstreamState } from './upstream-peer.js';
export type { SessionEvents, SessionOptions } from './session-options.js';

export class Session {
  private readonly upstreamPeer: UpstreamPeer;
  private readonly clientPeer: ClientPeer;
  /** The client's requests taskgate answers itself. */
  private readonly servedForClient: ServedRequests;
  private readonly correlator: Correlator;
  private readonly statusReads = new StatusReads();
  private readonly profile: UpstreamProfile;
  /** Client requests not answered yet: once the client's input has ended, the session closes when none is left. */
  private readonly requests: OpenRequests;
  private readonly early = new EarlyMessages((raw, parsed) => this.fromClient(raw, parsed));
  /** Whether all the client's requests come from one caller (see servesCallers). */
  private oneCaller = true;
  private readonly upstreamSide: UpstreamSide;
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

  private readonly client: ExactIdChannel;
  /** Who made each client request, and where the answer goes of one handed as a value (take). */
  private readonly contexts: RequestContexts;
  private readonly upstream: Channel;
  /** The upstream is a shared server's: closing lets go of it, and it goes on with what it runs. */
  private readonly upstreamOutlivesClose: boolean;

  constructor(
    client: Channel,
    upstream: Channel,
    private readonly options: SessionOptions,
    private readonly events: SessionEvents,
  ) {
    this.contexts = new RequestContexts(client, sessionCaller(options, this.caller));
    this.client = new ExactIdChannel(this.contexts, false);
    this.upstream = new ExactIdChannel(upstream, true);
    this.upstreamOutlivesClose = upstream.outlivesClose === true;
    this.clientPeer = new ClientPeer(this.client);
    this.servedForClient = new ServedRequests(
      (id, m) => this.respond(id, m),
      (id, raw) => this.respondRaw(id, raw),
      options.logger,
    );
    this.requests = new OpenRequests(this.servedForClient, () => void this.close());
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
    ({
      augmenter: this.augmenter,
      unwrapper: this.unwrapper,
      clientTasks: this.clientTasks,
    } = taskParts(options, {
      client: this.client,
      upstream: this.upstream,
      clientPeer: this.clientPeer,
      upstreamPeer: this.upstreamPeer,
      upstreamTasks: this.upstreamTasks,
      statusReads: this.statusReads,
      respond: (id, message) => this.respond(id, message),
    }));
    this.correlator = new Correlator({
      clientRequestOf: (wireId) => this.upstreamPeer.clientRequestOf(wireId),
      unwrappedCallOf: (taskId) => this.unwrapper.clientRequestOf(taskId),
      taskOfCall: (wireId) => this.augmenter.calls.taskOfCall(wireId),
      soleRunningTask: () => this.augmenter.calls.soleRunningTask(),
    });
    this.upstreamSide = new UpstreamSide({
      client: this.client,
      contexts: this.contexts,
      upstream: this.upstream,
      upstreamPeer: this.upstreamPeer,
      clientPeer: this.clientPeer,
      correlator: this.correlator,
      profile: this.profile,
      upstreamTasks: this.upstreamTasks,
      unwrapper: this.unwrapper,
      augmenter: this.augmenter,
      clientTasks: this.clientTasks,
      logger: options.logger,
      config: options.config,
      onUpstreamAnswer: options.onUpstreamAnswer,
      sightings: options.sightings,
      oneCaller: () => this.oneCaller,
      clientCapabilities: () => this.clientCapabilities,
      clientLogLevel: () => this.clientLogLevel,
      answered: (id) => this.answered(id),
      upstreamGone: (state) => events.upstreamGone(state),
    });
  }

  /** Whom per-caller limits count against: the identity, or this session without one. */
  get caller(): string {
    return this.options.identity ?? `session:${this.options.id}`;
  }

  /**
   * The client of this session is a bridge serving many callers: each request it hands over (take) carries
   * its caller, whose identity binds the tasks it makes and names and whose quota counts it (none for the
   * bridge's own, already counted for its client); what it sends as bytes (its initialize) is no caller's.
   * `oneCaller`: every request still comes from one client (a stdio connection), so what the upstream
   * sends unlabelled may go with that client's one call in flight; never so across many callers.
   */
  servesCallers(oneCaller: boolean): void {
    this.contexts.manyCallers();
    this.oneCaller = oneCaller;
  }

  /**
   * A request the client's edge has read already (the 2026-07-28 bridge), handed as a value with its
   * context: served as one that came as bytes, its answer handed to `context.answer` (request-contexts.ts).
   */
  take(request: Request, context: RequestContext): void {
    this.contexts.expect(request.id, context);
    // Before the handshake is answered it waits its turn with the rest, as bytes.
    if (this.early.holding && this.early.hold(Buffer.from(JSON.stringify(request)), request)) {
      return this.requests.opened(request.id, true);
    }
    this.clientRequest(request);
  }

  /** A cancellation, or an answer to the server's request, of the edge that hands requests as values (take). */
  takeMessage(message: Notification | Response): void {
    this.fromClient(Buffer.from(serialize(message)), handed(message));
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
      message: (raw, arrival, parsed) => this.upstreamSide.fromUpstream(raw, arrival, parsed),
      pieces: (line, scanned, arrival) => this.upstreamSide.fromUpstreamPieces(line, scanned, arrival),
      malformed: (error, id) => this.upstreamSide.upstreamMalformed(error, id),
      closed: ({ reason, reopening }) => this.upstreamSide.upstreamClosed(reason, reopening === true),
      reopened: () => this.upstreamSide.upstreamReopened(),
      streamPaused: (wireId, retryMs) => this.upstreamSide.streamPaused(wireId, retryMs),
    });
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      this.servedForClient.stopBlocking();
      this.upstreamSide.stopBlocking();
      this.unwrapper.abandonAll();
      this.clientTasks.close();
      if (this.options.lingerForTasks && !this.upstreamPeer.isAway) {
        await this.augmenter.idle(this.options.config.tasks.maxTtl);
      } else if (this.requests.inputEnded !== undefined) {
        await this.augmenter.stopTasks(
          `The task ended unfinished: the client's input ended (${this.requests.inputEnded}), and taskgate closed its session`,
        );
      }
      this.augmenter.close();
      await this.upstream.close();
      // A channel does not report its owner's close: what is left in flight on an upstream of the session's
      // own ends here (a shared one goes on, and answers nobody: its requests end at their deadline).
      if (!this.upstreamOutlivesClose && !this.upstreamPeer.isGoneForGood) {
        this.upstreamSide.upstreamClosed('taskgate closed the session', false);
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
    this.requests.closeOnceAnswered(graceMs);
  }

  /** Sends the answer to a client request, on that request's stream. */
  private respond(id: RequestId | null, message: object): void {
    if (id === null) return this.client.send(message);
    this.client.send(this.statusReads.answer(id, message), { responseTo: id });
    this.answered(id);
  }

  /** Sends the answer to a client request as its bytes (a task's result kept as bytes: result-bytes.ts). */
  private respondRaw(id: RequestId, raw: Pieces | string): void {
    this.statusReads.close(id);
    sendBytes(this.client, raw, { responseTo: id });
    this.answered(id);
  }

  /**
   * The client's input ended (a pipe at its end): it asks nothing more, but what it asked is still answered,
   * as the server alone would. What the upstream asks of it can no longer be answered, so it is refused.
   */
  private finishAnswering(reason: string): void {
    for (const { upstreamId, error } of this.clientPeer.inputEnded(reason)) {
      this.upstream.send(errorResponse(upstreamId, error));
    }
    if (this.requests.endInput(reason)) {
      this.options.logger.info(`client went away (${reason})`);
      void this.close();
      return;
    }
    this.options.logger.info(
      `client closed its input (${reason}); answering the ${this.requests.size} request(s) it sent before closing`,
    );
  }

  /** The client request is answered (or cancelled): nothing more belongs with it. */
  private answered(id: RequestId): void {
    this.requests.answered(id);
    this.statusReads.close(id);
    this.correlator.requestAnswered(id);
    this.early.answered(id);
  }

  // ── client → upstream ────────────────────────────────────────────────────────────────────────────

  private fromClient(raw: Buffer, parsed: object | undefined): void {
    const read = readHanded(raw, parsed, 'the client');
    if (!read.ok) return this.refuseClientFrame(clientFrameRefusal(read.error, read.value, raw));
    const { message } = read;
    if (message.kind !== 'response' && this.early.hold(raw, parsed)) {
      // Open already: the session does not close before it is answered.
      if (message.kind === 'request') this.requests.opened(message.msg.id, true);
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

  /** `raw`: its bytes, when it came as bytes (forwarded as they are); a value handed over has none. */
  private clientRequest(request: Request, raw?: Buffer): void {
    this.requests.opened(request.id);
    const params = request.params;
    const asksTask = request.method === 'tools/call' && params?.task !== undefined;
    if ((asksTask || request.method.startsWith('tasks/')) && !this.admitted(request)) return;
    this.correlator.requestOpened(request.id, params);
    switch (request.method) {
      case 'initialize':
        return this.initialize(request, raw);
      case 'tools/list': {
        const access = this.contexts.callerOf(request.id).access;
        return this.forwardRequest(request, raw, (result) =>
          callableTools(this.profile.rewriteToolsList(result, this.clientHasTasks), access),
        );
      }
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
        if (this.contexts.callerOf(request.id).access?.taskList === false) {
          return this.refuseByRule(request, { right: 'tasks/list' }, taskListRefused());
        }
        return this.servedForClient.answer(request.id, () =>
          this.augmenter.listTasks(params, this.profile.lists, this.contexts.callerOf(request.id)),
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

  /** A task call or tasks/* request within its caller's limits; else refused, and false. */
  private admitted(request: Request): boolean {
    const limits = this.options.limits;
    const caller = limits && this.contexts.callerOf(request.id).quota;
    try {
      if (caller === undefined) return true;
      if (request.method === 'tools/call') limits!.admitTask(caller);
      else limits!.admitTaskRequest(caller);
      return true;
    } catch (error) {
      this.servedForClient.refuse(request.id, error);
      return false;
    }
  }

  /**
   * Notes what the client can do and, unless told not to, declares client-side tasks to the upstream on
   * behalf of a client that lacks them.
   */
  private initialize(request: Request, raw: Buffer | undefined): void {
    const capabilities = isObject(request.params?.capabilities) ? request.params.capabilities : {};
    this.clientCapabilities = capabilities;
    this.early.initializeSent(request.id);
    const declared = this.options.config.clientTasks
      ? this.clientTasks.declareFor(capabilities)
      : capabilities;
    const onResult = (result: JsonObject): JsonObject => this.rewriteInitialize(result, request.id);
    if (declared === capabilities) return this.forwardRequest(request, raw, onResult);
    this.forwardRequest(
      { ...request, params: { ...request.params, capabilities: declared } },
      undefined,
      onResult,
    );
  }

  /** What the table of docs/design.md says for this call (decide.ts), carried out; `listed`: the profile was updated for it. */
  private toolCall(request: Request, raw: Buffer | undefined, listed = false): void {
    const params = request.params;
    const name = typeof params?.name === 'string' ? params.name : undefined;
    const refusal = toolRefusal(this.contexts.callerOf(request.id).access, name);
    if (refusal !== undefined) return this.refuseByRule(request, refusal.refused, refusal.error);
    // Decided once: as the client asks (2025), or by the server for a caller that can take a task or not.
    const choice = this.contexts.taskChoiceOf(request.id);
    const canTake = choice?.canTakeTask ?? this.clientHasTasks;
    if (!listed && this.profile.needsListing(name, params?.task !== undefined, canTake)) {
      void this.profile
        .learn((method, p) => this.upstreamPeer.call(method, p))
        .then(() => {
          if (this.requests.isOpen(request.id)) this.toolCall(request, raw, true);
        });
      return;
    }
    const policy = name === undefined ? undefined : this.options.policy.forTool(name);
    const plan = decideToolCall({
      taskDecidedBy: choice === undefined ? 'client' : 'server',
      canTakeTask: canTake,
      asksTask: choice === undefined && params?.task !== undefined,
      upstream: this.profile.tool(name),
      policy: policy ?? { taskSupport: 'optional', unwrap: false, promoteAfter: 0 },
    });
    if (choice !== undefined && taskOf(plan) !== undefined) {
      // A task counts against its caller, as a 2025 client's asking for one does (clientRequest).
      if (!this.admitted(request)) return;
      request = { ...request, params: { ...params, task: {} } };
      raw = undefined;
    }
    choice?.decided(plan);
    switch (plan.kind) {
      case 'unwrap':
        return this.unwrapper.start(request, this.options.policy.ttlFor(policy!, undefined));
      case 'forward':
        return this.forwardRequest(request, raw);
      case 'refuse-task':
      case 'refuse-plain':
        return this.servedForClient.refuse(request.id, refusalOf(plan, name));
      case 'augment': {
        if (this.upstreamPeer.refuses) return this.refuseUpstreamGone(request);
        const limits = this.options.limits;
        const caller = this.contexts.callerOf(request.id);
        const quota = caller.quota;
        const asked = request.params;
        return this.servedForClient.answer(request.id, () =>
          limits && quota !== undefined
            ? limits.withinLiveTasks(quota, (limit) => this.augmenter.createTask(asked, limit, caller))
            : this.augmenter.createTask(asked, undefined, caller),
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
    raw: Buffer | undefined,
    serve?: (caller: RequestCaller) => Promise<JsonObject>,
  ): void {
    const caller = this.contexts.callerOf(request.id);
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

  /** A request an authorization rule refuses its caller: audited, and refused as if there were nothing to find. */
  private refuseByRule(request: Request, refused: AccessRefusal, error: ProtocolError): void {
    const { subject } = this.contexts.callerOf(request.id);
    this.options.audit?.accessDenied(refused, {
      ...(subject === undefined ? {} : { subject }),
      session: this.options.id,
    });
    this.servedForClient.refuse(request.id, error);
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
        this.contexts.forget(requestId);
        if (this.servedForClient.cancel(requestId)) return;
        if (this.unwrapper.cancel(requestId)) return;
        const wireId = this.upstreamPeer.withdraw(requestId);
        if (wireId === undefined) return; // already answered, or never ours to forward
        this.correlator.plainCallEnded(wireId);
        if (wireId !== requestId) return this.upstream.send(carriedCancellation(notification, wireId));
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

  private rewriteInitialize(result: JsonObject, id: RequestId): JsonObject {
    this.upstreamPeer.state.initialized = true;
    const caller = this.contexts.callerOf(id);
    return this.profile.rewriteInitialize(result, (ownTasks) =>
      this.augmenter.capabilities(ownTasks, caller),
    );
  }

  /** What the upstream is known to do with the tool: what a 2026-07-28 front decides a call by (decide.ts). */
  upstreamTool(name: string): UpstreamTool {
    return this.profile.tool(name);
  }

  /** A client that declared no tasks capability cannot make task-augmented requests. */
  private get clientHasTasks(): boolean {
    return isObject(this.clientCapabilities.tasks);
  }
}

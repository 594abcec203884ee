/**
 * 2026-07-28 clients in front of a 2025 upstream. The bridge is a 2025 client of a Session: it hands it
 * initialize and each modern request as a legacy one, a value with its caller (Session.take), its
 * `initialized`, cancellations and answers to the server's requests as values too (Session.takeMessage),
 * and takes each answer back as a value; the Session's own requests and notifications come to it as
 * values too (session/value-client.ts), with the request each belongs with. So augment, unwrap, policy,
 * limits and supervision apply to modern traffic exactly as to a 2025 client's. What only the modern era
 * has is done here: per-request `_meta` checked, `server/discover` answered, results given `resultType` and
 * the server's identity, and a server-to-client request turned into an MRTR `input_required` answer whose
 * retry carries the client's answer back to the waiting server. This module carries the calls and routes what comes back; the checks of a request are
 * request-checks.ts and tool-headers.ts, the initialize and discover bridge-handshake.ts, the MRTR rounds
 * input-rounds.ts, the bridge's own requests own-requests.ts, and the tasks extension extension-tasks.ts.
 */
import type { Logger } from 'pino';
import { cancellation, goneError } from '../protocol/correlation.js';
import type { JsonRpcErrorObject } from '../protocol/errors.js';
import { toJsonRpcError } from '../tasks/wire-errors.js';
import type { ReadMessage } from '../protocol/read-message.js';
import type { SmallAnswer } from '../protocol/small-answer.js';
import {
  errorResponse,
  isObject,
  type JsonObject,
  type Notification,
  type Request,
  type Response,
} from '../protocol/messages.js';
import type { LegacyInitializeResult } from '../protocol/modern/discover.js';
import { checkParamHeaders, type HeaderParam } from '../protocol/modern/headers.js';
import type { Implementation, ModernRequestMeta } from '../protocol/modern/meta.js';
import { toModernError } from '../protocol/modern/results.js';
import type { Arrival } from '../transport/channel.js';
import {
  answerPromise,
  type AnswerSink,
  type ModernAnswer,
  type ModernExchange,
} from '../protocol/modern/exchange.js';
import { NO_CALLER } from '../protocol/caller.js';
import type { RequestContext } from '../session/request-contexts.js';
import type { ValueEnd } from '../session/value-client.js';
import type { AuditLog } from '../tasks/audit-log.js';
import type { TaskInputBoard } from '../tasks/store.js';
import type { Limits } from '../security/limits.js';
import type { Outcome } from './extension-task-record.js';
import { ExtensionTasks } from './extension-tasks.js';
import type { ShareLimits } from './caller-shares.js';
import { InputRounds } from './input-rounds.js';
import { Call, CallWaiter, LATER, answerTo, unreadAnswerTo, type CallHost } from './bridge-call.js';
import { atLeast, legacyIdOfToken, legacyParams } from './legacy-form.js';
import { OwnRequests } from './own-requests.js';
import { ToolHeaders } from './tool-headers.js';
import { BridgeHandshake, INITIALIZE_ID, discoverAnswer, initializeRequest } from './bridge-handshake.js';
import { checkRequest } from './request-checks.js';
import { Subscriptions } from './subscriptions.js';
import type { TaskV1 } from '@modelcontextprotocol/ext-tasks/core/v1';

export interface ModernBridgeOptions {
  /**
   * The Session the bridge is the client of, which takes the bridge's requests as values, each with its
   * caller, and answers them so, and its cancellations and answers to the server's requests as values too;
   * its own requests and notifications reach the bridge as values (`listen`), and `end` is the bridge gone.
   */
  session: ValueEnd & {
    take(request: Request, context: RequestContext): void;
    takeMessage(message: Notification | Response): void;
  };
  logger: Logger;
  /** Every version the front serves, modern and legacy (discover, and -32022's `supported`). */
  supportedVersions: readonly string[];
  /** This process among replicas: a requestState is honoured only where its call is parked. */
  replica: string;
  /** How long a call waits for the client's retry with the input its server asked for. */
  inputWaitMs: number;
  /** Calls waiting for input (and the input they keep) at most, and per caller (caller-shares.ts). */
  parkedShares: ShareLimits;
  /** Open subscriptions/listen streams (and their filters' bytes) at most, and per caller. */
  listenShares: ShareLimits;
  clientInfo: Implementation;
  /** Settles once every tool's server is known (an aggregator's servers without prefix); undefined: now. */
  toolsKnown?(): Promise<unknown> | undefined;
  /** Tasks the bridge remembers (creator, pending input, outcome) at most, and per caller. */
  taskShares: ShareLimits;
  /** The input board of a task store shared by replicas, so that any of them serves these tasks' input. */
  taskInputs?: TaskInputBoard;
  /** Whether the Session's upstream declares each request's own capabilities upstream (channel.ts). */
  upstreamTakesCallerCapabilities?: () => boolean;
  /** Per-caller limits, counted here for each modern caller rather than once for the bridge. */
  limits?: Limits;
  /** Whom a request that names no caller counts against (the Session's own caller). */
  defaultCaller: string;
  /** Where a caller's lookup of another caller's task is recorded, under the Session's id. */
  audit?: { log: AuditLog; session: string };
}

export class ModernBridge implements CallHost {
  private readonly calls = new Map<number, Call>();
  /** Messages handed to the Session on a microtask and not there yet: what comes next waits its turn. */
  private queued = 0;
  private readonly own = new OwnRequests({
    nextId: () => this.nextId++,
    take: (request, caller) => this.take(request, { caller, answer: this.answered }),
    toSession: (message) => this.toSession(message),
    gone: () => (this.closedReason === undefined ? undefined : this.unavailable()),
  });
  private readonly tasks: ExtensionTasks;
  private readonly subscriptions: Subscriptions;
  private readonly toolHeaders = new ToolHeaders((params) => this.own.ask('tools/list', params).answer);
  private nextId = INITIALIZE_ID + 1;
  private readonly handshake = new BridgeHandshake();
  private readonly rounds: InputRounds;
  private closedReason: string | undefined;

  constructor(private readonly options: ModernBridgeOptions) {
    this.tasks = new ExtensionTasks({
      shares: options.taskShares,
      ...(options.taskInputs === undefined ? {} : { board: options.taskInputs }),
      inputHeld: (taskId) => this.taskChanged(taskId),
      changedElsewhere: (taskId) => {
        if (this.subscriptions.watches(taskId)) this.taskChanged(taskId);
      },
      denied: (taskId, method, subject) => {
        const audit = options.audit;
        audit?.log.denied(taskId, method, {
          session: audit.session,
          ...(subject === undefined ? {} : { subject }),
        });
      },
      session: {
        ask: (method, params, caller) => this.own.ask(method, params, caller),
        drop: (id, reason) => this.own.drop(id, reason),
        answerServer: (response) => this.answerServer(response),
        respond: (request, outcome) => answerTo(request, outcome, undefined, this.handshake),
        refuse: (request, error) => this.refuse(request, error),
        logger: options.logger,
      },
    });
    this.rounds = new InputRounds({
      replica: options.replica,
      inputWaitMs: options.inputWaitMs,
      parkedShares: options.parkedShares,
      board: options.taskInputs,
      logger: options.logger,
      calls: this.calls,
      tasks: this.tasks,
      host: {
        refuse: (request, error) => this.refuse(request, error),
        answerServer: (response) => this.answerServer(response),
        wait: (call, exchange, sink) => this.wait(call, exchange, sink),
        handle: (exchange) => this.handle(exchange),
        cancelUpstream: (call, reason) => this.cancelUpstream(call, reason),
        quotaOf: (call) => this.quotaOfCall(call),
      },
    });
    this.subscriptions = new Subscriptions({
      upstream: (method, uri) => void this.own.ask(method, { uri }),
      taskStatus: (params, principal) => this.tasks.statusChanged(params as unknown as TaskV1, principal),
      createdBy: (taskId, principal) => this.tasks.createdBy(taskId, principal),
      refuse: (request, error) => this.refuse(request, error),
      shares: options.listenShares,
      logger: options.logger,
    });
  }

  /** Starts the 2025 session the modern requests are carried on. */
  start(): void {
    this.options.session.listen({
      message: (read, arrival, bytes) => this.fromSession(read, arrival, bytes),
      closed: (reason) => this.sessionClosed(reason),
    });
    // Made for no caller: the bridge's own, counted for none.
    this.take(initializeRequest(this.options.clientInfo), { caller: NO_CALLER, answer: this.answered });
  }

  /** Serves one modern request; resolves with its answer, or undefined once the client gave it up. */
  handle(exchange: ModernExchange): Promise<ModernAnswer> {
    return answerPromise(this.serveTo, exchange);
  }

  /**
   * Serves one modern request into `sink`: a call's answer goes there from where the Session hands it
   * back, with no promise in between; what is answered here at once goes there in this turn.
   */
  readonly serveTo = (exchange: ModernExchange, sink: AnswerSink): void => {
    let served: Served;
    try {
      served = this.serve(exchange, sink);
    } catch (error) {
      return sink.failed(error);
    }
    if (served === LATER) return;
    if (!(served instanceof Promise)) return sink.answer(served);
    served.then(
      (answer) => {
        if (answer !== LATER) sink.answer(answer);
      },
      (error: unknown) => sink.failed(error),
    );
  };

  /**
   * serveTo, without a turn of the event loop's microtasks where nothing is to be waited for (the upstream
   * initialized, the tool's header parameters read): each await was a promise and a tick per request.
   */
  private serve(exchange: ModernExchange, sink: AnswerSink): Served {
    const { request } = exchange;
    const checked = checkRequest(request, this.options.supportedVersions);
    if (!checked.ok) return this.refuse(request, checked.error);
    const { meta } = checked;
    return this.handshake.whenInitialized<ModernAnswer | typeof LATER>(
      (upstream) => this.serveInitialized(exchange, meta, upstream, sink),
      (error) => this.fail(request, error),
    );
  }

  private serveInitialized(
    exchange: ModernExchange,
    meta: ModernRequestMeta,
    upstream: LegacyInitializeResult,
    sink: AnswerSink,
  ): Served {
    const { request } = exchange;
    if (this.closedReason !== undefined) return this.fail(request, this.unavailable());
    if (request.method === 'server/discover') {
      return discoverAnswer(request, upstream, this.options.supportedVersions);
    }
    if (TASK_REQUESTS.has(request.method)) {
      try {
        this.options.limits?.admitTaskRequest(exchange.caller ?? this.options.defaultCaller);
      } catch (error) {
        return this.refuse(request, toJsonRpcError(error));
      }
    }
    switch (request.method) {
      case 'tasks/get':
        return this.tasks.requests.get(exchange);
      case 'tasks/update':
        return this.tasks.requests.update(exchange);
      case 'tasks/cancel':
        return this.tasks.requests.cancel(exchange);
      case 'subscriptions/listen':
        return this.subscriptions.listen(exchange, upstream.capabilities, this.quotaOf(exchange));
    }
    const paramHeaders = request.method === 'tools/call' ? exchange.paramHeaders : undefined;
    if (paramHeaders === undefined) return this.carry(exchange, meta, sink);
    const name = request.params?.name;
    const known = this.toolHeaders.known(name);
    if (known !== undefined) return this.carryMirrored(exchange, meta, known, paramHeaders, sink);
    return this.toolHeaders
      .of(name)
      .then((params) => this.carryMirrored(exchange, meta, params, paramHeaders, sink));
  }

  /** A tools/call whose `Mcp-Param-*` headers must mirror its arguments, carried if they do. */
  private carryMirrored(
    exchange: ModernExchange,
    meta: ModernRequestMeta,
    params: readonly HeaderParam[],
    given: ReadonlyMap<string, string | readonly string[]>,
    sink: AnswerSink,
  ): Served {
    const mirrored = checkParamHeaders(params, exchange.request.params?.arguments, given);
    if (!mirrored.ok) return this.refuse(exchange.request, toJsonRpcError(mirrored.error));
    return this.carry(exchange, meta, sink);
  }

  /** A request for the Session: a retry goes on with its call, anything else is a new one. */
  private carry(exchange: ModernExchange, meta: ModernRequestMeta, sink: AnswerSink): Served {
    const params = exchange.request.params;
    if (params?.requestState !== undefined || params?.inputResponses !== undefined) {
      return this.rounds.resume(exchange, meta, sink);
    }
    const known = exchange.request.method === 'tools/call' ? this.options.toolsKnown?.() : undefined;
    if (known === undefined) return this.forward(exchange, meta, sink);
    return known.then(() =>
      this.closedReason === undefined
        ? this.forward(exchange, meta, sink)
        : this.fail(exchange.request, this.unavailable()),
    );
  }

  close(): Promise<void> {
    this.sessionClosed('taskgate closed the bridge');
    return this.options.session.end();
  }

  private forward(
    exchange: ModernExchange,
    meta: ModernRequestMeta,
    sink: AnswerSink,
  ): ModernAnswer | typeof LATER {
    const { request } = exchange;
    const legacyId = this.nextId++;
    // Whether a tools/call is a task, the Session decides (the server deciding), and tells the call.
    const call = new Call(legacyId, exchange, meta, this.quotaOf(exchange), this);
    this.calls.set(legacyId, call);
    const params = legacyParams(
      request.params,
      legacyId,
      this.options.upstreamTakesCallerCapabilities?.() === true ? meta.clientCapabilities : undefined,
    );
    // The call is the request's context: who made it, and where its answer goes.
    this.takeCall({ jsonrpc: '2.0', id: legacyId, method: request.method, params }, call);
    this.wait(call, exchange, sink);
    return LATER;
  }

  /** take() for a call: now if nothing handed before it is on its way (no microtask a call), else in its turn. */
  private takeCall(request: Request, call: Call): void {
    if (this.queued === 0) return this.hand(request, call);
    this.queue(() => this.hand(request, call));
  }

  private hand(request: Request, call: Call): void {
    call.handed = true;
    this.options.session.take(request, call);
  }

  /** Whom the request counts against: its caller, else the Session's own. */
  private quotaOf(exchange: ModernExchange): string {
    return exchange.caller ?? this.options.defaultCaller;
  }

  private quotaOfCall(call: Call): string {
    return call.caller.quota ?? this.options.defaultCaller;
  }

  /** Listeners of a task hear its state as the Session has it now (with the input the bridge holds). */
  private taskChanged(taskId: string): void {
    void this.tasks.creatorOf(taskId).then((creator) =>
      this.own.ask('tasks/get', { taskId }, creator).answer.then((got) => {
        if ('result' in got) this.subscriptions.notification('notifications/tasks/status', got.result);
      }),
    );
  }

  /** The exchange becomes the one the call answers; its outcome or next input request goes to its sink. */
  private wait(call: Call, exchange: ModernExchange, sink: AnswerSink): void {
    const given = () => this.clientGaveUp(call);
    exchange.signal.addEventListener('abort', given, ONCE);
    call.waiter = new CallWaiter(exchange, sink, given);
    if (exchange.signal.aborted) return given();
    if (call.outcome !== undefined) return this.finish(call, call.outcome, call.outcomeRaw);
    if (call.unsent) this.rounds.askForInput(call);
  }

  /** `bytes`: the size it came as, when it came as bytes (a server request's counts against its caller's share). */
  private fromSession(read: ReadMessage, arrival: Arrival | undefined, bytes: number | undefined): void {
    if (!read.ok) {
      this.options.logger.warn({ err: read.error }, 'modern bridge: unreadable message from the session');
      return;
    }
    const message = read.message;
    switch (message.kind) {
      case 'response':
        return this.answered(message.msg);
      case 'request':
        return this.rounds.serverRequest(
          message.msg,
          arrival,
          bytes ?? Buffer.byteLength(JSON.stringify(message.msg)),
        );
      case 'notification':
        return this.serverNotification(message.msg.method, message.msg.params, arrival);
    }
  }

  /** The Session's answer to one of the bridge's requests: its initialize, a client's call, or its own. */
  private readonly answered = (response: Response, raw?: Buffer): void => {
    const outcome = 'error' in response ? { error: response.error } : { result: response.result };
    if (response.id === INITIALIZE_ID) return this.initializeAnswered(outcome);
    if (typeof response.id !== 'number' || this.own.answered(response.id, outcome)) return;
    const call = this.calls.get(response.id);
    if (call !== undefined) this.finish(call, outcome, raw);
  };

  /** The Session's answer to a client's call, handed to the call; one given up and adopted is the bridge's own. */
  callAnswered(call: Call, response: Response, raw: Buffer | undefined): void {
    if (this.calls.get(call.legacyId) !== call) return this.answered(response, raw);
    this.finish(call, 'error' in response ? { error: response.error } : { result: response.result }, raw);
  }

  /** A waiting plain call's answer made of the upstream's bytes, unread, when that is all it needs (finish). */
  callAnsweredBytes(call: Call, raw: Buffer, answer: SmallAnswer): boolean {
    const waiter = call.waiter;
    const plain = call.asTask === undefined && this.calls.get(call.legacyId) === call;
    if (waiter === undefined || !plain) return false;
    const made = unreadAnswerTo(waiter.exchange.request, raw, answer, this.handshake);
    if (made === undefined) return false;
    this.forget(call);
    waiter.stopListening();
    waiter.sink.answer(made);
    return true;
  }

  private initializeAnswered(outcome: { result: JsonObject } | { error: JsonRpcErrorObject }): void {
    this.handshake.answered(outcome);
    if ('result' in outcome) {
      this.toSession({ jsonrpc: '2.0', method: 'notifications/initialized' });
    } else {
      this.options.logger.error(`the upstream server refused initialize: ${outcome.error.message}`);
    }
  }

  private serverNotification(
    method: string,
    params: JsonObject | undefined,
    arrival: Arrival | undefined,
  ): void {
    if (method === 'notifications/tools/list_changed') this.toolHeaders.forget();
    if (method === 'notifications/progress') {
      const token = params?.progressToken;
      const call = typeof token === 'string' ? this.calls.get(legacyIdOfToken(token)) : undefined;
      const waiter = call?.waiter;
      if (call === undefined || waiter === undefined || call.clientProgressToken === undefined) return;
      waiter.exchange.notify({
        jsonrpc: '2.0',
        method,
        params: { ...params, progressToken: call.clientProgressToken },
      });
      return;
    }
    if (method === 'notifications/message') {
      const call = typeof arrival?.onStreamOf === 'number' ? this.calls.get(arrival.onStreamOf) : undefined;
      const wanted = call?.logLevel;
      if (call?.waiter === undefined || wanted === undefined || !atLeast(params?.level, wanted)) return;
      call.waiter.exchange.notify({ jsonrpc: '2.0', method, params });
      return;
    }
    if (method === 'notifications/cancelled') {
      // The server withdrew a request it had put to a client: it is not asked again.
      const requestId = params?.requestId;
      this.tasks.serverCancelled(requestId);
      for (const call of this.calls.values()) {
        if (!call.asksInput) continue;
        for (const [key, asked] of call.inputs) {
          if (asked.serverRequestId === requestId) call.inputs.delete(key);
        }
      }
    }
    if (method === 'notifications/tasks/status' && typeof params?.taskId === 'string') {
      this.tasks.announce(params.taskId);
    }
    this.subscriptions.notification(method, params);
  }

  /** `raw`: the bytes the Session's answer was read from, when it came with them. */
  private finish(
    call: Call,
    outcome: { result: JsonObject } | { error: JsonRpcErrorObject },
    raw?: Buffer,
  ): void {
    const waiter = call.waiter;
    if (waiter === undefined) return call.parkOutcome(outcome, raw);
    this.forget(call);
    waiter.stopListening();
    const { exchange } = waiter;
    const created = 'result' in outcome ? outcome.result.task : undefined;
    if (call.asTask !== undefined && isObject(created) && typeof created.taskId === 'string') {
      const answer = this.tasks.created(
        exchange,
        { declared: call.declared, quota: this.quotaOfCall(call) },
        created as unknown as TaskV1,
        call.asTask.promoteAfterMs,
      );
      const { sink } = waiter;
      if (!(answer instanceof Promise)) return sink.answer(answer);
      answer.then(
        (promoted) => sink.answer(promoted),
        (error: unknown) => sink.failed(error),
      );
      return;
    }
    waiter.sink.answer(answerTo(exchange.request, outcome, raw, this.handshake));
  }

  /** The client gave the request up: the upstream is told, and nothing more is sent for it. */
  private clientGaveUp(call: Call): void {
    const waiter = call.waiter;
    if (waiter === undefined) return;
    waiter.stopListening();
    call.waiter = undefined;
    waiter.sink.answer(undefined);
    // Chosen now once the Session took the call (a CreateTaskResult handed back in this turn is read after,
    // as the adopted answer of a task to cancel); not taken yet, right after the take queued before it.
    if (call.handed) this.cancelGivenUp(call);
    else this.queue(() => this.cancelGivenUp(call));
  }

  private cancelGivenUp(call: Call): void {
    this.cancelUpstream(call, 'the 2026-07-28 client cancelled the request');
  }

  /** A call sent as a task, given up before its client saw its CreateTaskResult: the task nobody will see is cancelled. */
  private cancelTaskOnceCreated(call: Call): void {
    this.forget(call);
    const cancelCreated = (outcome: Outcome): void => {
      const created = 'result' in outcome ? outcome.result.task : undefined;
      if (isObject(created) && typeof created.taskId === 'string') {
        this.own.ask('tasks/cancel', { taskId: created.taskId }, call.caller);
      }
    };
    // Its answer came while it waited for its client's input (a retry given up as it arrived): no other comes.
    if (call.outcome !== undefined) return cancelCreated(call.outcome);
    this.own.adopt(call.legacyId, cancelCreated);
  }

  private cancelUpstream(call: Call, reason: string): void {
    const open = this.calls.has(call.legacyId);
    if (call.asksInput) {
      for (const asked of call.inputs.values()) {
        this.answerServer(errorResponse(asked.serverRequestId, goneError('client', reason)));
      }
    }
    // A task call's is its task, whenever it is created (given up, or parked with no retry in time).
    if (call.asTask !== undefined) return this.cancelTaskOnceCreated(call);
    this.forget(call);
    if (!open || call.outcome !== undefined) return;
    this.toSession(cancellation(call.legacyId, reason));
  }

  private forget(call: Call): void {
    if (call.asksInput) call.inputs.clear();
    call.waiter = undefined;
    this.rounds.unpark(call);
    this.calls.delete(call.legacyId);
  }

  /**
   * A request for the Session, handed as a value with its caller; its answer comes back as one (`answered`).
   * Handed on a microtask, as the channel delivers, so that it keeps its place after what the bridge sent
   * there before it (its answer to the server's question goes before the tasks/get that reads the task).
   */
  private take(request: Request, context: RequestContext): void {
    this.queue(() => this.options.session.take(request, context));
  }

  /**
   * A cancellation, the end of the handshake, or an answer to the server's request, handed to the Session
   * as a value on a microtask, as take() hands requests, so that each keeps its place among them.
   */
  private toSession(message: object): void {
    this.queue(() => this.options.session.takeMessage(message as Notification | Response));
  }

  /** `hand` on a microtask, in order with what was handed before it, unless the Session is gone by then. */
  private queue(hand: () => void): void {
    this.queued++;
    queueMicrotask(() => {
      this.queued--;
      if (this.closedReason === undefined) hand();
    });
  }

  private answerServer(response: object): void {
    this.toSession(response);
  }

  private sessionClosed(reason: string): void {
    if (this.closedReason !== undefined) return;
    this.closedReason = reason;
    this.handshake.answered({ error: this.unavailable() });
    this.rounds.close();
    this.own.close(() => this.unavailable());
    this.tasks.close();
    this.subscriptions.close();
    for (const call of [...this.calls.values()]) {
      const waiter = call.waiter;
      this.forget(call);
      waiter?.stopListening();
      waiter?.sink.answer({
        response: errorResponse(waiter.exchange.request.id, toModernError(call.method, this.unavailable())),
      });
    }
  }

  private unavailable(): JsonRpcErrorObject {
    return goneError('upstream', this.closedReason ?? 'it is not connected');
  }

  /** An error the upstream side caused (it is away, or refused initialize). */
  private fail(request: Request, error: JsonRpcErrorObject): ModernAnswer {
    return { response: errorResponse(request.id, toModernError(request.method, error)) };
  }

  /** taskgate refuses the request itself, for what the request is. */
  private refuse(request: Request, error: JsonRpcErrorObject): ModernAnswer {
    return { response: errorResponse(request.id, toModernError(request.method, error)), refused: true };
  }
}

/** What serving a request gives: its answer now or later, or LATER when the call's end answers its sink. */
type Served = ModernAnswer | Promise<ModernAnswer | typeof LATER> | typeof LATER;

const ONCE = { once: true };
/** The extension's tasks/* requests: within the caller's limits.taskRequestRate, as 2025 ones are. */
const TASK_REQUESTS = new Set(['tasks/get', 'tasks/update', 'tasks/cancel']);

/**
 * 2026-07-28 clients in front of a 2025 upstream. The bridge is a 2025 client of a Session (over a memory
 * channel pair): it initializes once, then carries each modern request as a legacy one, so augment, unwrap,
 * policy, limits and supervision apply to modern traffic exactly as to a 2025 client's. What only the
 * modern era has is done here: per-request `_meta` checked, `server/discover` answered, results given
 * `resultType` and the server's identity, and a server-to-client request turned into an MRTR
 * `input_required` answer whose retry carries the client's answer back to the waiting server.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { ErrorCode, type JsonRpcErrorObject } from '../protocol/errors.js';
import { toJsonRpcError } from '../tasks/wire-errors.js';
import { serialize } from '../protocol/exact-ids.js';
import { readHanded } from '../protocol/read-message.js';
import {
  errorResponse,
  isObject,
  successResponse,
  type JsonObject,
  type Request,
  type RequestId,
} from '../protocol/messages.js';
import {
  checkCapabilities,
  inputCapabilitiesOf,
  requiredForInputRequest,
  requiredForRequest,
  TASKS_EXTENSION,
} from '../protocol/modern/capabilities.js';
import { MissingCapabilityError, type ModernRequestError } from '../protocol/modern/errors.js';
import { buildDiscoverResult, type LegacyInitializeResult } from '../protocol/modern/discover.js';
import { checkParamHeaders, headerParamsOf, type HeaderParam } from '../protocol/modern/headers.js';
import {
  readRequestMeta,
  type ClientCapabilities,
  type Implementation,
  type LogLevel,
  type ModernRequestMeta,
} from '../protocol/modern/meta.js';
import {
  createRequestStateSealer,
  replicaNamedBy,
  requestDigest,
  type RequestStateSealer,
} from '../protocol/modern/request-state.js';
import { CONSERVATIVE_CACHE, toModernError, toModernResult } from '../protocol/modern/results.js';
import type { Arrival, Channel } from '../transport/channel.js';
import { callerOfExchange, type ModernAnswer, type ModernExchange } from '../protocol/modern/exchange.js';
import { NO_CALLER, type RequestCaller } from '../protocol/caller.js';
import { decideModernToolCall, type ModernToolCallFacts } from '../session/decide.js';
import type { AuditLog } from '../tasks/audit-log.js';
import type { RelayedRequest, TaskInputBoard } from '../tasks/store.js';
import type { Limits } from '../security/limits.js';
import type { Outcome } from './extension-task-record.js';
import { ExtensionTasks } from './extension-tasks.js';
import { AS_THE_CLIENT_REFUSES, attribute } from './attribution.js';
import type { ShareLimits } from './caller-shares.js';
import { exchangeOf, relayedOf } from './relayed.js';
import { ParkedCalls } from './parked-calls.js';
import {
  BRIDGE_CAPABILITIES,
  LEGACY_VERSION,
  MAY_ASK_FOR_INPUT,
  NOT_MODERN,
  asInitializeResult,
  atLeast,
  legacyIdOfToken,
  legacyParams,
  progressTokenOf,
} from './legacy-form.js';
import { Settling } from './settling.js';
import { Subscriptions } from './subscriptions.js';
import type { TaskV1 } from '@modelcontextprotocol/ext-tasks/core/v1';

/** taskgate serves the tasks extension in front of any upstream (discover advertises it). */
const TASKGATE_EXTENSIONS = { [TASKS_EXTENSION]: {} };

const INITIALIZE_ID = 0;

export interface ModernBridgeOptions {
  /** The client end of a channel whose other end a Session serves. */
  legacyClient: Channel;
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
  /** How a tools/call of this tool may run, for a request with or without the tasks extension (the Session knows). */
  toolTasks(name: string, extension: boolean): ModernToolCallFacts;
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

/** A pending input request: what the server asked, and its id on the Session's side. */
interface AskedInput {
  serverRequestId: RequestId;
  method: string;
  params: JsonObject | undefined;
  /** The size of the server's request, counted against the caller's share while the call waits. */
  bytes: number;
}

interface Waiter {
  exchange: ModernExchange;
  resolve(answer: ModernAnswer): void;
  stopListening(): void;
}

/** One modern request carried as a 2025 request, across as many MRTR rounds as its server needs. */
interface Call {
  legacyId: number;
  method: string;
  /** The digest its requestState is sealed with, once it asked for input (not the params: they may be large). */
  digest: string | undefined;
  /** Who made it: the task it may become is theirs, its requestState is bound to them, limits count it. */
  caller: RequestCaller;
  /** What the current attempt declared that the server may ask for (inputCapabilitiesOf), and its log level. */
  declared: ClientCapabilities;
  logLevel: LogLevel | undefined;
  /** The client's progress token of the current attempt; the Session sees the bridge's own. */
  clientProgressToken: string | number | undefined;
  /** The modern request now waiting for this call's outcome; none while parked. */
  waiter: Waiter | undefined;
  /** Input the server asked for and the client has not answered yet, by the key the client sees. */
  inputs: Map<string, AskedInput>;
  /** Input asked since the last answer to the client: sent together, once. */
  unsent: boolean;
  /** The outcome that came while the call was parked. */
  outcome: { result: JsonObject } | { error: JsonRpcErrorObject } | undefined;
  /** The key its requestState names, while parked. */
  parkedAs: string | undefined;
  /** Sent as a task (the client has the tasks extension): answered at once, or promoted after this long. */
  asTask: { promoteAfterMs: number | undefined } | undefined;
}

export class ModernBridge {
  private readonly calls = new Map<number, Call>();
  /** The bridge's own requests to the Session (the tasks extension's), by id. */
  private readonly own = new Map<number, { settle(outcome: Outcome): void; caller: RequestCaller }>();
  private readonly tasks: ExtensionTasks;
  private readonly subscriptions: Subscriptions;
  /** Each tool's `x-mcp-header` parameters, being read or read (its value once it is). */
  private toolHeaders: Settling<Map<string, HeaderParam[]>> | undefined;
  private readonly stopServingRetries: () => void;
  private nextId = INITIALIZE_ID + 1;
  /** Input keys are never reused, so an answer can never reach a request it was not meant for. */
  private nextInputKey = 1;
  private readonly initialized: Promise<LegacyInitializeResult>;
  /** What `initialized` resolved with, once it has: read without waiting. */
  private initializedAs: LegacyInitializeResult | undefined;
  private settleInitialize!: (outcome: { result: JsonObject } | { error: JsonRpcErrorObject }) => void;
  private readonly parked: ParkedCalls<Call>;
  private readonly sealer: RequestStateSealer;
  private closedReason: string | undefined;
  /** The upstream's identity, put in every result's `_meta` (one object for all results). */
  private resultOptions: { serverInfo?: Implementation } = {};

  constructor(private readonly options: ModernBridgeOptions) {
    this.initialized = new Promise<LegacyInitializeResult>((resolve, reject) => {
      this.settleInitialize = (outcome) => {
        if ('error' in outcome) return reject(new InitializeFailed(outcome.error));
        this.initializedAs ??= asInitializeResult(outcome.result);
        resolve(this.initializedAs);
      };
    });
    this.initialized.catch(() => undefined);
    this.parked = new ParkedCalls(options.inputWaitMs, options.parkedShares, (call, why) =>
      this.abandon(call, why),
    );
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
        ask: (method, params, caller) => this.ask(method, params, caller),
        drop: (id, reason) => this.drop(id, reason),
        answerServer: (response) => this.answerServer(response),
        respond: (request, outcome) => ({ response: this.responseTo(request, outcome) }),
        refuse: (request, error) => this.refuse(request, error),
        logger: options.logger,
      },
    });
    this.stopServingRetries =
      options.taskInputs?.onRelayed((relayed) => this.serveRelayedRetry(relayed)) ?? (() => undefined);
    this.subscriptions = new Subscriptions({
      upstream: (method, uri) => void this.ask(method, { uri }),
      taskStatus: (params, principal) => this.tasks.statusChanged(params as unknown as TaskV1, principal),
      createdBy: (taskId, principal) => this.tasks.createdBy(taskId, principal),
      refuse: (request, error) => this.refuse(request, error),
      shares: options.listenShares,
      logger: options.logger,
    });
    this.sealer = createRequestStateSealer({
      secret: randomBytes(32),
      now: Date.now,
      ttlMs: options.inputWaitMs,
    });
  }

  /** Starts the 2025 session the modern requests are carried on. */
  start(): void {
    this.options.legacyClient.start({
      message: (raw, arrival, parsed) => this.fromSession(raw, arrival, parsed),
      malformed: () => undefined,
      closed: ({ reason }) => this.sessionClosed(reason),
    });
    this.toSession({
      jsonrpc: '2.0',
      id: INITIALIZE_ID,
      method: 'initialize',
      params: {
        protocolVersion: LEGACY_VERSION,
        capabilities: BRIDGE_CAPABILITIES,
        clientInfo: this.options.clientInfo,
      },
    });
  }

  /** Serves one modern request; resolves with its answer, or undefined once the client gave it up. */
  handle(exchange: ModernExchange): Promise<ModernAnswer> {
    try {
      return Promise.resolve(this.serve(exchange));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * handle, without a turn of the event loop's microtasks where nothing is to be waited for (the upstream
   * initialized, the tool's header parameters read): each await was a promise and a tick per request.
   */
  private serve(exchange: ModernExchange): ModernAnswer | Promise<ModernAnswer> {
    const { request } = exchange;
    const read = readRequestMeta(request.params, this.options.supportedVersions);
    if (!read.ok) return this.refuse(request, toJsonRpcError(read.error));
    const meta = read.value;
    const needed = checkCapabilities(
      requiredForRequest(request.method, request.params),
      meta.clientCapabilities,
    );
    if (!needed.ok) return this.refuse(request, toJsonRpcError(needed.error));
    const removed = NOT_MODERN[request.method];
    if (removed !== undefined)
      return this.refuse(request, { code: ErrorCode.MethodNotFound, message: removed });

    const upstream = this.initializedAs;
    if (upstream === undefined) {
      return this.initialized.then(
        (initialized) => this.serveInitialized(exchange, meta, initialized),
        (error: unknown) =>
          this.fail(request, error instanceof InitializeFailed ? error.error : toJsonRpcError(error)),
      );
    }
    return this.serveInitialized(exchange, meta, upstream);
  }

  private serveInitialized(
    exchange: ModernExchange,
    meta: ModernRequestMeta,
    upstream: LegacyInitializeResult,
  ): ModernAnswer | Promise<ModernAnswer> {
    const { request } = exchange;
    if (this.closedReason !== undefined) return this.fail(request, this.unavailable());
    if (request.method === 'server/discover') {
      const discovered = buildDiscoverResult(upstream, {
        supportedVersions: this.options.supportedVersions,
        cache: CONSERVATIVE_CACHE,
        extensions: TASKGATE_EXTENSIONS,
      });
      return { response: successResponse(request.id, discovered) };
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
    if (paramHeaders === undefined) return this.carry(exchange, meta);
    const name = request.params?.name;
    const known = this.toolHeaders?.value;
    if (known !== undefined) return this.carryMirrored(exchange, meta, paramsIn(known, name), paramHeaders);
    return this.headerParamsOf(name).then((params) =>
      this.carryMirrored(exchange, meta, params, paramHeaders),
    );
  }

  /** A tools/call whose `Mcp-Param-*` headers must mirror its arguments, carried if they do. */
  private carryMirrored(
    exchange: ModernExchange,
    meta: ModernRequestMeta,
    params: readonly HeaderParam[],
    given: ReadonlyMap<string, string | readonly string[]>,
  ): ModernAnswer | Promise<ModernAnswer> {
    const mirrored = checkParamHeaders(params, exchange.request.params?.arguments, given);
    if (!mirrored.ok) return this.refuse(exchange.request, toJsonRpcError(mirrored.error));
    return this.carry(exchange, meta);
  }

  /** A request for the Session: a retry goes on with its call, anything else is a new one. */
  private carry(exchange: ModernExchange, meta: ModernRequestMeta): ModernAnswer | Promise<ModernAnswer> {
    const params = exchange.request.params;
    if (params?.requestState !== undefined || params?.inputResponses !== undefined) {
      return this.resume(exchange, meta);
    }
    return this.forward(exchange, meta);
  }

  /**
   * A retry whose call waits on another replica sharing the store: carried there and answered from there
   * (that replica checks the requestState in full). Messages on its stream (progress) stay there.
   */
  private async relayRetry(exchange: ModernExchange, holder: string): Promise<ModernAnswer> {
    const { request } = exchange;
    const relayed = relayedOf(exchange);
    // Refused there is refused here: the same HTTP status as a retry refused by this replica.
    const answer = await this.options
      .taskInputs!.relay(holder, relayed, RELAYED_RETRY_WITHIN_MS)
      .catch(() => undefined);
    if (answer !== undefined) return answer;
    return this.refuse(request, {
      code: ErrorCode.InvalidParams,
      message:
        'Invalid requestState: the taskgate replica holding its call did not answer; send the original request again without requestState',
    });
  }

  /** A retry another replica carried here because its call waits here. */
  private async serveRelayedRetry(relayed: RelayedRequest): Promise<ModernAnswer> {
    const state = relayed.request.params?.requestState;
    if (typeof state !== 'string' || replicaNamedBy(state) !== this.options.replica) return undefined;
    return this.handle(exchangeOf(relayed, RELAYED_RETRY_WITHIN_MS));
  }

  /**
   * Who made a request the bridge sent the Session: a client's call its caller; one of its own the caller
   * it is made for (the creator of the task it is about), counted against no quota.
   */
  callerOf(legacyId: RequestId): RequestCaller {
    if (typeof legacyId !== 'number') return NO_CALLER;
    return this.calls.get(legacyId)?.caller ?? this.own.get(legacyId)?.caller ?? NO_CALLER;
  }

  close(): Promise<void> {
    this.sessionClosed('taskgate closed the bridge');
    return this.options.legacyClient.close();
  }

  private forward(exchange: ModernExchange, meta: ModernRequestMeta): Promise<ModernAnswer> {
    const { request } = exchange;
    // A tool the caller may not call is the Session's to refuse, as one that does not exist.
    const hidden =
      request.method === 'tools/call' && exchange.access?.mayCall(String(request.params?.name)) === false;
    const plan = hidden ? undefined : this.taskPlan(request, meta);
    if (plan === 'refuse') {
      const missing = toJsonRpcError(new MissingCapabilityError({ extensions: { [TASKS_EXTENSION]: {} } }));
      const message = `Tool "${String(request.params?.name)}" runs only as a task: ${missing.message}`;
      return Promise.resolve(this.refuse(request, { ...missing, message }));
    }
    const asTask = plan;
    const legacyId = this.nextId++;
    const call: Call = {
      legacyId,
      method: request.method,
      digest: undefined,
      caller: { ...callerOfExchange(exchange), quota: this.quotaOf(exchange) },
      declared: inputCapabilitiesOf(meta.clientCapabilities),
      logLevel: meta.logLevel,
      clientProgressToken: progressTokenOf(request.params),
      waiter: undefined,
      inputs: new Map(),
      unsent: false,
      outcome: undefined,
      parkedAs: undefined,
      asTask,
    };
    this.calls.set(legacyId, call);
    const answer = this.wait(call, exchange);
    this.toSession({
      jsonrpc: '2.0',
      id: legacyId,
      method: request.method,
      params: legacyParams(
        request.params,
        legacyId,
        asTask !== undefined,
        this.options.upstreamTakesCallerCapabilities?.() === true ? meta.clientCapabilities : undefined,
      ),
    });
    return answer;
  }

  /** Whether a tools/call goes to the Session as a task (decide.ts), and when it is promoted. */
  private taskPlan(request: Request, meta: ModernRequestMeta): Call['asTask'] | 'refuse' {
    const name = request.params?.name;
    if (request.method !== 'tools/call' || typeof name !== 'string') return undefined;
    const extensions = meta.clientCapabilities.extensions;
    const plan = decideModernToolCall(
      this.options.toolTasks(name, isObject(extensions) && isObject(extensions[TASKS_EXTENSION])),
    );
    switch (plan.kind) {
      case 'plain':
        return undefined;
      case 'refuse':
        return 'refuse';
      case 'task':
        return { promoteAfterMs: undefined };
      case 'promote':
        return { promoteAfterMs: plan.afterMs };
    }
  }

  /** Whom the request counts against: its caller, else the Session's own. */
  private quotaOf(exchange: ModernExchange): string {
    return exchange.caller ?? this.options.defaultCaller;
  }

  private quotaOfCall(call: Call): string {
    return call.caller.quota ?? this.options.defaultCaller;
  }

  /** Gives up one of the bridge's own requests. */
  private drop(id: number, reason: string): void {
    if (!this.own.delete(id) || this.closedReason !== undefined) return;
    this.toSession({
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId: id, reason },
    });
  }

  /** Listeners of a task hear its state as the Session has it now (with the input the bridge holds). */
  private taskChanged(taskId: string): void {
    void this.tasks.creatorOf(taskId).then((creator) =>
      this.ask('tasks/get', { taskId }, creator).answer.then((got) => {
        if ('result' in got) this.subscriptions.notification('notifications/tasks/status', got.result);
      }),
    );
  }

  /** A request of the bridge's own to the Session, for `caller`; answered with the reason once the Session is gone. */
  private ask(
    method: string,
    params: JsonObject,
    caller: RequestCaller = NO_CALLER,
  ): { id: number; answer: Promise<Outcome> } {
    const id = this.nextId++;
    if (this.closedReason !== undefined) {
      return { id, answer: Promise.resolve({ error: this.unavailable() }) };
    }
    const answer = new Promise<Outcome>((settle) =>
      this.own.set(id, { settle, caller: withoutQuota(caller) }),
    );
    this.toSession({ jsonrpc: '2.0', id, method, params });
    return { id, answer };
  }

  /** A retry with inputResponses: the answers go to the server requests they answer, and the call goes on. */
  private resume(exchange: ModernExchange, meta: ModernRequestMeta): Promise<ModernAnswer> | ModernAnswer {
    const { request } = exchange;
    const params = request.params ?? {};
    const { requestState, inputResponses } = params;
    if (typeof requestState !== 'string') {
      return this.refuse(request, {
        code: ErrorCode.InvalidParams,
        message:
          'Invalid params: inputResponses without requestState: send the requestState the input_required result came with',
      });
    }
    if (inputResponses !== undefined && !isObject(inputResponses)) {
      return this.refuse(request, {
        code: ErrorCode.InvalidParams,
        message: 'Invalid params: inputResponses must map the keys of inputRequests to results',
      });
    }
    const holder = replicaNamedBy(requestState);
    if (holder !== undefined && holder !== this.options.replica && this.options.taskInputs !== undefined) {
      return this.relayRetry(exchange, holder);
    }
    const opened = this.sealer.open(requestState, {
      method: request.method,
      digest: requestDigest(request.method, params),
      ...(exchange.principal === undefined ? {} : { principal: exchange.principal }),
    });
    if (!opened.ok) return this.refuse(request, toJsonRpcError(opened.error));
    if (opened.value.replica !== this.options.replica) {
      return this.refuse(request, {
        code: ErrorCode.InvalidParams,
        message:
          'Invalid requestState: it was issued by another taskgate replica, which holds the waiting call; send the retry there, or the original request again without requestState',
      });
    }
    const call = this.parked.take(opened.value.pending);
    if (call === undefined) {
      return this.refuse(request, {
        code: ErrorCode.InvalidParams,
        message:
          'Invalid requestState: it was already used, or its call stopped waiting; send the original request again without requestState and inputResponses',
      });
    }
    call.parkedAs = undefined;
    call.declared = inputCapabilitiesOf(meta.clientCapabilities);
    call.logLevel = meta.logLevel;
    call.clientProgressToken = progressTokenOf(params);
    for (const [key, response] of Object.entries(inputResponses ?? {})) {
      const asked = call.inputs.get(key);
      if (asked === undefined) continue;
      call.inputs.delete(key);
      this.answerServer(
        isObject(response)
          ? successResponse(asked.serverRequestId, response)
          : errorResponse(asked.serverRequestId, {
              code: ErrorCode.InvalidParams,
              message: `The client's answer to ${asked.method} was not a result object`,
            }),
      );
    }
    // What is still unanswered is asked again with the next answer.
    call.unsent = call.inputs.size > 0;
    return this.wait(call, exchange);
  }

  /** The exchange becomes the one the call answers; its outcome or next input request goes to it. */
  private wait(call: Call, exchange: ModernExchange): Promise<ModernAnswer> {
    return new Promise<ModernAnswer>((resolve) => {
      const given = () => this.clientGaveUp(call);
      exchange.signal.addEventListener('abort', given, { once: true });
      call.waiter = {
        exchange,
        resolve,
        stopListening: () => exchange.signal.removeEventListener('abort', given),
      };
      if (exchange.signal.aborted) return given();
      if (call.outcome !== undefined) return this.finish(call, call.outcome);
      if (call.unsent) this.askForInput(call);
    });
  }

  private fromSession(raw: Buffer, arrival: Arrival | undefined, parsed: object | undefined): void {
    const read = readHanded(raw, parsed, 'the session');
    if (!read.ok) {
      this.options.logger.warn({ err: read.error }, 'modern bridge: unreadable message from the session');
      return;
    }
    const message = read.message;
    switch (message.kind) {
      case 'response': {
        const response = message.msg;
        const outcome = 'error' in response ? { error: response.error } : { result: response.result };
        if (response.id === INITIALIZE_ID) return this.initializeAnswered(outcome);
        const own = typeof response.id === 'number' ? this.own.get(response.id) : undefined;
        if (own !== undefined) {
          this.own.delete(response.id as number);
          return own.settle(outcome);
        }
        const call = typeof response.id === 'number' ? this.calls.get(response.id) : undefined;
        if (call !== undefined) this.finish(call, outcome);
        return;
      }
      case 'request':
        return this.serverRequest(message.msg, arrival, raw.byteLength);
      case 'notification':
        return this.serverNotification(message.msg.method, message.msg.params, arrival);
    }
  }

  private initializeAnswered(outcome: { result: JsonObject } | { error: JsonRpcErrorObject }): void {
    this.settleInitialize(outcome);
    if ('result' in outcome) {
      this.resultOptions = { serverInfo: asInitializeResult(outcome.result).serverInfo };
      this.toSession({ jsonrpc: '2.0', method: 'notifications/initialized' });
    } else {
      this.options.logger.error(`the upstream server refused initialize: ${outcome.error.message}`);
    }
  }

  /**
   * A server-to-client request: put to the client whose request it belongs to (attribution.ts), as MRTR
   * input. One that client did not declare it can answer is refused to the server as the client would;
   * the call goes on after a roots/list, and is refused -32021 after an elicitation or sampling it needs.
   */
  private serverRequest(request: Request, arrival: Arrival | undefined, bytes: number): void {
    if (request.method === 'ping') return this.answerServer(successResponse(request.id, {}));
    const required = requiredForInputRequest(request);
    if (required === undefined) {
      return this.answerServer(
        errorResponse(request.id, {
          code: ErrorCode.MethodNotFound,
          message: `${request.method} cannot be put to a 2026-07-28 client`,
        }),
      );
    }
    const owner = attribute(request, arrival, {
      callOnStream: (legacyId) => {
        const call = this.calls.get(legacyId);
        return call !== undefined && MAY_ASK_FOR_INPUT.has(call.method) ? call : undefined;
      },
      taskOf: (asked, on) => this.tasks.taskOf(asked, on),
      // A parked call's server is waiting for the answer it already asked for: it is not the one asking.
      calls: [...this.calls.values()].filter(
        (each) => MAY_ASK_FOR_INPUT.has(each.method) && each.parkedAs === undefined,
      ),
      tasks: this.tasks.running(),
    });
    if ('task' in owner) return this.tasks.hold(owner.task, request, bytes);
    if ('nobody' in owner) {
      return this.answerServer(
        errorResponse(request.id, { code: ErrorCode.ClientUnavailable, message: owner.nobody }),
      );
    }
    const { call } = owner;
    const declared = checkCapabilities(required, call.declared);
    if (!declared.ok) {
      // A server asks for roots on its own (server-everything does after initialize): refused as the
      // client would refuse it, and the call goes on. Elicitation and sampling are asked for the work at hand.
      if (request.method === 'roots/list') {
        return this.answerServer(errorResponse(request.id, AS_THE_CLIENT_REFUSES));
      }
      return this.refuseUndeclared(call, request, declared.error);
    }
    call.inputs.set(`input-${this.nextInputKey++}`, {
      serverRequestId: request.id,
      method: request.method,
      params: request.params,
      bytes,
    });
    if (call.unsent) return;
    call.unsent = true;
    // Requests the server sends together reach the client in one input_required answer.
    setImmediate(() => this.askForInput(call));
  }

  /**
   * The call needs input its request did not declare it can give: the request is refused with -32021
   * naming what is missing (basic/index.mdx "Per-request protocol fields"), and the call is given up.
   */
  private refuseUndeclared(call: Call, request: Request, missing: ModernRequestError): void {
    this.answerServer(errorResponse(request.id, AS_THE_CLIENT_REFUSES));
    const waiter = call.waiter;
    this.cancelUpstream(call, `the client did not declare what ${request.method} needs`);
    if (waiter === undefined) return;
    waiter.stopListening();
    waiter.resolve(this.refuse(waiter.exchange.request, toJsonRpcError(missing)));
  }

  private askForInput(call: Call): void {
    const waiter = call.waiter;
    if (!call.unsent || waiter === undefined || call.inputs.size === 0) return;
    call.unsent = false;
    const inputRequests: JsonObject = {};
    for (const [key, asked] of call.inputs) {
      inputRequests[key] =
        asked.params === undefined
          ? { method: asked.method }
          : { method: asked.method, params: asked.params };
    }
    call.waiter = undefined;
    waiter.stopListening();
    let kept = 0;
    for (const asked of call.inputs.values()) kept += asked.bytes;
    const parked = this.parked.park(call, this.quotaOfCall(call), kept);
    if ('refused' in parked) {
      this.cancelUpstream(call, `the client cannot be asked for input now: ${parked.refused}`);
      waiter.resolve(
        this.refuse(waiter.exchange.request, {
          code: ErrorCode.LimitExceeded,
          message: `Too many calls waiting for input: ${parked.refused}; answer or give up one of them first`,
        }),
      );
      return;
    }
    call.parkedAs = parked.key;
    const requestState = this.sealer.seal({
      pending: call.parkedAs,
      replica: this.options.replica,
      method: call.method,
      digest: (call.digest ??= requestDigest(call.method, waiter.exchange.request.params)),
      ...(call.caller.identity === undefined ? {} : { principal: call.caller.identity }),
    });
    waiter.resolve({
      response: successResponse(waiter.exchange.request.id, {
        resultType: 'input_required',
        inputRequests,
        requestState,
      }),
    });
  }

  /**
   * The `x-mcp-header` parameters of a tool, from the upstream's tools/list (read once, again after a
   * list_changed). A tool it does not list has none: the upstream answers for it.
   */
  private async headerParamsOf(name: unknown): Promise<readonly HeaderParam[]> {
    this.toolHeaders ??= new Settling(this.readToolHeaders());
    return paramsIn(await this.toolHeaders.promise, name);
  }

  /** The tools' header parameters are read again, on the next tools/call that needs them. */
  private forgetToolHeaders(): void {
    this.toolHeaders = undefined;
  }

  private async readToolHeaders(): Promise<Map<string, HeaderParam[]>> {
    const byTool = new Map<string, HeaderParam[]>();
    let cursor: unknown;
    for (let page = 0; page < MAX_TOOL_PAGES; page++) {
      const listed = await this.ask('tools/list', cursor === undefined ? {} : { cursor }).answer;
      if ('error' in listed) {
        // Read again on the next call, rather than checking nothing for as long as this bridge lives.
        this.forgetToolHeaders();
        break;
      }
      const tools = listed.result.tools;
      for (const tool of Array.isArray(tools) ? tools : []) {
        if (!isObject(tool) || typeof tool.name !== 'string') continue;
        const params = headerParamsOf(tool.inputSchema);
        if (params.length > 0) byTool.set(tool.name, params);
      }
      cursor = listed.result.nextCursor;
      if (typeof cursor !== 'string') break;
    }
    return byTool;
  }

  private serverNotification(
    method: string,
    params: JsonObject | undefined,
    arrival: Arrival | undefined,
  ): void {
    if (method === 'notifications/tools/list_changed') this.forgetToolHeaders();
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

  private finish(call: Call, outcome: { result: JsonObject } | { error: JsonRpcErrorObject }): void {
    const waiter = call.waiter;
    if (waiter === undefined) {
      // Parked: the client's retry gets it.
      call.outcome = outcome;
      return;
    }
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
      void Promise.resolve(answer).then(waiter.resolve);
      return;
    }
    waiter.resolve({ response: this.responseTo(exchange.request, outcome) });
  }

  /** The Session's outcome for a modern request, as a 2026-07-28 client gets it. */
  private responseTo(request: Request, outcome: Outcome): object {
    return 'error' in outcome
      ? errorResponse(request.id, toModernError(request.method, outcome.error))
      : successResponse(request.id, toModernResult(request.method, outcome.result, this.resultOptions));
  }

  /** The client gave the request up: the upstream is told, and nothing more is sent for it. */
  private clientGaveUp(call: Call): void {
    const waiter = call.waiter;
    if (waiter === undefined) return;
    waiter.stopListening();
    if (call.asTask !== undefined) this.cancelTaskOnceCreated(call);
    else this.cancelUpstream(call, 'the 2026-07-28 client cancelled the request');
    waiter.resolve(undefined);
  }

  /** A call sent as a task, given up before its CreateTaskResult came: the task nobody will see is cancelled. */
  private cancelTaskOnceCreated(call: Call): void {
    this.forget(call);
    const caller = withoutQuota(call.caller);
    const settle = (outcome: Outcome): void => {
      const created = 'result' in outcome ? outcome.result.task : undefined;
      if (isObject(created) && typeof created.taskId === 'string') {
        this.ask('tasks/cancel', { taskId: created.taskId }, caller);
      }
    };
    this.own.set(call.legacyId, { settle, caller });
  }

  /** A parked call nobody came back for. */
  private abandon(call: Call, why: string): void {
    this.options.logger.info(
      { method: call.method },
      `a call waiting for the client's input was given up: ${why}`,
    );
    call.parkedAs = undefined;
    this.cancelUpstream(call, `the client did not come back with the input: ${why}`);
  }

  private cancelUpstream(call: Call, reason: string): void {
    const open = this.calls.has(call.legacyId);
    for (const asked of call.inputs.values()) {
      this.answerServer(
        errorResponse(asked.serverRequestId, { code: ErrorCode.ClientUnavailable, message: reason }),
      );
    }
    this.forget(call);
    if (!open || call.outcome !== undefined) return;
    this.toSession({
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId: call.legacyId, reason },
    });
  }

  private forget(call: Call): void {
    call.inputs.clear();
    call.waiter = undefined;
    if (call.parkedAs !== undefined) this.parked.take(call.parkedAs);
    this.calls.delete(call.legacyId);
  }

  /**
   * One of the bridge's own messages (its ids are its own small integers, exact in JSON), handed over
   * beside its bytes so that a Session that reads it need not parse what was just serialized (channel.ts).
   */
  private toSession(message: JsonObject): void {
    this.options.legacyClient.sendRaw(JSON.stringify(message), undefined, message);
  }

  private answerServer(response: object): void {
    this.options.legacyClient.sendRaw(serialize(response));
  }

  private sessionClosed(reason: string): void {
    if (this.closedReason !== undefined) return;
    this.closedReason = reason;
    this.settleInitialize({ error: this.unavailable() });
    this.parked.close();
    const own = [...this.own.values()];
    this.own.clear();
    for (const { settle } of own) settle({ error: this.unavailable() });
    this.tasks.close();
    this.stopServingRetries();
    this.subscriptions.close();
    for (const call of [...this.calls.values()]) {
      const waiter = call.waiter;
      this.forget(call);
      waiter?.stopListening();
      waiter?.resolve({
        response: errorResponse(waiter.exchange.request.id, toModernError(call.method, this.unavailable())),
      });
    }
  }

  private unavailable(): JsonRpcErrorObject {
    return {
      code: ErrorCode.UpstreamUnavailable,
      message: `Upstream server unavailable: ${this.closedReason ?? 'it is not connected'}`,
    };
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

class InitializeFailed extends Error {
  constructor(readonly error: JsonRpcErrorObject) {
    super(error.message);
  }
}

/** How long a replica waits for the one holding a call to answer the retry it carried there (the call runs on). */
const RELAYED_RETRY_WITHIN_MS = 10 * 60 * 1000;

/** tools/list pages read at most for the tools' header parameters. */
const MAX_TOOL_PAGES = 100;

/** The extension's tasks/* requests: within the caller's limits.taskRequestRate, as 2025 ones are. */
const TASK_REQUESTS = new Set(['tasks/get', 'tasks/update', 'tasks/cancel']);

const paramsIn = (byTool: Map<string, HeaderParam[]>, name: unknown): readonly HeaderParam[] =>
  (typeof name === 'string' ? byTool.get(name) : undefined) ?? [];

/** The caller a request of the bridge's own is made for: counted already, when it was the client's. */
const withoutQuota = ({ quota: _quota, ...caller }: RequestCaller): RequestCaller => caller;

/**
 * A 2026-07-28 upstream, shown to a Session as the 2025 server it expects. The Session's `initialize` is
 * answered here from the upstream's `server/discover`; every request it sends gets the per-request `_meta`
 * (the version, and the capabilities and client its initialize declared); `ping` and `logging/setLevel`,
 * which 2026-07-28 removed, are answered here (the level rides on later requests as `_meta` logLevel). An
 * `input_required` answer becomes one 2025 request to the client per input request, routed with the
 * request it belongs to; their answers are sent back upstream as the retry (basic/patterns/mrtr.mdx).
 * An upstream that serves the tasks extension is shown as a 2025 server with tasks (upstream-v2-tasks.ts).
 */
import type { Logger } from 'pino';
import { Correlation, cancellation, carriedCancellation, goneError } from '../protocol/correlation.js';
import { ErrorCode } from '../protocol/errors.js';
import { envelopeOf, type Envelope } from '../protocol/envelope.js';
import { digitsOf, serialize } from '../protocol/exact-ids.js';
import { readHanded } from '../protocol/read-message.js';
import { upstreamFrameRefusal } from '../session/bad-frames.js';
import {
  errorResponse,
  isId,
  isObject,
  successResponse,
  type JsonObject,
  type Request,
  type RequestId,
  type Response,
} from '../protocol/messages.js';
import {
  CLIENT_CAPABILITIES_META,
  CLIENT_INFO_META,
  CALLER_CAPABILITIES_META,
  LOG_LEVEL_META,
  PROTOCOL_VERSION_META,
  SERVER_INFO_META,
} from '../protocol/modern/meta.js';
import { legacyAnswerBytes } from '../protocol/modern/legacy-bytes.js';
import { toLegacyResult } from '../protocol/modern/results.js';
import { Pieces } from '../protocol/pieces.js';
import { SCAN_FROM_BYTES, scanJson } from '../protocol/scan.js';
import type { Scanned } from '../protocol/scanned.js';
import { LEGACY_VERSIONS } from '../protocol/versions.js';
import type { TaskOutcome } from '../tasks/state.js';
import {
  deliverPieces,
  type Arrival,
  type Channel,
  type ChannelHandlers,
  type Route,
} from '../transport/channel.js';
import { UpstreamListen } from './upstream-listen.js';
import { TASKS_EXTENSION, V2UpstreamTasks } from './upstream-v2-tasks.js';

/** Rounds of input one request may take before taskgate stops relaying them (a server that never ends). */
const MAX_INPUT_ROUNDS = 16;
/** How long the upstream may take over one of taskgate's own requests (a tasks/get, a tasks/update). */
const OWN_CALL_TIMEOUT_MS = 30_000;

export interface TranslatorOptions {
  /** taskgate announces the status changes it sees of the upstream's v2 tasks (`tasks.statusNotifications`). */
  statusNotifications?: boolean;
}

interface InFlight {
  /** The id the Session gave the request. */
  sessionId: RequestId;
  request: Request;
  route: Route | undefined;
  rounds: number;
  /** The request declares the tasks extension upstream. */
  asTask?: boolean;
  /** Takes the final answer (after any input rounds) instead of the Session. */
  settle?: (answer: TaskOutcome) => void;
  /** `settle` gives a complete result to the Session as it is: only an error is its own. */
  settlesErrors?: boolean;
}

interface InputRound {
  call: InFlight;
  requestState: unknown;
  waiting: Map<string, string>;
  answers: JsonObject;
}

/** What is in flight upstream: a request of the Session's, or one of taskgate's own and what takes its answer. */
type Upstream = { call: InFlight } | { method: string; settle: (answer: TaskOutcome) => void };

export class ModernUpstreamTranslator implements Channel {
  readonly takesCallerCapabilities = true;
  get wireVersion(): string {
    return this.version;
  }
  private handlers: ChannelHandlers | undefined;
  /**
   * Requests sent upstream, by the id they went with: the Session's (under the id it gave them, for its
   * cancellations) and taskgate's own, which wait OWN_CALL_TIMEOUT_MS at most.
   */
  private readonly inFlight = new Correlation<Upstream>({
    renumber: true,
    mint: (n, own) => `taskgate-${own ? 'own-' : ''}${n + 1}`,
    deadline: { expired: (id, entry, afterMs) => this.ownCallExpired(id, entry, afterMs) },
  });
  /** Input requests put to the client, by their id: the round and the key they answer. */
  private readonly asked = new Correlation<{ round: InputRound; key: string }>({
    mint: (n) => `taskgate-input-${n + 1}`,
  });
  private clientCapabilities: JsonObject = {};
  private clientInfo: JsonObject | undefined;
  /**
   * The level the Session set with logging/setLevel. Until it sets one, every level is asked for, from an
   * upstream that logs: a 2025 server sends what it chooses without a setLevel (the SDK's sends all), a
   * 2026-07-28 one sends nothing to a request without a logLevel.
   */
  private logLevel: string | undefined;
  /** The upstream's tasks extension, as 2025 tasks; undefined when its discovery declares none. */
  private readonly tasks: V2UpstreamTasks | undefined;
  /** The listen held open upstream for list changes and the Session's resource subscriptions. */
  private readonly listen: UpstreamListen;

  constructor(
    private readonly inner: Channel,
    private readonly discover: JsonObject,
    private readonly version: string,
    private readonly logger: Logger,
    options: TranslatorOptions = {},
  ) {
    const capabilities = isObject(discover.capabilities) ? discover.capabilities : {};
    if (isObject(capabilities.logging)) this.logLevel = 'debug';
    this.listen = new UpstreamListen(
      { send: (message) => this.inner.send(message), meta: () => this.meta(undefined), logger },
      capabilities,
    );
    const extensions = isObject(capabilities.extensions) ? capabilities.extensions : {};
    if (isObject(extensions[TASKS_EXTENSION])) {
      this.tasks = new V2UpstreamTasks({
        call: (method, params) => this.ownCall(method, params),
        toSession: (message, onStreamOf) => this.toSession(message, onStreamOf),
        now: () => Date.now(),
        logger,
        statusNotifications: options.statusNotifications ?? true,
      });
    }
  }

  start(handlers: ChannelHandlers): void {
    this.handlers = handlers;
    const pieces = (line: Pieces, scanned: Scanned): void => {
      if (!this.handedAsBytes(line, scanned)) this.fromUpstream(line.join(), undefined);
    };
    this.inner.start({
      message: (raw, _arrival, parsed) => this.fromUpstream(raw, parsed),
      // Only while the Session takes pieces (it may be a getter): a joined answer is parsed anyway.
      get pieces() {
        return handlers.pieces === undefined ? undefined : pieces;
      },
      malformed: (error, id) => handlers.malformed(error, id),
      closed: (info) => {
        this.forgetAll(info.reason);
        this.listen.lost();
        handlers.closed(info);
      },
      reopened: () => {
        handlers.reopened?.();
        this.listen.open();
      },
    });
  }

  sendRaw(raw: Buffer | string, route?: Route, parsed?: object): void {
    const read = readHanded(typeof raw === 'string' ? Buffer.from(raw) : raw, parsed, 'the session');
    if (!read.ok) return;
    const message = read.message;
    if (message.kind === 'request') return this.fromSession(message.msg, route);
    if (message.kind === 'response') {
      if (this.tasks?.inputAnswered(message.msg)) return;
      return this.inputAnswered(message.msg);
    }
    const { method, params } = message.msg;
    if (method === 'notifications/cancelled') {
      if (this.tasks?.cancelled(params?.requestId)) return;
      const requestId = params?.requestId;
      const withdrawn = isId(requestId) ? this.inFlight.withdraw(requestId) : undefined;
      if (withdrawn === undefined) return;
      this.inner.send(carriedCancellation(message.msg, withdrawn[0], this.meta(undefined)));
    }
    // notifications/initialized and roots/list_changed have no 2026-07-28 counterpart to send.
  }

  send(message: object, route?: Route): void {
    this.sendRaw(serialize(message), route);
  }

  /**
   * The inner channel does not report its owner's close: what hearing it would have ended (taskgate's own
   * calls, the follows of tasks) ends here.
   */
  async close(): Promise<void> {
    this.listen.stop();
    await this.inner.close();
    this.forgetAll('taskgate closed its connection to the upstream server');
  }

  /** The upstream is gone: nothing in flight will be answered; taskgate's own calls fail with `reason`. */
  private forgetAll(reason: string): void {
    this.asked.drain();
    const error = goneError('upstream', reason);
    for (const entry of this.inFlight.drain()) if ('settle' in entry) entry.settle({ error });
    this.tasks?.closed();
  }

  private fromSession(request: Request, route: Route | undefined): void {
    switch (request.method) {
      case 'initialize':
        return this.answerInitialize(request);
      case 'ping':
        return this.toSession(successResponse(request.id, {}));
      case 'logging/setLevel':
        this.logLevel = typeof request.params?.level === 'string' ? request.params.level : undefined;
        return this.toSession(successResponse(request.id, {}));
      case 'resources/subscribe':
      case 'resources/unsubscribe':
        return this.toSession(this.subscription(request));
    }
    const call: InFlight = { sessionId: request.id, request, route, rounds: 0 };
    if (this.tasks !== undefined && !this.withTasks(this.tasks, call)) return;
    this.sendUpstream(call, request.params);
  }

  /**
   * What the tasks extension changes in a request of the Session: tasks/* are served by it, a
   * task-augmented tools/call declares the extension, a plain one that the server can only run as a task
   * is sent again declaring it. False when the request is answered already.
   */
  private withTasks(tasks: V2UpstreamTasks, call: InFlight): boolean {
    const { request } = call;
    if (tasks.serve(request)) return false;
    if (request.method === 'tools/list') {
      call.settle = (answer) =>
        this.replySession(call, 'error' in answer ? answer : { result: tasks.listTools(answer.result) });
    } else if (request.method === 'tools/call' && request.params?.task !== undefined) {
      // A v2 server must not answer with a task unless the request declares the extension: only these do.
      call.asTask = true;
      // A 2026-07-28 caller that declared the extension itself takes the server's decision as it is: a
      // plain answer stays plain (its bridge gives it resultType "complete"); a 2025 caller asked for a task.
      const passThrough = declaresTasks(callerCapabilitiesOf(request.params));
      call.settle = (answer) =>
        passThrough && !('error' in answer) && answer.result.resultType !== 'task'
          ? this.replySession(call, answer)
          : tasks.created(request.id, request.params, answer);
    } else if (request.method === 'tools/call') {
      call.settlesErrors = true;
      call.settle = (answer) => {
        if (!('error' in answer) || !needsTasks(answer.error)) return this.replySession(call, answer);
        this.sendUpstream(
          { ...call, rounds: 0, asTask: true, settle: (retried) => tasks.unwrapCreated(request.id, retried) },
          request.params,
        );
      };
    }
    return true;
  }

  private sendUpstream(call: InFlight, params: JsonObject | undefined): void {
    const id = this.inFlight.forward(call.sessionId, { call });
    const { task: _task, ...rest } = params ?? {};
    this.inner.send({
      jsonrpc: '2.0',
      id,
      method: call.request.method,
      params: { ...rest, _meta: this.meta(isObject(rest._meta) ? rest._meta : undefined, call.asTask) },
    });
  }

  /** A request of taskgate's own, declaring the tasks extension; answered, timed out, or ended by a close. */
  private ownCall(method: string, params: JsonObject): Promise<TaskOutcome> {
    return new Promise((resolve) => {
      const id = this.inFlight.own({ method, settle: resolve }, OWN_CALL_TIMEOUT_MS);
      this.inner.send({
        jsonrpc: '2.0',
        id,
        method,
        params: { ...params, _meta: this.meta(undefined, true) },
      });
    });
  }

  /** One of taskgate's own requests the upstream did not answer in time: it is told to stop, and it fails. */
  private ownCallExpired(id: RequestId, entry: Upstream, afterMs: number): void {
    if (!('settle' in entry)) return;
    const message = `Upstream server did not answer ${entry.method} within ${afterMs} ms`;
    this.inner.send(cancellation(id, message, this.meta(undefined)));
    entry.settle({ error: { code: ErrorCode.UpstreamUnavailable, message } });
  }

  private meta(own: JsonObject | undefined, asTask = false): JsonObject {
    // A 2026-07-28 caller's request says what it can do itself; the Session's initialize says it for 2025 ones.
    // Copied without the key only when it is there (a rest with a computed key is V8's slow copy).
    const caller = own?.[CALLER_CAPABILITIES_META];
    const kept = caller === undefined ? (own ?? {}) : withoutKey(own!, CALLER_CAPABILITIES_META);
    const declared = isObject(caller) ? caller : this.clientCapabilities;
    const capabilities = asTask
      ? { ...declared, extensions: { ...extensionsOf(declared), [TASKS_EXTENSION]: {} } }
      : declared;
    return {
      ...kept,
      [PROTOCOL_VERSION_META]: this.version,
      [CLIENT_CAPABILITIES_META]: capabilities,
      ...(this.clientInfo === undefined ? {} : { [CLIENT_INFO_META]: this.clientInfo }),
      ...(this.logLevel === undefined ? {} : { [LOG_LEVEL_META]: this.logLevel }),
    };
  }

  /** resources/(un)subscribe: answered here, the URI followed by the listen upstream (2026-07-28 has neither). */
  private subscription(request: Request): Response {
    const uri = request.params?.uri;
    if (typeof uri !== 'string') {
      return errorResponse(request.id, {
        code: ErrorCode.InvalidParams,
        message: `Invalid params: ${request.method} needs a string uri`,
      });
    }
    if (!this.listen.subscribable) {
      return errorResponse(request.id, {
        code: ErrorCode.MethodNotFound,
        message: `${request.method}: the upstream server does not take resource subscriptions`,
      });
    }
    if (request.method === 'resources/subscribe') this.listen.subscribe(uri);
    else this.listen.unsubscribe(uri);
    return successResponse(request.id, {});
  }

  private answerInitialize(request: Request): void {
    const params = request.params ?? {};
    const { tasks: _tasks, ...capabilities } = isObject(params.capabilities) ? params.capabilities : {};
    // A 2025 client that declares the extension in its initialize must not get v2 tasks (SEP-2663
    // "Backward Compatibility"): taskgate declares it per request, for task-augmented calls only.
    const { [TASKS_EXTENSION]: _extension, ...extensions } = extensionsOf(capabilities);
    this.clientCapabilities = isObject(capabilities.extensions)
      ? { ...capabilities, extensions }
      : capabilities;
    this.clientInfo = isObject(params.clientInfo) ? params.clientInfo : undefined;
    const asked = typeof params.protocolVersion === 'string' ? params.protocolVersion : '';
    const meta = isObject(this.discover._meta) ? this.discover._meta : {};
    const discovered = isObject(this.discover.capabilities) ? this.discover.capabilities : {};
    const result: JsonObject = {
      protocolVersion: LEGACY_VERSIONS.includes(asked) ? asked : LEGACY_VERSIONS[0],
      capabilities:
        this.tasks === undefined ? discovered : { ...discovered, tasks: V2UpstreamTasks.capability },
      serverInfo: meta[SERVER_INFO_META] ?? { name: 'unknown', version: '0' },
    };
    if (typeof this.discover.instructions === 'string') result.instructions = this.discover.instructions;
    this.toSession(successResponse(request.id, result));
    // Now that the client's capabilities are known, the list changes are followed for it.
    this.listen.open();
  }

  private fromUpstream(raw: Buffer, parsed: object | undefined): void {
    if (parsed === undefined && raw.length >= SCAN_FROM_BYTES && this.handlers?.pieces !== undefined) {
      const scanned = scanJson(raw);
      if (typeof scanned !== 'string' && this.handedAsBytes(new Pieces([raw], raw.length), scanned)) return;
    }
    const read = readHanded(raw, parsed, 'the upstream server');
    if (!read.ok) {
      this.logger.warn({ err: read.error }, 'modern upstream: unreadable message');
      // An answer it names fails now, as a 2025 server's does, rather than at the call's timeout.
      const { fails } = upstreamFrameRefusal(read.error, read.value, raw);
      const entry = fails === undefined ? undefined : this.inFlight.take(fails.id);
      if (entry === undefined) return;
      if ('settle' in entry) return entry.settle({ error: fails!.error });
      return this.answerSession(entry.call, { error: fails!.error });
    }
    const message = read.message;
    if (message.kind === 'request') {
      // 2026-07-28 servers ask for input by MRTR only.
      this.inner.send(
        errorResponse(message.msg.id, {
          code: ErrorCode.MethodNotFound,
          message: `${message.msg.method}: 2026-07-28 has no server-to-client requests; ask by MRTR`,
        }),
      );
      return;
    }
    if (this.listen.consumed(message.msg)) return;
    if (message.kind === 'notification') {
      if (message.msg.method === 'notifications/tasks' && this.tasks !== undefined) {
        return this.tasks.notified(message.msg.params);
      }
      this.handlers?.message(raw);
      return;
    }
    const response = message.msg;
    const entry = response.id === null ? undefined : this.inFlight.take(response.id);
    if (entry === undefined) return;
    if ('settle' in entry) {
      return entry.settle('error' in response ? { error: response.error } : { result: response.result });
    }
    const { call } = entry;
    if ('error' in response) return this.answerSession(call, { error: response.error });
    const { result } = response;
    if (result.resultType === 'input_required') return this.askClient(call, result);
    this.answerSession(call, { result });
  }

  /**
   * A big message handed on to the Session as the bytes it came in, with its scan (issue 33): a
   * notification fromUpstream would hand on unchanged, or a complete answer (forwardedAsBytes). False
   * (nothing done) for anything else.
   */
  private handedAsBytes(line: Pieces, scanned: Scanned): boolean {
    const envelope = envelopeOf(line, scanned);
    if (envelope?.kind !== 'notification') return this.forwardedAsBytes(envelope, line, scanned);
    // What fromUpstream takes for itself: the tasks extension's notifications, the listen's acknowledgement.
    const method = envelope.method!;
    if ((method === 'notifications/tasks' && this.tasks !== undefined) || this.listen.consumed({ method })) {
      return false;
    }
    deliverPieces(this.handlers!, line, scanned);
    return true;
  }

  /**
   * A big complete answer to a plain request of the Session, handed on as the bytes it came in (issue 33):
   * the Session's id and no `resultType` are all replySession would change in it. False (nothing done)
   * for anything else: errors, input_required, tasks, and requests taskgate handles itself.
   */
  private forwardedAsBytes(envelope: Envelope | undefined, line: Pieces, scanned: Scanned): boolean {
    if (envelope?.kind !== 'response' || envelope.idRepeated) return false;
    const wireId = envelope.id as RequestId;
    const entry = this.inFlight.get(wireId);
    if (entry === undefined || !('call' in entry)) return false;
    if (entry.call.settle !== undefined && entry.call.settlesErrors !== true) return false;
    const { sessionId } = entry.call;
    const legacy = legacyAnswerBytes(
      line,
      scanned,
      Buffer.from(digitsOf(sessionId) ?? JSON.stringify(sessionId)),
    );
    if (legacy === undefined) return false;
    this.inFlight.take(wireId);
    deliverPieces(this.handlers!, legacy.line, legacy.scanned);
    return true;
  }

  /** The final answer to a request of the Session: its own handling, or the Session as it is. */
  private answerSession(call: InFlight, answer: TaskOutcome): void {
    if (call.settle !== undefined) return call.settle(answer);
    this.replySession(call, answer);
  }

  /** The Session gets the answer as a 2025 server would give it: a complete result, or the error. */
  private replySession(call: InFlight, answer: TaskOutcome): void {
    if ('error' in answer) return this.toSession(errorResponse(call.sessionId, answer.error));
    const { resultType } = answer.result;
    if (resultType !== undefined && resultType !== 'complete') {
      // A task to a request that did not declare the extension is invalid (tasks.md "Capability
      // Negotiation"); any other kind of result has no 2025 form.
      return this.toSession(
        errorResponse(call.sessionId, {
          code: ErrorCode.InternalError,
          message: `The upstream answered ${call.request.method} with resultType "${String(resultType)}", which taskgate cannot give a 2025 client`,
        }),
      );
    }
    this.toSession(successResponse(call.sessionId, toLegacyResult(answer.result)));
  }

  private askClient(call: InFlight, result: JsonObject): void {
    const inputRequests = isObject(result.inputRequests) ? result.inputRequests : {};
    const keys = Object.keys(inputRequests);
    if (call.rounds >= MAX_INPUT_ROUNDS) {
      return this.answerSession(call, {
        error: {
          code: ErrorCode.InternalError,
          message: `The upstream asked for input ${MAX_INPUT_ROUNDS} times for one ${call.request.method}: taskgate stopped relaying`,
        },
      });
    }
    call.rounds++;
    const round: InputRound = { call, requestState: result.requestState, waiting: new Map(), answers: {} };
    if (keys.length === 0) return this.retry(round);
    const arrival: Arrival = { onStreamOf: call.sessionId };
    for (const key of keys) {
      const input = inputRequests[key];
      const id = String(this.asked.own({ round, key }));
      round.waiting.set(id, key);
      const ask = isObject(input) ? input : {};
      this.handlers?.message(
        Buffer.from(serialize({ jsonrpc: '2.0', id, method: ask.method, params: ask.params ?? {} })),
        arrival,
      );
    }
  }

  private inputAnswered(response: Response): void {
    const asked = response.id === null ? undefined : this.asked.take(response.id);
    if (asked === undefined) return;
    const { round, key } = asked;
    round.waiting.delete(String(response.id));
    if ('error' in response) {
      // MRTR carries results only: a client that could not answer ends the request.
      for (const other of round.waiting.keys()) this.asked.take(other);
      return this.answerSession(round.call, {
        error: {
          code: ErrorCode.InternalError,
          message: `The client could not answer the upstream's input request: ${response.error.message}`,
        },
      });
    }
    round.answers[key] = response.result;
    if (round.waiting.size === 0) this.retry(round);
  }

  private retry(round: InputRound): void {
    const { call } = round;
    this.sendUpstream(call, {
      ...call.request.params,
      inputResponses: round.answers,
      ...(round.requestState === undefined ? {} : { requestState: round.requestState }),
    });
  }

  private toSession(message: object, onStreamOf?: RequestId): void {
    this.handlers?.message(
      Buffer.from(serialize(message)),
      onStreamOf === undefined ? undefined : { onStreamOf },
    );
  }
}

const extensionsOf = (capabilities: JsonObject): JsonObject =>
  isObject(capabilities.extensions) ? capabilities.extensions : {};

const declaresTasks = (capabilities: JsonObject | undefined): boolean =>
  capabilities !== undefined && isObject(extensionsOf(capabilities)[TASKS_EXTENSION]);

/** What a 2026-07-28 caller declared, as its bridge carries it on the 2025 request (CALLER_CAPABILITIES_META). */
function callerCapabilitiesOf(params: JsonObject | undefined): JsonObject | undefined {
  const meta = isObject(params?._meta) ? params._meta : undefined;
  const caller = meta?.[CALLER_CAPABILITIES_META];
  return isObject(caller) ? caller : undefined;
}

/** A -32021 that names the tasks extension: the server can run the call only as a task. */
function needsTasks(error: { code: number; data?: unknown }): boolean {
  if (error.code !== ErrorCode.MissingRequiredClientCapability || !isObject(error.data)) return false;
  const required = error.data.requiredCapabilities;
  return isObject(required) && isObject(required.extensions) && TASKS_EXTENSION in required.extensions;
}

function withoutKey(object: JsonObject, key: string): JsonObject {
  const { [key]: _dropped, ...rest } = object;
  return rest;
}

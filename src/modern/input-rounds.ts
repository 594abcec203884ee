/**
 * MRTR input rounds of the bridge's calls (bridge.ts): a server-to-client request is attributed to the call
 * or task it is for (protocol/attribution.ts); a call's is put to its 2026-07-28 client as an `input_required`
 * answer, the call parked (parked-calls.ts) under a sealed requestState, and the client's retry with
 * `inputResponses` answers the waiting server and takes the call up again. A retry whose call is parked on
 * another replica sharing the store is carried there.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { ErrorCode, type JsonRpcErrorObject } from '../protocol/errors.js';
import {
  errorResponse,
  isObject,
  successResponse,
  type JsonObject,
  type Request,
} from '../protocol/messages.js';
import {
  checkCapabilities,
  inputCapabilitiesOf,
  requiredForInputRequest,
} from '../protocol/modern/capabilities.js';
import type { ModernRequestError } from '../protocol/modern/errors.js';
import type { AnswerSink, ModernAnswer, ModernExchange } from '../protocol/modern/exchange.js';
import type { ClientCapabilities, ModernRequestMeta } from '../protocol/modern/meta.js';
import {
  createRequestStateSealer,
  replicaNamedBy,
  requestDigest,
  type RequestStateSealer,
} from '../protocol/modern/request-state.js';
import type { RelayedAnswer, RelayedRequest, TaskInputBoard } from '../tasks/store.js';
import type { Arrival } from '../transport/channel.js';
import { AS_THE_CLIENT_REFUSES, attribute, type Evidence } from '../protocol/attribution.js';
import { toJsonRpcError } from '../tasks/wire-errors.js';
import type { ExtensionTasks } from './extension-tasks.js';
import type { ExtensionTask } from './extension-task-record.js';
import { LATER, type Call } from './bridge-call.js';
import type { ShareLimits } from './caller-shares.js';
import { ParkedCalls } from './parked-calls.js';
import { MAY_ASK_FOR_INPUT, progressTokenOf } from './legacy-form.js';
import { exchangeOf, relayedAnswer, relayedOf } from './relayed.js';

/** Whose a server request is: a call (asked as MRTR input) or a task (held as its input). */
type InputOwner = { call: Call; task?: undefined } | { task: ExtensionTask; call?: undefined };

/** What the bridge lends the rounds: its answers, and its calls' lifecycle. */
export interface RoundsHost {
  /** taskgate refuses the request itself. */
  refuse(request: Request, error: JsonRpcErrorObject): ModernAnswer;
  answerServer(response: object): void;
  /** The exchange becomes the one the call answers, into `sink`. */
  wait(call: Call, exchange: ModernExchange, sink: AnswerSink): void;
  /** Serves a modern request from the start (a retry another replica carried here). */
  handle(exchange: ModernExchange): Promise<ModernAnswer>;
  /** The call is given up: the server's requests are refused, the Session is told. */
  cancelUpstream(call: Call, reason: string): void;
  /** Whom the call counts against. */
  quotaOf(call: Call): string;
}

export interface InputRoundsOptions {
  /** This process among replicas: a requestState is honoured only where its call is parked. */
  replica: string;
  /** How long a call waits for the client's retry with the input its server asked for. */
  inputWaitMs: number;
  /** Calls waiting for input (and the input they keep) at most, and per caller (caller-shares.ts). */
  parkedShares: ShareLimits;
  /** The input board of a task store shared by replicas: retries are carried to the replica parking their call. */
  board?: TaskInputBoard | undefined;
  logger: Logger;
  /** The bridge's calls, by the id they went to the Session with. */
  calls: ReadonlyMap<number, Call>;
  /** The tasks of the extension: a server request may be input of one of them. */
  tasks: Pick<ExtensionTasks, 'taskOf' | 'running' | 'hold'>;
  host: RoundsHost;
}

export class InputRounds {
  private readonly parked: ParkedCalls<Call>;
  private readonly sealer: RequestStateSealer;
  private readonly stopServingRetries: () => void;
  /** Input keys are never reused, so an answer can never reach a request it was not meant for. */
  private nextInputKey = 1;

  constructor(private readonly options: InputRoundsOptions) {
    this.parked = new ParkedCalls(options.inputWaitMs, options.parkedShares, (call, why) =>
      this.abandon(call, why),
    );
    this.stopServingRetries =
      options.board?.onRelayed((relayed) => this.serveRelayedRetry(relayed)) ?? (() => undefined);
    this.sealer = createRequestStateSealer({
      secret: randomBytes(32),
      now: Date.now,
      ttlMs: options.inputWaitMs,
    });
  }

  /**
   * A server-to-client request: put to the client whose request it belongs to (protocol/attribution.ts), as MRTR
   * input. One that client did not declare it can answer is refused to the server as the client would;
   * the call goes on after a roots/list, and is refused -32021 after an elicitation or sampling it needs.
   */
  serverRequest(request: Request, arrival: Arrival | undefined, bytes: number): void {
    if (request.method === 'ping') return this.options.host.answerServer(successResponse(request.id, {}));
    const required = requiredForInputRequest(request);
    if (required === undefined) {
      return this.options.host.answerServer(
        errorResponse(request.id, {
          code: ErrorCode.MethodNotFound,
          message: `${request.method} cannot be put to a 2026-07-28 client`,
        }),
      );
    }
    const owner = attribute(request.method, this.evidence(request, arrival));
    if ('nobody' in owner) {
      return this.options.host.answerServer(
        errorResponse(request.id, { code: ErrorCode.ClientUnavailable, message: owner.nobody }),
      );
    }
    const { call, task } = owner.to;
    if (call === undefined) return this.options.tasks.hold(task, request, bytes);
    this.ask(call, request, required, bytes);
  }

  /**
   * What says whose a server request is: the task its tag or stream names, the call whose stream it came
   * on, else the calls that may ask (a parked call's server waits for the answer it already asked for) and
   * the running tasks, all of them the one caller's this bridge serves.
   */
  private evidence(request: Request, arrival: Arrival | undefined): Evidence<InputOwner> {
    const task = this.options.tasks.taskOf(request, arrival);
    if (task !== undefined) return { task: { task } };
    const streamOf = arrival?.onStreamOf;
    if (typeof streamOf === 'number') {
      const call = this.options.calls.get(streamOf);
      return { stream: call !== undefined && MAY_ASK_FOR_INPUT.has(call.method) ? { call } : null };
    }
    const calls = [...this.options.calls.values()].filter(
      (each) => MAY_ASK_FOR_INPUT.has(each.method) && each.parkedAs === undefined,
    );
    const tasks = this.options.tasks.running();
    // A bridge serves one caller (one per caller on the HTTP front, caller-bridges.ts; one stdio connection).
    return {
      oneCallers: [...calls.map((call) => ({ call })), ...tasks.map((task) => ({ task }))],
      counted: `${calls.length} call(s), ${tasks.length} task(s)`,
    };
  }

  /** A server request for input `required`, attributed to the call: put to its client with the next answer. */
  private ask(call: Call, request: Request, required: ClientCapabilities, bytes: number): void {
    const declared = checkCapabilities(required, call.declared);
    if (!declared.ok) {
      // A server asks for roots on its own (server-everything does after initialize): refused as the
      // client would refuse it, and the call goes on. Elicitation and sampling are asked for the work at hand.
      if (request.method === 'roots/list') {
        return this.options.host.answerServer(errorResponse(request.id, AS_THE_CLIENT_REFUSES));
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
   * A retry with inputResponses: the answers go to the server requests they answer, and the call goes on,
   * its answer into `sink` (LATER returned); else the answer.
   */
  resume(
    exchange: ModernExchange,
    meta: ModernRequestMeta,
    sink: AnswerSink,
  ): Promise<ModernAnswer> | ModernAnswer | typeof LATER {
    const { request } = exchange;
    const params = request.params ?? {};
    const { requestState, inputResponses } = params;
    if (typeof requestState !== 'string') {
      return this.options.host.refuse(request, {
        code: ErrorCode.InvalidParams,
        message:
          'Invalid params: inputResponses without requestState: send the requestState the input_required result came with',
      });
    }
    if (inputResponses !== undefined && !isObject(inputResponses)) {
      return this.options.host.refuse(request, {
        code: ErrorCode.InvalidParams,
        message: 'Invalid params: inputResponses must map the keys of inputRequests to results',
      });
    }
    const holder = replicaNamedBy(requestState);
    if (holder !== undefined && holder !== this.options.replica && this.options.board !== undefined) {
      return this.relayRetry(exchange, holder);
    }
    const opened = this.sealer.open(requestState, {
      method: request.method,
      digest: requestDigest(request.method, params),
      ...(exchange.principal === undefined ? {} : { principal: exchange.principal }),
    });
    if (!opened.ok) return this.options.host.refuse(request, toJsonRpcError(opened.error));
    if (opened.value.replica !== this.options.replica) {
      return this.options.host.refuse(request, {
        code: ErrorCode.InvalidParams,
        message:
          'Invalid requestState: it was issued by another taskgate replica, which holds the waiting call; send the retry there, or the original request again without requestState',
      });
    }
    const call = this.parked.take(opened.value.pending);
    if (call === undefined) {
      return this.options.host.refuse(request, {
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
      this.options.host.answerServer(
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
    this.options.host.wait(call, exchange, sink);
    return LATER;
  }

  /**
   * The call needs input its request did not declare it can give: the request is refused with -32021
   * naming what is missing (basic/index.mdx "Per-request protocol fields"), and the call is given up.
   */
  private refuseUndeclared(call: Call, request: Request, missing: ModernRequestError): void {
    this.options.host.answerServer(errorResponse(request.id, AS_THE_CLIENT_REFUSES));
    const waiter = call.waiter;
    this.options.host.cancelUpstream(call, `the client did not declare what ${request.method} needs`);
    if (waiter === undefined) return;
    waiter.stopListening();
    waiter.sink.answer(this.options.host.refuse(waiter.exchange.request, toJsonRpcError(missing)));
  }

  askForInput(call: Call): void {
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
    const parked = this.parked.park(call, this.options.host.quotaOf(call), kept);
    if ('refused' in parked) {
      this.options.host.cancelUpstream(call, `the client cannot be asked for input now: ${parked.refused}`);
      waiter.sink.answer(
        this.options.host.refuse(waiter.exchange.request, {
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
    waiter.sink.answer({
      response: successResponse(waiter.exchange.request.id, {
        resultType: 'input_required',
        inputRequests,
        requestState,
      }),
    });
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
      .board!.relay(holder, relayed, RELAYED_RETRY_WITHIN_MS)
      .catch(() => undefined);
    if (answer !== undefined) return answer;
    return this.options.host.refuse(request, {
      code: ErrorCode.InvalidParams,
      message:
        'Invalid requestState: the taskgate replica holding its call did not answer; send the original request again without requestState',
    });
  }

  /** A retry another replica carried here because its call waits here. */
  private async serveRelayedRetry(relayed: RelayedRequest): Promise<RelayedAnswer | undefined> {
    const state = relayed.request.params?.requestState;
    if (typeof state !== 'string' || replicaNamedBy(state) !== this.options.replica) return undefined;
    return relayedAnswer(await this.options.host.handle(exchangeOf(relayed, RELAYED_RETRY_WITHIN_MS)));
  }

  /** A parked call nobody came back for. */
  private abandon(call: Call, why: string): void {
    this.options.logger.info(
      { method: call.method },
      `a call waiting for the client's input was given up: ${why}`,
    );
    call.parkedAs = undefined;
    this.options.host.cancelUpstream(call, `the client did not come back with the input: ${why}`);
  }

  /** The call no longer waits for its client (answered, failed or given up). */
  unpark(call: Call): void {
    if (call.parkedAs !== undefined) this.parked.take(call.parkedAs);
  }

  /** The Session is gone: no call waits for input any more, and no retry is carried here. */
  close(): void {
    this.parked.close();
    this.stopServingRetries();
  }
}

/** How long a replica waits for the one holding a call to answer the retry it carried there (the call runs on). */
const RELAYED_RETRY_WITHIN_MS = 10 * 60 * 1000;

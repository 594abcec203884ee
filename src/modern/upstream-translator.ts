/**
 * A 2026-07-28 upstream, shown to a Session as the 2025 server it expects. The Session's `initialize` is
 * answered here from the upstream's `server/discover`; every request it sends gets the per-request `_meta`
 * (the version, and the capabilities and client its initialize declared); `ping` and `logging/setLevel`,
 * which 2026-07-28 removed, are answered here (the level rides on later requests as `_meta` logLevel). An
 * `input_required` answer becomes one 2025 request to the client per input request, routed with the
 * request it belongs to; their answers are sent back upstream as the retry (basic/patterns/mrtr.mdx).
 */
import type { Logger } from 'pino';
import { ErrorCode } from '../protocol/errors.js';
import { serialize, withExactId } from '../protocol/exact-ids.js';
import { parseFrame } from '../protocol/frames.js';
import {
  classify,
  errorResponse,
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
  LOG_LEVEL_META,
  PROTOCOL_VERSION_META,
  SERVER_INFO_META,
} from '../protocol/modern/meta.js';
import { toLegacyResult } from '../protocol/modern/results.js';
import { LEGACY_VERSIONS } from '../protocol/versions.js';
import type { Arrival, Channel, ChannelHandlers, Route } from '../transport/channel.js';

/** Rounds of input one request may take before taskgate stops relaying them (a server that never ends). */
const MAX_INPUT_ROUNDS = 16;

interface InFlight {
  /** The id the Session gave the request. */
  sessionId: RequestId;
  request: Request;
  route: Route | undefined;
  rounds: number;
}

interface InputRound {
  call: InFlight;
  requestState: unknown;
  waiting: Map<string, string>;
  answers: JsonObject;
}

export class ModernUpstreamTranslator implements Channel {
  private handlers: ChannelHandlers | undefined;
  /** Requests sent upstream, by the id they went with. */
  private readonly inFlight = new Map<string, InFlight>();
  /** Input requests put to the client, by their id: the round and the key they answer. */
  private readonly asked = new Map<string, { round: InputRound; key: string }>();
  private nextId = 1;
  private clientCapabilities: JsonObject = {};
  private clientInfo: JsonObject | undefined;
  private logLevel: string | undefined;

  constructor(
    private readonly inner: Channel,
    private readonly discover: JsonObject,
    private readonly version: string,
    private readonly logger: Logger,
  ) {}

  start(handlers: ChannelHandlers): void {
    this.handlers = handlers;
    this.inner.start({
      message: (raw) => this.fromUpstream(raw),
      malformed: (error, id) => handlers.malformed(error, id),
      closed: (info) => {
        this.inFlight.clear();
        this.asked.clear();
        handlers.closed(info);
      },
      reopened: () => handlers.reopened?.(),
    });
  }

  sendRaw(raw: Buffer | string, route?: Route): void {
    const bytes = typeof raw === 'string' ? Buffer.from(raw) : raw;
    let message;
    try {
      message = classify(withExactId(parseFrame(bytes, 'the session'), bytes));
    } catch {
      return;
    }
    if (message.kind === 'request') return this.fromSession(message.msg, route);
    if (message.kind === 'response') {
      return this.inputAnswered(message.msg);
    }
    const { method, params } = message.msg;
    if (method === 'notifications/cancelled') {
      const call = [...this.inFlight.entries()].find(([, each]) => each.sessionId === params?.requestId);
      if (call === undefined) return;
      this.inFlight.delete(call[0]);
      this.inner.send({
        jsonrpc: '2.0',
        method,
        params: { ...params, requestId: call[0], _meta: this.meta(undefined) },
      });
    }
    // notifications/initialized and roots/list_changed have no 2026-07-28 counterpart to send.
  }

  send(message: object, route?: Route): void {
    this.sendRaw(serialize(message), route);
  }

  close(): Promise<void> {
    return this.inner.close();
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
        return this.toSession(
          errorResponse(request.id, {
            code: ErrorCode.MethodNotFound,
            message: `${request.method}: the upstream speaks 2026-07-28, where resource updates come by subscriptions/listen, which taskgate does not relay yet`,
          }),
        );
    }
    this.sendUpstream({ sessionId: request.id, request, route, rounds: 0 }, request.params);
  }

  private sendUpstream(call: InFlight, params: JsonObject | undefined): void {
    const id = `taskgate-${this.nextId++}`;
    this.inFlight.set(id, call);
    const { task: _task, ...rest } = params ?? {};
    this.inner.send({
      jsonrpc: '2.0',
      id,
      method: call.request.method,
      params: { ...rest, _meta: this.meta(isObject(rest._meta) ? rest._meta : undefined) },
    });
  }

  private meta(own: JsonObject | undefined): JsonObject {
    return {
      ...own,
      [PROTOCOL_VERSION_META]: this.version,
      [CLIENT_CAPABILITIES_META]: this.clientCapabilities,
      ...(this.clientInfo === undefined ? {} : { [CLIENT_INFO_META]: this.clientInfo }),
      ...(this.logLevel === undefined ? {} : { [LOG_LEVEL_META]: this.logLevel }),
    };
  }

  private answerInitialize(request: Request): void {
    const params = request.params ?? {};
    const { tasks: _tasks, ...capabilities } = isObject(params.capabilities) ? params.capabilities : {};
    this.clientCapabilities = capabilities;
    this.clientInfo = isObject(params.clientInfo) ? params.clientInfo : undefined;
    const asked = typeof params.protocolVersion === 'string' ? params.protocolVersion : '';
    const meta = isObject(this.discover._meta) ? this.discover._meta : {};
    const result: JsonObject = {
      protocolVersion: LEGACY_VERSIONS.includes(asked) ? asked : LEGACY_VERSIONS[0],
      capabilities: isObject(this.discover.capabilities) ? this.discover.capabilities : {},
      serverInfo: meta[SERVER_INFO_META] ?? { name: 'unknown', version: '0' },
    };
    if (typeof this.discover.instructions === 'string') result.instructions = this.discover.instructions;
    this.toSession(successResponse(request.id, result));
  }

  private fromUpstream(raw: Buffer): void {
    let message;
    try {
      message = classify(withExactId(parseFrame(raw, 'the upstream server'), raw));
    } catch (error) {
      this.logger.warn({ err: error }, 'modern upstream: unreadable message');
      return;
    }
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
    if (message.kind === 'notification') {
      this.handlers?.message(raw);
      return;
    }
    const response = message.msg;
    const id = String(response.id);
    const call = this.inFlight.get(id);
    if (call === undefined) return;
    this.inFlight.delete(id);
    if ('error' in response) return this.toSession(errorResponse(call.sessionId, response.error));
    const { result } = response;
    if (result.resultType === 'input_required') return this.askClient(call, result);
    if (result.resultType !== undefined && result.resultType !== 'complete') {
      return this.toSession(
        errorResponse(call.sessionId, {
          code: ErrorCode.InternalError,
          message: `The upstream answered ${call.request.method} with resultType "${String(result.resultType)}", which taskgate cannot give a 2025 client yet`,
        }),
      );
    }
    this.toSession(successResponse(call.sessionId, toLegacyResult(result)));
  }

  private askClient(call: InFlight, result: JsonObject): void {
    const inputRequests = isObject(result.inputRequests) ? result.inputRequests : {};
    const keys = Object.keys(inputRequests);
    if (call.rounds >= MAX_INPUT_ROUNDS) {
      return this.toSession(
        errorResponse(call.sessionId, {
          code: ErrorCode.InternalError,
          message: `The upstream asked for input ${MAX_INPUT_ROUNDS} times for one ${call.request.method}: taskgate stopped relaying`,
        }),
      );
    }
    call.rounds++;
    const round: InputRound = { call, requestState: result.requestState, waiting: new Map(), answers: {} };
    if (keys.length === 0) return this.retry(round);
    const arrival: Arrival = { onStreamOf: call.sessionId };
    for (const key of keys) {
      const input = inputRequests[key];
      const id = `taskgate-input-${this.nextId++}`;
      round.waiting.set(id, key);
      this.asked.set(id, { round, key });
      const ask = isObject(input) ? input : {};
      this.handlers?.message(
        Buffer.from(serialize({ jsonrpc: '2.0', id, method: ask.method, params: ask.params ?? {} })),
        arrival,
      );
    }
  }

  private inputAnswered(response: Response): void {
    const id = String(response.id);
    const asked = this.asked.get(id);
    if (asked === undefined) return;
    this.asked.delete(id);
    const { round, key } = asked;
    round.waiting.delete(id);
    if ('error' in response) {
      // MRTR carries results only: a client that could not answer ends the request.
      for (const other of round.waiting.keys()) this.asked.delete(other);
      return this.toSession(
        errorResponse(round.call.sessionId, {
          code: ErrorCode.InternalError,
          message: `The client could not answer the upstream's input request: ${response.error.message}`,
        }),
      );
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

  private toSession(message: object): void {
    this.handlers?.message(Buffer.from(serialize(message)));
  }
}

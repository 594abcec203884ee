/**
 * One modern request the bridge (bridge.ts) carries as a 2025 request to its Session: what is kept of it
 * across its MRTR rounds (input-rounds.ts), made from the request's first attempt, and whether a
 * tools/call went on as a task (decided once, by the Session: decide.ts).
 */
import type { JsonRpcErrorObject } from '../protocol/errors.js';
import type { RequestCaller } from '../protocol/caller.js';
import {
  errorResponse,
  isObject,
  successResponse,
  type JsonObject,
  type Request,
  type RequestId,
  type Response,
} from '../protocol/messages.js';
import { inputCapabilitiesOf, TASKS_EXTENSION } from '../protocol/modern/capabilities.js';
import type { AnswerSink, ModernAnswer, ModernExchange } from '../protocol/modern/exchange.js';
import type {
  ClientCapabilities,
  Implementation,
  LogLevel,
  ModernRequestMeta,
} from '../protocol/modern/meta.js';
import { toModernError, toModernResult } from '../protocol/modern/results.js';
import { smallAnswerBytes, toolResultBytes, type AddedMembers } from '../protocol/modern/result-bytes.js';
import type { SmallAnswer } from '../protocol/small-answer.js';
import { parsedAnswer } from '../session/bad-frames.js';
import { taskOf, type ToolCallFacts, type ToolCallPlan } from '../session/decide.js';
import type { RequestContext } from '../session/request-contexts.js';
import { progressTokenOf } from './legacy-form.js';

/** What serving a request gives when its answer goes to the exchange's sink once the call ends. */
export const LATER: unique symbol = Symbol('answered through the sink');

/** A pending input request: what the server asked, and its id on the Session's side. */
export interface AskedInput {
  serverRequestId: RequestId;
  method: string;
  params: JsonObject | undefined;
  /** The size of the server's request, counted against the caller's share while the call waits. */
  bytes: number;
}

export interface Waiter {
  exchange: ModernExchange;
  /** Where the answer goes: the front's own (no promise between the call and the socket). */
  sink: AnswerSink;
  stopListening(): void;
}

/** A call's waiter, listening for its exchange's give-up (`given`) until stopListening. */
export class CallWaiter implements Waiter {
  constructor(
    readonly exchange: ModernExchange,
    readonly sink: AnswerSink,
    private readonly given: () => void,
  ) {}

  stopListening(): void {
    this.exchange.signal.removeEventListener('abort', this.given);
  }
}

/** Where a call's answer goes: the bridge that carries it (bridge.ts). */
export interface CallHost {
  callAnswered(call: Call, response: Response, raw: Buffer | undefined): void;
  /** False when the answer is not taken as its bytes: then it is read, and callAnswered gets it. */
  callAnsweredBytes(call: Call, raw: Buffer, answer: SmallAnswer): boolean;
}

/**
 * One modern request carried as a 2025 request, across as many MRTR rounds as its server needs; handed to
 * the Session as its request's context (who made it, where its answer goes), so no other object is made.
 * A class, its MRTR state made only once its server asks for input: a plain call is this one object.
 */
export class Call implements RequestContext {
  readonly method: string;
  /** The digest its requestState is sealed with, once it asked for input (not the params: they may be large). */
  digest: string | undefined = undefined;
  /** Who made it: the task it may become is theirs, its requestState is bound to them, limits count it. */
  readonly caller: RequestCaller;
  /** What the current attempt declared that the server may ask for (inputCapabilitiesOf), and its log level. */
  declared: ClientCapabilities;
  logLevel: LogLevel | undefined;
  /** The client's progress token of the current attempt; the Session sees the bridge's own. */
  clientProgressToken: string | number | undefined;
  /** Handed to the Session: whether it is a task is decided, or the Session is deciding it. */
  handed = false;
  /** The modern request now waiting for this call's outcome; none while parked. */
  waiter: Waiter | undefined = undefined;
  /** Input asked since the last answer to the client: sent together, once. */
  unsent = false;
  /** The outcome that came while the call was parked, and the bytes it was read from (parkOutcome). */
  outcome: { result: JsonObject } | { error: JsonRpcErrorObject } | undefined = undefined;
  outcomeRaw: Buffer | undefined = undefined;
  /** The key its requestState names, while parked. */
  parkedAs: string | undefined = undefined;
  /**
   * Whether it went on as a task, as the Session decided (`decided`: the server decides, for a caller that
   * declared the tasks extension or not): answered at once, or promoted after this long.
   */
  asTask: { promoteAfterMs: number | undefined } | undefined = undefined;
  readonly canTakeTask: boolean;
  private asked: Map<string, AskedInput> | undefined = undefined;

  /** Sent to the Session as `legacyId`, counted against `quota`, its answer handed to `host`. */
  constructor(
    readonly legacyId: number,
    exchange: ModernExchange,
    meta: ModernRequestMeta,
    quota: string,
    private readonly host: CallHost,
  ) {
    this.method = exchange.request.method;
    this.caller = callerOfCall(exchange, quota);
    this.declared = inputCapabilitiesOf(meta.clientCapabilities);
    this.logLevel = meta.logLevel;
    this.clientProgressToken = progressTokenOf(exchange.request.params);
    this.canTakeTask = declaresTasks(meta);
  }

  /** Input the server asked for and the client has not answered yet, by the key the client sees. */
  get inputs(): Map<string, AskedInput> {
    return (this.asked ??= new Map());
  }

  /** Whether the server asked for input still unanswered (without making the map). */
  get asksInput(): boolean {
    return this.asked !== undefined && this.asked.size > 0;
  }

  answer(response: Response, raw?: Buffer): void {
    this.host.callAnswered(this, response, raw);
  }

  answerBytes(raw: Buffer, answer: SmallAnswer): boolean {
    return this.host.callAnsweredBytes(this, raw, answer);
  }

  /** Its outcome came while it was parked: the client's retry gets it, made of the bytes it came as. */
  parkOutcome(outcome: Outcome, raw: Buffer | undefined): void {
    this.outcome = outcome;
    this.outcomeRaw = raw;
  }

  /** The plan the Session made for it (decide.ts, the server deciding): it goes on as a task, or not. */
  decided(plan: ToolCallPlan): void {
    this.asTask = taskOf(plan);
  }
}

/** The request declared the tasks extension: the server may answer it with a task. */
function declaresTasks(meta: ModernRequestMeta): boolean {
  const extensions = meta.clientCapabilities.extensions;
  return isObject(extensions) && isObject(extensions[TASKS_EXTENSION]);
}

/** callerOfExchange with its quota, made as one object: its spreads were a share of every call's garbage. */
function callerOfCall({ principal, subject, access }: ModernExchange, quota: string): RequestCaller {
  const caller: { -readonly [K in keyof RequestCaller]: RequestCaller[K] } = { quota };
  if (principal !== undefined) caller.identity = principal;
  if (subject !== undefined) caller.subject = subject;
  if (access !== undefined) caller.access = access;
  return caller;
}

/** What decide.ts needs to know of a tool besides the request: what the upstream does with it, the operator's rule. */
export type ToolFacts = Pick<ToolCallFacts, 'upstream' | 'policy'>;

type Outcome = { result: JsonObject } | { error: JsonRpcErrorObject };

/** The Session's outcome for a modern request, as a 2026-07-28 client gets it. */
export function modernResponse(
  request: Request,
  outcome: Outcome,
  resultOptions: { serverInfo?: Implementation },
): object {
  return 'error' in outcome
    ? errorResponse(request.id, toModernError(request.method, outcome.error))
    : successResponse(request.id, toModernResult(request.method, outcome.result, resultOptions));
}

/** What the 2026-07-28 result adds to a 2025 one, as values and as bytes (bridge-handshake.ts). */
export interface ResultForm {
  readonly resultOptions: { serverInfo?: Implementation };
  readonly resultMembers: AddedMembers;
}

/**
 * The answer to a carried request: a plain tools/call's result as the upstream's bytes with what the
 * 2026-07-28 result adds put in (result-bytes.ts) when that is all it needs; the response, made only if
 * someone reads it, goes beside them.
 */
export function answerTo(
  request: Request,
  outcome: Outcome,
  raw: Buffer | undefined,
  form: ResultForm,
): ModernAnswer {
  if (raw !== undefined && 'result' in outcome && request.method === 'tools/call') {
    const body = toolResultBytes(raw, request.id, outcome.result, form.resultMembers);
    if (body !== undefined) return new BytesAnswer(body, request, outcome, form.resultOptions);
  }
  return { response: modernResponse(request, outcome, form.resultOptions) };
}

/**
 * answerTo for a small success response not read yet (smallAnswer read its bytes): the answer to a
 * tools/call made of the bytes when the result has neither `_meta`, `resultType` nor `task`, else
 * undefined (the response is to be read).
 */
export function unreadAnswerTo(
  request: Request,
  raw: Buffer,
  answer: SmallAnswer,
  form: ResultForm,
): BytesAnswer | undefined {
  if (request.method !== 'tools/call' || answer.task !== undefined) return undefined;
  const body = smallAnswerBytes(raw, answer, request.id, form.resultMembers);
  return body === undefined ? undefined : new BytesAnswer(body, request, undefined, form.resultOptions, raw);
}

/**
 * A plain tools/call's answer as the bytes made from the upstream's (result-bytes.ts); the response, made
 * only if someone reads it (the stdio front does), of the outcome or of the upstream's response not read
 * yet. A class: an object literal with a getter, made per call, was a runtime call each time.
 */
export class BytesAnswer {
  constructor(
    readonly body: Buffer,
    private readonly request: Request,
    private outcome: Outcome | undefined,
    private readonly resultOptions: { serverInfo?: Implementation },
    /** The upstream's response the outcome is read from when there is none yet. */
    private readonly raw?: Buffer,
  ) {}

  get response(): object {
    this.outcome ??= outcomeOf(this.raw!, this.request.id);
    return modernResponse(this.request, this.outcome, this.resultOptions);
  }
}

/** The outcome a success response's bytes, which smallAnswer passed, hold. */
function outcomeOf(raw: Buffer, id: RequestId): Outcome {
  const response = parsedAnswer(raw, id);
  return 'error' in response ? { error: response.error } : { result: response.result };
}

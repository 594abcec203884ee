/**
 * One modern request the bridge (bridge.ts) carries as a 2025 request to its Session: what is kept of it
 * across its MRTR rounds (input-rounds.ts), made from the request's first attempt, and whether a
 * tools/call goes as a task (decide.ts).
 */
import type { JsonRpcErrorObject } from '../protocol/errors.js';
import type { RequestCaller } from '../protocol/caller.js';
import { isObject, type JsonObject, type Request, type RequestId } from '../protocol/messages.js';
import { inputCapabilitiesOf, TASKS_EXTENSION } from '../protocol/modern/capabilities.js';
import type { AnswerSink, ModernExchange } from '../protocol/modern/exchange.js';
import type { ClientCapabilities, LogLevel, ModernRequestMeta } from '../protocol/modern/meta.js';
import { decideToolCall, type ToolCallFacts } from '../session/decide.js';
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

/**
 * One modern request carried as a 2025 request, across as many MRTR rounds as its server needs; handed to
 * the Session as its request's context (who made it, where its answer goes), so no other object is made.
 */
export interface Call extends RequestContext {
  legacyId: number;
  method: string;
  /** The digest its requestState is sealed with, once it asked for input (not the params: they may be large). */
  digest: string | undefined;
  /** Who made it: the task it may become is theirs, its requestState is bound to them, limits count it. */
  readonly caller: RequestCaller;
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

/**
 * The call a modern request becomes, sent to the Session as `legacyId`, counted against `quota`, its
 * answer handed to `answer` (the bridge's).
 */
export const newCall = (
  legacyId: number,
  exchange: ModernExchange,
  meta: ModernRequestMeta,
  quota: string,
  asTask: Call['asTask'],
  answer: RequestContext['answer'],
): Call => ({
  answer,
  legacyId,
  method: exchange.request.method,
  digest: undefined,
  caller: callerOfCall(exchange, quota),
  declared: inputCapabilitiesOf(meta.clientCapabilities),
  logLevel: meta.logLevel,
  clientProgressToken: progressTokenOf(exchange.request.params),
  waiter: undefined,
  inputs: new Map(),
  unsent: false,
  outcome: undefined,
  parkedAs: undefined,
  asTask,
});

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

/**
 * Whether a tools/call goes to the Session as a task, and when it is promoted (decide.ts, the server
 * deciding): a plain call is carried as one, and the Session decides it again as a 2025 client's without
 * tasks (unwrap, or forward).
 */
export function taskPlanOf(
  request: Request,
  meta: ModernRequestMeta,
  toolFacts: (name: string) => ToolFacts,
): Call['asTask'] | 'refuse' {
  const name = request.params?.name;
  if (request.method !== 'tools/call' || typeof name !== 'string') return undefined;
  const extensions = meta.clientCapabilities.extensions;
  const { upstream, policy } = toolFacts(name);
  const plan = decideToolCall({
    taskDecidedBy: 'server',
    canTakeTask: isObject(extensions) && isObject(extensions[TASKS_EXTENSION]),
    asksTask: false,
    upstream,
    policy,
  });
  switch (plan.kind) {
    case 'refuse-plain':
      return 'refuse';
    case 'forward':
    case 'augment':
      return plan.task;
    case 'unwrap':
    case 'refuse-task':
      // The Session's to do (unwrap), and never so where the server decides (refuse-task).
      return undefined;
  }
}

/**
 * One 2026-07-28 request as a front hands it to the bridge: the request, who sent it, where messages
 * about it go before its answer, and how the client says it no longer wants it.
 */
import type { CallerAccess, RequestCaller } from '../caller.js';
import type { Request } from '../messages.js';

export interface ModernExchange {
  readonly request: Request;
  /** The authenticated caller, when callers are identified: a requestState is bound to it. */
  readonly principal?: string;
  /** Who the principal is, for audit lines (never a token). */
  readonly subject?: string;
  /** What the principal may do (auth.rules); none: everything. */
  readonly access?: CallerAccess;
  /** The caller's own Authorization, as auth.bearerPassthrough passes it on to the upstream of its bridge. */
  readonly upstreamAuthorization?: string;
  /** Whom per-caller limits count the request against (the identity, else the client's address); none: the front's one client. */
  readonly caller?: string;
  /** Its `Mcp-Param-*` headers by lower-case name (Streamable HTTP); none over stdio, where none are checked. */
  readonly paramHeaders?: ReadonlyMap<string, string | readonly string[]>;
  /**
   * A message that belongs with the request before its answer (progress, log messages): on its stream. A
   * function of its own, kept by a long stream without the rest of the exchange.
   */
  readonly notify: (message: object) => void;
  /** Aborted when the client gives the request up (its HTTP stream closed, or notifications/cancelled). */
  readonly signal: GiveUpSignal;
}

/** The caller the request carries into the core; its quota is counted where the request enters it. */
export function callerOfExchange({ principal, subject, access }: ModernExchange): RequestCaller {
  return {
    ...(principal === undefined ? {} : { identity: principal }),
    ...(subject === undefined ? {} : { subject }),
    ...(access === undefined ? {} : { access }),
  };
}

/**
 * The part of an AbortSignal the bridge listens to, so that a front may hand either a real one or a
 * ClientGiveUp (an AbortController and its EventTarget listener cost more than the rest of a plain call's
 * HTTP handling: bench/PROFILING.md).
 */
export interface GiveUpSignal {
  readonly aborted: boolean;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/** A GiveUpSignal as cheap as an array: each listener is called once, in the order added, on `giveUp()`. */
export class ClientGiveUp implements GiveUpSignal {
  private given = false;
  private listeners: (() => void)[] = [];

  get aborted(): boolean {
    return this.given;
  }

  addEventListener(_type: 'abort', listener: () => void): void {
    if (!this.given && !this.listeners.includes(listener)) this.listeners.push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const at = this.listeners.indexOf(listener);
    if (at !== -1) this.listeners.splice(at, 1);
  }

  giveUp(): void {
    if (this.given) return;
    this.given = true;
    const listeners = this.listeners;
    this.listeners = [];
    for (const listener of listeners) listener();
  }
}

/**
 * What the client gets for a request: a JSON-RPC response, or nothing once it gave the request up.
 * `refused`: taskgate refused the request itself (its `_meta`, a capability, a method the era lacks), which
 * Streamable HTTP answers with an error status rather than 200. `body`: the response as the bytes to
 * send, when taskgate made them from the upstream's (a success, never refused); `response` is then the
 * same message, made only when read.
 */
export type ModernAnswer = { response: object; refused?: boolean; body?: Buffer } | undefined;

/**
 * Where the answer to one exchange goes, once, handed down with it: the front writes it where it is called,
 * with no promise per layer between the bridge and the socket (bench/PROFILING.md).
 */
export interface AnswerSink {
  answer(answer: ModernAnswer): void;
  /** Serving it failed in a way no answer says (a bug, a store that threw): the front's to report. */
  failed(error: unknown): void;
}

/** How a front hands an exchange on: its answer goes to the sink. */
export type ModernServe = (exchange: ModernExchange, sink: AnswerSink) => void;

/** The answer of `serve` as a promise, for a caller that awaits it (tests, a relayed retry). */
export const answerPromise = (serve: ModernServe, exchange: ModernExchange): Promise<ModernAnswer> =>
  new Promise((answer, failed) => serve(exchange, { answer, failed }));

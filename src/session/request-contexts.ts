/**
 * What travels with each client request of a Session: who made it, and, for one an edge handed the Session
 * as a value (Session.take: the 2026-07-28 bridge's), where its answer goes: each answer is handed to its
 * request's context as the value the Session made or read, never serialized for the edge to parse again. Everything else the Session sends its client (requests,
 * notifications, answers to requests that came as bytes) goes on the client channel as before. An answer
 * is handed on a microtask, as the memory channel delivers, so that it keeps its place among the messages
 * sent before it (a call's progress and log lines reach the edge before its result).
 */
import { NO_CALLER, type RequestCaller } from '../protocol/caller.js';
import { readMessage } from '../protocol/read-message.js';
import type { RequestId, Response } from '../protocol/messages.js';
import type { Pieces } from '../protocol/pieces.js';
import type { SmallAnswer } from '../protocol/small-answer.js';
import { sendPieces, type Channel, type ChannelHandlers, type Route } from '../transport/channel.js';
import { parsedAnswer } from './bad-frames.js';
import type { TaskChoice } from './decide.js';
import type { SessionOptions } from './session-options.js';

/**
 * What travels with a request handed as a value: who made it, where its answer goes, and, for a
 * 2026-07-28 request (`canTakeTask` set), that the server decides whether a tools/call is a task (decide.ts).
 */
export interface RequestContext extends Partial<TaskChoice> {
  readonly caller: RequestCaller;
  /** `raw`: the bytes the response was read from (the upstream's, or taskgate's own), when there are some. */
  answer(response: Response, raw?: Buffer): void;
  /**
   * A small success response of the upstream, unread: its bytes and what one pass over them learned
   * (smallAnswer). False when the context does not take these bytes as they are: they are read for it,
   * and `answer` gets the response.
   */
  answerBytes?(raw: Buffer, answer: SmallAnswer): boolean;
}

export class RequestContexts implements Channel {
  private readonly contexts = new Map<RequestId, RequestContext>();

  /** `bytesCaller`: who made the requests that come as bytes (the session's own caller). */
  constructor(
    private readonly client: Channel,
    private bytesCaller: RequestCaller,
  ) {}

  /** The client serves many callers (the bridge): a request it sends as bytes (its initialize) is no caller's. */
  manyCallers(): void {
    this.bytesCaller = NO_CALLER;
  }

  get handsParsed(): boolean {
    return this.client.handsParsed === true;
  }

  expect(id: RequestId, context: RequestContext): void {
    this.contexts.set(id, context);
  }

  callerOf(id: RequestId): RequestCaller {
    return this.contexts.get(id)?.caller ?? this.bytesCaller;
  }

  /** Where the server decides whether the request is a task: the context that says so, if any. */
  taskChoiceOf(id: RequestId): TaskChoice | undefined {
    const context = this.contexts.get(id);
    return context?.canTakeTask === undefined ? undefined : (context as TaskChoice);
  }

  /** The request is over without an answer (cancelled): nothing more goes to its context. */
  forget(id: RequestId): void {
    this.contexts.delete(id);
  }

  start(handlers: ChannelHandlers): void {
    this.client.start(handlers);
  }

  send(message: object, route?: Route): void {
    const context = this.answered(route);
    if (context === undefined) return this.client.send(message, route);
    queueMicrotask(() => context.answer(message as Response));
  }

  sendRaw(raw: Buffer | string, route?: Route, parsed?: object): void {
    const context = this.answered(route);
    if (context === undefined) return this.client.sendRaw(raw, route, parsed);
    let message = parsed;
    if (message === undefined) {
      // Bytes the Session kept (a task's result), read here once: the edge takes a value. They are
      // taskgate's own serialization, always readable.
      const read = readMessage(typeof raw === 'string' ? Buffer.from(raw) : raw, 'taskgate');
      if (!read.ok) return;
      message = read.message.msg;
    }
    queueMicrotask(() => context.answer(message as Response, typeof raw === 'string' ? undefined : raw));
  }

  /** Whether the answer to `id` goes to a context that may take it as its bytes (sendAnswerBytes). */
  takesBytes(id: RequestId): boolean {
    return this.contexts.get(id)?.answerBytes !== undefined;
  }

  /**
   * A small success response to a request whose context may take bytes (takesBytes), handed unread, on a
   * microtask as every answer; read there only if the context does not take them, `route.responseTo` its id.
   */
  sendAnswerBytes(raw: Buffer, answer: SmallAnswer, route: { responseTo: RequestId }): void {
    const context = this.answered(route)!;
    queueMicrotask(() => {
      if (context.answerBytes!(raw, answer)) return;
      context.answer({ ...parsedAnswer(raw, route.responseTo), id: route.responseTo }, raw);
    });
  }

  /** An answer whose context takes a value is joined to be read (sendRaw); any other goes on in pieces. */
  sendPieces(line: Pieces, route?: Route): void {
    if (route !== undefined && 'responseTo' in route && this.contexts.has(route.responseTo)) {
      return this.sendRaw(line.join(), route);
    }
    sendPieces(this.client, line, route);
  }

  pauseStream(requestId: RequestId, retryMs: number | undefined): Promise<void> | undefined {
    return this.client.pauseStream?.(requestId, retryMs);
  }

  close(): Promise<void> {
    this.contexts.clear();
    return this.client.close();
  }

  /** The context of the request a message answers, taken: undefined when it came as bytes. */
  private answered(route: Route | undefined): RequestContext | undefined {
    if (route === undefined || !('responseTo' in route)) return undefined;
    const context = this.contexts.get(route.responseTo);
    if (context !== undefined) this.contexts.delete(route.responseTo);
    return context;
  }
}

/** Who makes a session's requests when its client is one caller: its identity, counted against `quota`. */
export function sessionCaller(
  { identity, subject, access }: Pick<SessionOptions, 'identity' | 'subject' | 'access'>,
  quota: string,
): RequestCaller {
  return {
    ...(identity === undefined ? {} : { identity }),
    ...(subject === undefined ? {} : { subject }),
    ...(access === undefined ? {} : { access }),
    quota,
  };
}

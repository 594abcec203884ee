/**
 * The client end of a Session whose client takes values, not bytes: the 2026-07-28 bridge
 * (modern/bridge.ts), which hands the Session its requests as values (request-contexts.ts holds where each
 * answer goes). This is the other half: what the Session sends that client besides those answers — the
 * server's requests relayed, notifications, its own requests — reaches the edge as the value the Session
 * made or read, with the request it belongs with, never serialized for the edge to parse again. Each is
 * handed on a microtask, as request-contexts.ts hands answers, so that it keeps its place among them (a
 * call's progress and log lines reach the edge before its result). Either side's close is the other's
 * going away, as on a memory channel.
 */
import { classify } from '../protocol/messages.js';
import { readMessage, type ReadMessage } from '../protocol/read-message.js';
import type { Arrival, Channel, ChannelHandlers, Route } from '../transport/channel.js';

/** The edge that hears the Session as values. */
export interface ValueReceiver {
  /** `bytes`: the size of the bytes it was read from, when it came as bytes. */
  message(read: ReadMessage, arrival: Arrival | undefined, bytes: number | undefined): void;
  /** The Session closed its client end: nothing more comes. */
  closed(reason: string): void;
}

/** The edge's end of its Session: how it hears the Session, and how it goes away. */
export interface ValueEnd {
  listen(receiver: ValueReceiver): void;
  /** The edge is done: the Session hears its client gone (and closes). */
  end(): Promise<void>;
}

export class ValueClient implements Channel, ValueEnd {
  readonly handsParsed = true;
  private handlers: ChannelHandlers | undefined;
  private receiver: ValueReceiver | undefined;
  /** What the Session sent before the edge listened: handed over then, in order. */
  private early: [ReadMessage, Arrival | undefined, number | undefined][] = [];
  private over = false;

  // ── the Session's side ──────────────────────────────────────────────────────────────────────────

  start(handlers: ChannelHandlers): void {
    this.handlers = handlers;
  }

  send(message: object, route?: Route): void {
    this.deliver(readOf(message), route, undefined);
  }

  sendRaw(raw: Buffer | string, route?: Route, parsed?: object): void {
    if (parsed !== undefined) return this.deliver(readOf(parsed), route, Buffer.byteLength(raw));
    const bytes = typeof raw === 'string' ? Buffer.from(raw) : raw;
    this.deliver(readMessage(bytes, 'the session'), route, bytes.byteLength);
  }

  /** The Session closes: the edge hears it on a microtask, after what was sent before. */
  async close(): Promise<void> {
    if (this.over) return;
    this.over = true;
    this.handlers = undefined;
    const receiver = this.receiver;
    queueMicrotask(() => receiver?.closed('the other end closed'));
  }

  // ── the edge's side ─────────────────────────────────────────────────────────────────────────────

  listen(receiver: ValueReceiver): void {
    this.receiver = receiver;
    const early = this.early;
    this.early = [];
    for (const [read, arrival, bytes] of early) receiver.message(read, arrival, bytes);
    if (this.over) receiver.closed('the other end closed');
  }

  async end(): Promise<void> {
    if (this.over) return;
    this.over = true;
    this.receiver = undefined;
    const handlers = this.handlers;
    this.handlers = undefined;
    queueMicrotask(() => handlers?.closed({ reason: 'the other end closed' }));
  }

  private deliver(read: ReadMessage, route: Route | undefined, bytes: number | undefined): void {
    if (this.over) return;
    const arrival = route === undefined ? undefined : arrivalOf(route);
    queueMicrotask(() => {
      if (this.receiver !== undefined) this.receiver.message(read, arrival, bytes);
      else if (!this.over) this.early.push([read, arrival, bytes]);
    });
  }
}

/** A message handed as a value, classified (read-message.ts's readHanded, without the bytes). */
function readOf(parsed: object): ReadMessage {
  try {
    return { ok: true, message: classify(parsed) };
  } catch (error) {
    return { ok: false, error, value: parsed };
  }
}

/** Where the message belongs, as a memory channel says it on arrival. */
const arrivalOf = (route: Route): Arrival => ({
  onStreamOf: 'responseTo' in route ? route.responseTo : route.relatedTo,
});

/**
 * Two Channels joined in memory: what one end sends, the other receives, on a later tick as a pipe would
 * deliver it. taskgate uses a pair where one of its own parts speaks to another as a peer (the modern
 * front is a 2025 client of a Session); tests use it to run the core without processes. A message sent
 * with a route arrives saying which request it belongs to, as one on that request's HTTP stream would,
 * and one sent with its parsed value arrives with that very value beside its bytes.
 */
import type { Arrival, Channel, ChannelHandlers, CloseInfo, Route } from './channel.js';

export interface MemoryChannelPair {
  readonly a: MemoryChannel;
  readonly b: MemoryChannel;
}

export function memoryChannelPair(): MemoryChannelPair {
  const a = new MemoryChannel();
  const b = new MemoryChannel();
  a.peer = b;
  b.peer = a;
  return { a, b };
}

export class MemoryChannel implements Channel {
  readonly handsParsed = true;
  /** @internal set by memoryChannelPair */
  peer: MemoryChannel | undefined;
  private handlers: ChannelHandlers | undefined;
  /** Messages that arrived before start(): delivered then, in order. */
  private early: Delivery[] = [];
  /** The peer went away before start(): reported then, after the early messages. */
  private closedEarly: CloseInfo | undefined;
  private closed = false;
  /** Each message's route as its sender gave it, for tests that check where a message was meant to go. */
  readonly sentRoutes: (Route | undefined)[] = [];
  private keepRoutes = false;

  start(handlers: ChannelHandlers): void {
    this.handlers = handlers;
    const early = this.early;
    this.early = [];
    for (const { raw, arrival, parsed } of early) handlers.message(raw, arrival, parsed);
    const closedEarly = this.closedEarly;
    if (closedEarly === undefined) return;
    this.closedEarly = undefined;
    this.handlers = undefined;
    handlers.closed(closedEarly);
  }

  /** Records the routes given to send/sendRaw (tests only; off by default so nothing grows). */
  recordRoutes(): this {
    this.keepRoutes = true;
    return this;
  }

  sendRaw(raw: Buffer | string, route?: Route, parsed?: object): void {
    if (this.closed) return;
    if (this.keepRoutes) this.sentRoutes.push(route);
    const peer = this.peer;
    const bytes = typeof raw === 'string' ? Buffer.from(raw) : raw;
    const arrival = arrivalOf(route);
    queueMicrotask(() => peer?.receive(bytes, arrival, parsed));
  }

  send(message: object, route?: Route): void {
    this.sendRaw(JSON.stringify(message), route);
  }

  /** Closing one end is, for the other, its peer going away. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.handlers = undefined;
    const peer = this.peer;
    queueMicrotask(() => peer?.peerClosed({ reason: 'the other end closed' }));
  }

  private receive(raw: Buffer, arrival: Arrival | undefined, parsed: object | undefined): void {
    if (this.closed) return;
    if (this.handlers === undefined) this.early.push({ raw, arrival, parsed });
    else this.handlers.message(raw, arrival, parsed);
  }

  private peerClosed(info: CloseInfo): void {
    if (this.closed) return;
    this.closed = true;
    const handlers = this.handlers;
    this.handlers = undefined;
    if (handlers) handlers.closed(info);
    else this.closedEarly = info;
  }
}

interface Delivery {
  raw: Buffer;
  arrival: Arrival | undefined;
  parsed: object | undefined;
}

function arrivalOf(route: Route | undefined): Arrival | undefined {
  if (route === undefined) return undefined;
  return { onStreamOf: 'responseTo' in route ? route.responseTo : route.relatedTo };
}

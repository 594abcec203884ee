/**
 * One client session's port on a shared upstream (shared-upstream.ts): the Channel its Session takes for
 * an upstream of its own. It reads what the session sends and hands it to the multiplexer, and delivers
 * what the multiplexer routes to it.
 */
import type { ProtocolError } from '../protocol/errors.js';
import { handed, serialize, withExactRequestId } from '../protocol/exact-ids.js';
import { readHanded } from '../protocol/read-message.js';
import {
  classify,
  type JsonObject,
  type Message,
  type Notification,
  type Request,
  type RequestId,
  type Response,
} from '../protocol/messages.js';
import type { Pieces } from '../protocol/pieces.js';
import type { Scanned } from '../protocol/scanned.js';
import {
  deliverPieces,
  type Arrival,
  type Channel,
  type ChannelHandlers,
  type CloseInfo,
  type Route,
} from './channel.js';

/** What a port asks of the multiplexer it belongs to. */
export interface PortHost {
  readonly takesCallerCapabilities: boolean;
  /** The port started: why it cannot be used, when the upstream is gone for good. */
  attached(port: Port): CloseInfo | undefined;
  fromPort(port: Port, message: Message, raw: Buffer | string | undefined, route: Route | undefined): void;
  /** The port closed. */
  detached(port: Port): void;
}

/** One client session's view of the shared upstream. */
export class Port implements Channel {
  /** What its client declared in its initialize (the server heard only the first port's). */
  capabilities: JsonObject | undefined;
  private handlers: ChannelHandlers | undefined;
  private closed = false;

  constructor(private readonly shared: PortHost) {}

  readonly outlivesClose = true;

  get takesCallerCapabilities(): boolean {
    return this.shared.takesCallerCapabilities;
  }

  start(handlers: ChannelHandlers): void {
    this.handlers = handlers;
    const gone = this.shared.attached(this);
    if (gone !== undefined) queueMicrotask(() => this.upstreamClosed(gone));
  }

  send(message: object, route?: Route): void {
    if (this.closed) return;
    let classified: Message;
    try {
      classified = classify(message);
    } catch {
      return; // the session only sends what it built or checked
    }
    this.shared.fromPort(this, classified, undefined, route);
  }

  sendRaw(raw: Buffer | string, route?: Route, parsed?: object): void {
    if (this.closed) return;
    let classified: Message;
    try {
      classified = readFromSession(raw, parsed);
    } catch {
      return; // the session parsed it before sending: nothing here would
    }
    // Requests and cancellations are rewritten; anything else goes as its bytes.
    this.shared.fromPort(this, classified, classified.kind === 'request' ? undefined : raw, route);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.handlers = undefined;
    this.shared.detached(this);
  }

  /** @internal */
  deliver(message: Request | Response | Notification): void {
    this.receive(Buffer.from(serialize(message)), undefined, handed(message));
  }

  /**
   * @internal `parsed`: the message beside its bytes, for a port that is its only receiver (the Session
   * reads it instead of the bytes; one handed to several could be changed by one of them).
   */
  receive(raw: Buffer, arrival?: Arrival, parsed?: object): void {
    this.handlers?.message(raw, arrival, parsed);
  }

  /** @internal A message in the pieces it came in, with its scan (ChannelHandlers.pieces). */
  receivePieces(line: Pieces, scanned: Scanned, arrival?: Arrival): void {
    if (this.handlers !== undefined) deliverPieces(this.handlers, line, scanned, arrival);
  }

  /** @internal */
  reportMalformed(error: ProtocolError, id: RequestId): void {
    this.handlers?.malformed(error, id);
  }

  /** @internal */
  upstreamClosed(info: CloseInfo): void {
    const handlers = this.handlers;
    if (!info.reopening) this.handlers = undefined;
    handlers?.closed(info);
  }

  /** @internal */
  upstreamReopened(): void {
    this.handlers?.reopened?.();
  }

  /** @internal The server closed the stream of this port's request `id` to be polled. */
  streamPaused(id: RequestId, retryMs: number | undefined): Promise<void> | undefined {
    return this.handlers?.streamPaused?.(id, retryMs);
  }
}

/** A message a Session sent, read from the value it handed or its bytes, as taskgate holds its ids. */
function readFromSession(raw: Buffer | string, parsed: object | undefined): Message {
  const bytes = typeof raw === 'string' ? Buffer.from(raw) : raw;
  const read = readHanded(bytes, parsed, 'a client session');
  if (!read.ok) throw read.error;
  const classified = read.message;
  if (classified.kind !== 'notification') return classified;
  return { kind: 'notification', msg: withExactRequestId(classified.msg, bytes) };
}

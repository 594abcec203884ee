import type { ProtocolError } from '../protocol/errors.js';
import type { RequestId } from '../protocol/messages.js';

export interface CloseInfo {
  /** For people: why the other side went away ("exited with code 3", "stdin closed"). */
  reason: string;
  /** The other side is coming back by itself (a restarted child): `reopened` follows once it has. */
  reopening?: boolean;
  /**
   * Only the other side's input to us ended (stdin reached its end): it sends nothing more, but answers to
   * what it sent can still reach it.
   */
  inputEnded?: boolean;
}

/**
 * Where a message arriving from a peer came from, when the transport knows: over Streamable HTTP, the
 * request whose response stream carried it (the id as this side sent it).
 */
export interface Arrival {
  onStreamOf?: RequestId;
}

/**
 * Where a message going to a peer belongs, for transports that carry messages on several streams
 * (Streamable HTTP): a response goes on the stream of its request; a message related to a request goes
 * on that request's stream while it is open. Stdio ignores it.
 */
export type Route = { responseTo: RequestId } | { relatedTo: RequestId };

export interface ChannelHandlers {
  /** The exact bytes of one message, not yet parsed (forwarded as they are when nothing changes). */
  message(raw: Buffer, arrival?: Arrival): void;
  /** A frame that could not become a message: over the size limit. */
  malformed(error: ProtocolError, id: RequestId | null): void;
  closed(info: CloseInfo): void;
  /** After a `closed` with `reopening`: the other side is back and takes messages again. */
  reopened?(): void;
}

/** One side of a proxied connection, speaking JSON-RPC messages. */
export interface Channel {
  start(handlers: ChannelHandlers): void;
  /** Sends the bytes of one serialized JSON-RPC message, as they are. */
  sendRaw(raw: Buffer | string, route?: Route): void;
  send(message: object, route?: Route): void;
  close(): Promise<void>;
}

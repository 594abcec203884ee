import type { ProtocolError } from '../protocol/errors.js';
import type { RequestId } from '../protocol/messages.js';

export interface CloseInfo {
  /** For people: why the other side went away ("exited with code 3", "stdin closed"). */
  reason: string;
}

export interface ChannelHandlers {
  /** The exact bytes of one message, not yet parsed (forwarded as they are when nothing changes). */
  message(raw: Buffer): void;
  /** A frame that could not become a message: over the size limit. */
  malformed(error: ProtocolError, id: RequestId | null): void;
  closed(info: CloseInfo): void;
}

/** One side of a proxied connection, speaking JSON-RPC messages. */
export interface Channel {
  start(handlers: ChannelHandlers): void;
  /** Sends the bytes of one serialized JSON-RPC message, as they are. */
  sendRaw(raw: Buffer | string): void;
  send(message: object): void;
  close(): Promise<void>;
}

import type { ProtocolError } from '../protocol/errors.js';
import type { RequestId } from '../protocol/messages.js';

export interface CloseInfo {
  /** For people: why the other side went away ("exited with code 3", "stdin closed"). */
  reason: string;
}

export interface ChannelHandlers {
  /** One parsed JSON value and the exact text it came from (forwarded as-is when nothing changes). */
  message(value: unknown, raw: string): void;
  /** A frame that could not become a message: bad JSON, or over the size limit. */
  malformed(error: ProtocolError, id: RequestId | null): void;
  closed(info: CloseInfo): void;
}

/** One side of a proxied connection, speaking JSON-RPC messages. */
export interface Channel {
  start(handlers: ChannelHandlers): void;
  /** Sends text that is already one serialized JSON-RPC message. */
  sendRaw(text: string): void;
  send(message: object): void;
  close(): Promise<void>;
}

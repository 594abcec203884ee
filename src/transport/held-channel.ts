/**
 * A channel whose first message is read before anyone is chosen to serve it: taskgate tells the era of a
 * stdio connection by its first message (`initialize`, or a request with 2026-07-28 `_meta`), then hands
 * the channel to the reader of that era, which gets every message from the first on, nothing lost.
 */
import type { ProtocolError } from '../protocol/errors.js';
import type { RequestId } from '../protocol/messages.js';
import type { Pieces } from '../protocol/pieces.js';
import {
  sendPieces,
  type Arrival,
  type Channel,
  type ChannelHandlers,
  type CloseInfo,
  type Route,
} from './channel.js';

type Held =
  | { kind: 'message'; raw: Buffer; arrival?: Arrival }
  | { kind: 'malformed'; error: ProtocolError; id: RequestId | null }
  | { kind: 'closed'; info: CloseInfo };

export interface FirstMessage {
  /** The first message's bytes; undefined when the channel closed (or sent only unusable frames) first. */
  first: Buffer | undefined;
  /** The same channel, to be started by whoever serves it. */
  channel: Channel;
}

export function awaitFirstMessage(inner: Channel): Promise<FirstMessage> {
  return new Promise((resolve) => {
    const held = new HeldChannel(inner, (first) => resolve({ first, channel: held }));
  });
}

class HeldChannel implements Channel {
  private handlers: ChannelHandlers | undefined;
  private held: Held[] = [];

  constructor(
    private readonly inner: Channel,
    decided: (first: Buffer | undefined) => void,
  ) {
    let waiting = true;
    const decide = (first: Buffer | undefined): void => {
      if (!waiting) return;
      waiting = false;
      decided(first);
    };
    inner.start({
      message: (raw, arrival) => {
        this.deliver(arrival === undefined ? { kind: 'message', raw } : { kind: 'message', raw, arrival });
        decide(raw);
      },
      malformed: (error, id) => this.deliver({ kind: 'malformed', error, id }),
      closed: (info) => {
        this.deliver({ kind: 'closed', info });
        decide(undefined);
      },
    });
  }

  start(handlers: ChannelHandlers): void {
    this.handlers = handlers;
    const held = this.held;
    this.held = [];
    for (const event of held) this.dispatch(handlers, event);
  }

  sendRaw(raw: Buffer | string, route?: Route, parsed?: object): void {
    this.inner.sendRaw(raw, route, parsed);
  }

  sendPieces(line: Pieces, route?: Route): void {
    sendPieces(this.inner, line, route);
  }

  send(message: object, route?: Route): void {
    this.inner.send(message, route);
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  private deliver(event: Held): void {
    if (this.handlers === undefined) this.held.push(event);
    else this.dispatch(this.handlers, event);
  }

  private dispatch(handlers: ChannelHandlers, event: Held): void {
    if (event.kind === 'message') handlers.message(event.raw, event.arrival);
    else if (event.kind === 'malformed') handlers.malformed(event.error, event.id);
    else handlers.closed(event.info);
  }
}

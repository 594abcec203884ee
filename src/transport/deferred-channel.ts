/**
 * A channel whose other end is chosen later: its owner starts at once, and what it sends waits, in order,
 * until `connect` names the channel that carries it. taskgate's stdio session starts before the client's
 * first message says which era the client speaks (the upstream must be watched from the start), and is
 * connected to the client itself, or to the bridge for a 2026-07-28 client, once that message is in.
 */
import type { Pieces } from '../protocol/pieces.js';
import { sendPieces, type Channel, type ChannelHandlers, type Route } from './channel.js';

export class DeferredChannel implements Channel {
  private inner: Channel | undefined;
  private handlers: ChannelHandlers | undefined;
  private waiting: { raw: Buffer | string; route: Route | undefined; parsed: object | undefined }[] = [];
  private closed = false;

  get handsParsed(): boolean {
    return this.inner?.handsParsed === true;
  }

  start(handlers: ChannelHandlers): void {
    this.handlers = handlers;
    this.inner?.start(handlers);
  }

  connect(inner: Channel): void {
    this.inner = inner;
    if (this.handlers !== undefined) inner.start(this.handlers);
    const waiting = this.waiting;
    this.waiting = [];
    for (const { raw, route, parsed } of waiting) inner.sendRaw(raw, route, parsed);
    if (this.closed) void inner.close();
  }

  sendRaw(raw: Buffer | string, route?: Route, parsed?: object): void {
    if (this.inner !== undefined) this.inner.sendRaw(raw, route, parsed);
    else if (!this.closed) this.waiting.push({ raw, route, parsed });
  }

  sendPieces(line: Pieces, route?: Route): void {
    if (this.inner !== undefined) sendPieces(this.inner, line, route);
    else this.sendRaw(line.join(), route);
  }

  send(message: object, route?: Route): void {
    if (this.inner !== undefined) return this.inner.send(message, route);
    this.sendRaw(JSON.stringify(message), route);
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.inner?.close();
  }
}

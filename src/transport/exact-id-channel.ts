/**
 * A channel that writes ids standing for large integers (src/protocol/exact-ids.ts) back as the numbers
 * they are. Towards the client, every message; towards the upstream, only answers to its own requests: a
 * request taskgate forwards there keeps the alias, a string id any server can echo, where one that rounds
 * numbers would answer an id nobody asked.
 */
import { piecesWithIdAt, withIdAt } from '../protocol/envelope.js';
import { digitsOf, hasAlias, serialize } from '../protocol/exact-ids.js';
import type { RequestId } from '../protocol/messages.js';
import { Pieces, type Bytes } from '../protocol/pieces.js';
import type { ValueSpan } from '../protocol/scanned.js';
import { sendPieces, type Channel, type ChannelHandlers, type Route } from './channel.js';

export class ExactIdChannel implements Channel {
  constructor(
    private readonly inner: Channel,
    private readonly answersOnly: boolean,
  ) {}

  get handsParsed(): boolean {
    return this.inner.handsParsed === true;
  }

  start(handlers: ChannelHandlers): void {
    this.inner.start(handlers);
  }

  send(message: object, route?: Route): void {
    if (hasAlias(message) && !(this.answersOnly && 'method' in message)) {
      return this.inner.sendRaw(serialize(message), route);
    }
    this.inner.send(message, route);
  }

  sendRaw(raw: Buffer | string, route?: Route, parsed?: object): void {
    // The upstream's answer to an aliased request carries the alias it was given.
    const to = route !== undefined && 'responseTo' in route ? route.responseTo : undefined;
    if (!this.answersOnly && digitsOf(to) !== undefined) {
      const message = parsed ?? (JSON.parse(raw.toString()) as object);
      return this.inner.sendRaw(serialize({ ...message, id: to }), route);
    }
    this.inner.sendRaw(raw, route, parsed);
  }

  /** A message as the pieces it was read in: joined only where an alias is to be written back. */
  sendPieces(line: Pieces, route?: Route): void {
    const to = route !== undefined && 'responseTo' in route ? route.responseTo : undefined;
    if (!this.answersOnly && digitsOf(to) !== undefined) return this.sendRaw(line.join(), route);
    sendPieces(this.inner, line, route);
  }

  /**
   * Sends an answer as the very bytes it arrived as (issue 33), in one Buffer or in the pieces it came in:
   * `raw` holds `wireId` at `idSpan`; the peer
   * gets `route.responseTo`, written over the old id (`withIdAt`). `raw` is the sender's to give away: it
   * may be changed.
   */
  sendAnswerBytes(raw: Bytes, idSpan: ValueSpan, wireId: RequestId, route: { responseTo: RequestId }): void {
    const to = route.responseTo;
    const digits = this.answersOnly ? undefined : digitsOf(to);
    const id = digits === undefined && to === wireId ? undefined : Buffer.from(digits ?? JSON.stringify(to));
    if (raw instanceof Pieces) {
      return sendPieces(this.inner, id === undefined ? raw : piecesWithIdAt(raw, idSpan, id), route);
    }
    this.inner.sendRaw(id === undefined ? raw : withIdAt(raw, idSpan, id), route);
  }

  pauseStream(requestId: RequestId, retryMs: number | undefined): Promise<void> | undefined {
    return this.inner.pauseStream?.(requestId, retryMs);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

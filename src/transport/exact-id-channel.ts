/**
 * A channel that writes ids standing for large integers (src/protocol/exact-ids.ts) back as the numbers
 * they are. Towards the client, every message; towards the upstream, only answers to its own requests: a
 * request taskgate forwards there keeps the alias, a string id any server can echo, where one that rounds
 * numbers would answer an id nobody asked.
 */
import { digitsOf, hasAlias, serialize } from '../protocol/exact-ids.js';
import type { Channel, ChannelHandlers, Route } from './channel.js';

export class ExactIdChannel implements Channel {
  constructor(
    private readonly inner: Channel,
    private readonly answersOnly: boolean,
  ) {}

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

  close(): Promise<void> {
    return this.inner.close();
  }
}

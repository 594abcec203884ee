/**
 * An upstream with two faces (a dual-era server: 2025 sessions and 2026-07-28 requests), put on the face
 * that suits the Session's client once its initialize says who that is: the 2025 face when the 2026 face
 * lacks a capability the 2025 face offers (era.ts `legacyFaceNeeded`), else the 2026 face, translated.
 * Nothing is sent upstream before the choice; the initialize is the first message either face gets.
 */
import type { Logger } from 'pino';
import { isObject, type JsonObject } from '../protocol/messages.js';
import { readHanded } from '../protocol/read-message.js';
import type { Channel, ChannelHandlers, Route } from '../transport/channel.js';
import { legacyFaceNeeded } from './era.js';

export interface Faces {
  /** The 2026-07-28 face's capabilities (its DiscoverResult's) and the 2025 face's (its initialize's). */
  modern: JsonObject;
  legacy: JsonObject;
  openModern(): Channel;
  openLegacy(): Channel;
}

export class FaceChoosingUpstream implements Channel {
  private handlers: ChannelHandlers | undefined;
  private target: Channel | undefined;
  private closed = false;

  constructor(
    private readonly faces: Faces,
    private readonly logger: Logger,
  ) {}

  get takesCallerCapabilities(): boolean {
    return this.target?.takesCallerCapabilities === true;
  }

  get wireVersion(): string | undefined {
    return this.target?.wireVersion;
  }

  start(handlers: ChannelHandlers): void {
    this.handlers = handlers;
  }

  sendRaw(raw: Buffer | string, route?: Route, parsed?: object): void {
    if (this.closed || this.handlers === undefined) return;
    if (this.target === undefined) {
      this.target = this.choose(typeof raw === 'string' ? Buffer.from(raw) : raw, parsed);
      this.target.start(this.handlers);
    }
    this.target.sendRaw(raw, route, parsed);
  }

  send(message: object, route?: Route): void {
    this.sendRaw(JSON.stringify(message), route);
  }

  close(): Promise<void> {
    this.closed = true;
    return this.target?.close() ?? Promise.resolve();
  }

  private choose(raw: Buffer, parsed: object | undefined): Channel {
    const read = readHanded(raw, parsed, 'the session');
    const request = read.ok && read.message.kind === 'request' ? read.message.msg : undefined;
    const declared = request?.method === 'initialize' ? request.params?.capabilities : undefined;
    const lacking = legacyFaceNeeded(
      isObject(declared) ? declared : {},
      this.faces.modern,
      this.faces.legacy,
    );
    if (lacking === undefined) return this.faces.openModern();
    this.logger.info(
      `the upstream server's 2026-07-28 face lacks ${lacking}, which its 2025 face offers: this session speaks 2025 to it`,
    );
    return this.faces.openLegacy();
  }
}

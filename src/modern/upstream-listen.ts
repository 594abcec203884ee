/**
 * The one `subscriptions/listen` (basic/patterns/subscriptions.mdx) the translator holds open on a
 * 2026-07-28 upstream, so that its list changes and resource updates reach the Session as the 2025
 * notifications of the same names: the list changes the server can announce, and the resources the
 * Session's client subscribed to. A listen's filter is fixed, so a change of the subscribed URIs opens a
 * new listen and cancels the old one; one the server ends is opened again after a pause.
 */
import type { Logger } from 'pino';
import { cancellation } from '../protocol/correlation.js';
import { isObject, type JsonObject, type RequestId } from '../protocol/messages.js';

export interface UpstreamListenHost {
  send(message: object): void;
  /** The per-request `_meta` of taskgate's own requests upstream. */
  meta(): JsonObject;
  logger: Logger;
}

/** How long after the server ended a listen taskgate opens it again. */
const REOPEN_AFTER_MS = 1_000;

export class UpstreamListen {
  private readonly uris = new Set<string>();
  private current: string | undefined;
  private nextId = 1;
  private reopening: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly host: UpstreamListenHost,
    /** The server's discovered capabilities: what it can announce. */
    private readonly capabilities: JsonObject,
  ) {}

  /** Whether the server takes resource subscriptions (a 2025 client may then subscribe through taskgate). */
  get subscribable(): boolean {
    return isObject(this.capabilities.resources) && this.capabilities.resources.subscribe === true;
  }

  subscribe(uri: string): void {
    if (this.uris.has(uri)) return;
    this.uris.add(uri);
    this.open();
  }

  unsubscribe(uri: string): void {
    if (this.uris.delete(uri)) this.open();
  }

  /** Opens a listen with what is followed now (replacing the one open), if there is anything to follow. */
  open(): void {
    if (this.stopped) return;
    clearTimeout(this.reopening);
    const previous = this.current;
    const notifications = this.filter();
    this.current = notifications === undefined ? undefined : `taskgate-listen-${this.nextId++}`;
    if (this.current !== undefined) {
      this.host.send({
        jsonrpc: '2.0',
        id: this.current,
        method: 'subscriptions/listen',
        params: { notifications, _meta: this.host.meta() },
      });
    }
    if (previous !== undefined) this.cancel(previous);
  }

  /**
   * A message from the upstream that belongs to the listens themselves (an acknowledgement, the answer
   * that ends one): consumed here. Notifications they carry go on to the Session.
   */
  consumed(message: { id?: RequestId | null; method?: string }): boolean {
    if (message.method === 'notifications/subscriptions/acknowledged') return true;
    if (typeof message.id !== 'string' || !message.id.startsWith('taskgate-listen-')) return false;
    if (message.id === this.current && !this.stopped) {
      this.current = undefined;
      this.host.logger.info('the 2026-07-28 upstream ended its subscriptions/listen: opening it again');
      this.reopening = setTimeout(() => this.open(), REOPEN_AFTER_MS).unref();
    }
    return true;
  }

  /** The upstream went away: what it held is gone (opened again once it is back). */
  lost(): void {
    clearTimeout(this.reopening);
    this.current = undefined;
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.reopening);
    if (this.current !== undefined) this.cancel(this.current);
    this.current = undefined;
  }

  private filter(): JsonObject | undefined {
    const listChanged = (name: string): boolean => {
      const capability = this.capabilities[name];
      return isObject(capability) && capability.listChanged === true;
    };
    const filter: JsonObject = {};
    if (listChanged('tools')) filter.toolsListChanged = true;
    if (listChanged('prompts')) filter.promptsListChanged = true;
    if (listChanged('resources')) filter.resourcesListChanged = true;
    if (this.subscribable && this.uris.size > 0) filter.resourceSubscriptions = [...this.uris];
    return Object.keys(filter).length === 0 ? undefined : filter;
  }

  private cancel(id: string): void {
    this.host.send(cancellation(id, 'taskgate follows another set of notifications now', this.host.meta()));
  }
}

/**
 * The standalone SSE stream of a Streamable HTTP session (an HTTP GET on the MCP endpoint): where the server
 * sends requests and notifications that belong to no request of the client. Kept open for the life of the
 * session: when it drops it is opened again, with `Last-Event-ID` when its events had ids, after the delay
 * the server asked for (`retry:`) or a doubling one, capped.
 */
import type { Logger } from 'pino';
import { backoffDelay } from './backoff.js';
import { type Headers, type HttpOrigin, discard, mediaType, pause, pump, statusLine } from './http-wire.js';
import type { Bytes } from '../protocol/pieces.js';
import type { ScanFailure, Scanned } from '../protocol/scanned.js';
import { SseParser, type ScannedEvent, type SseEvent } from './sse.js';
import type { Valve } from './valve.js';

export interface StandaloneHost {
  origin: HttpOrigin;
  /** Headers for a GET in the current session (session id, protocol version, static headers). */
  headers(): Headers;
  maxMessageBytes: number;
  /** Reconnection delay: the first one, and the cap it doubles up to. */
  reconnectDelayMs: number;
  reconnectMaxDelayMs: number;
  /** While one of these is shut, the stream is not read (valve.ts). */
  paused?: readonly Valve[] | undefined;
  /** A message; a big one in the pieces it was read in, with their scan, when `takesPieces` said so. */
  deliver(raw: Bytes, scanned?: Scanned | ScanFailure): void;
  /** Whether a big message may go to `deliver` unjoined, scanned as it came (issue 33): asked as it comes. */
  takesPieces(): boolean;
  oversized(byteLength: number, head: string, tail: string): void;
  /** The server answered 404: it no longer knows the session. */
  sessionGone(): void;
  logger: Logger;
}

/** How long the session's requests wait for the stream to open (openedWithin) at most. */
export const STANDALONE_OPEN_WAIT_MS = 5_000;

type State = 'connecting' | 'open' | 'unsupported' | 'stopped';

export class StandaloneStream {
  private readonly controller = new AbortController();
  private lastEventId: string | undefined;
  private retryMs: number | undefined;
  private failures = 0;
  private state: State = 'connecting';
  private waiters: ((open: boolean) => void)[] = [];

  constructor(private readonly host: StandaloneHost) {
    this.run().catch((error: unknown) => {
      // A bug (a handler that threw): logged, and the stream is given up rather than left half-read.
      host.logger.error({ err: error }, 'upstream standalone stream: unexpected failure');
      this.stop();
    });
  }

  /** Resolves once the stream is open (true), or when the server has none or it was stopped (false). */
  settled(): Promise<boolean> {
    if (this.state === 'open') return Promise.resolve(true);
    if (this.state !== 'connecting') return Promise.resolve(false);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /**
   * Settles once the stream is open or will not be, or after `ms` while it still connects. What a server
   * asks on it, tied to no call, is lost when a call reaches the server first (the SDK drops such a
   * request while no stream is open): the session's requests wait for this.
   */
  async openedWithin(ms: number): Promise<void> {
    const bound = new AbortController();
    await Promise.race([this.settled(), pause(ms, bound.signal)]);
    bound.abort();
  }

  stop(): void {
    this.controller.abort();
    this.settle('stopped');
  }

  private settle(state: State): void {
    this.state = state;
    const waiters = this.waiters;
    this.waiters = [];
    for (const resolve of waiters) resolve(state === 'open');
  }

  private async run(): Promise<void> {
    const { signal } = this.controller;
    const log = this.host.logger;
    while (!signal.aborted) {
      const headers = this.host.headers();
      headers.accept = 'text/event-stream';
      if (this.lastEventId !== undefined) headers['last-event-id'] = this.lastEventId;
      let reply;
      try {
        reply = await this.host.origin.request('GET', headers, signal);
      } catch (error) {
        if (signal.aborted) return;
        log.debug({ err: error }, 'upstream standalone stream: connection failed');
        if (!(await this.wait())) return;
        continue;
      }
      const status = reply.statusCode;
      if (status === 405) {
        discard(reply.body);
        log.debug('upstream server offers no standalone stream (HTTP 405)');
        return this.settle('unsupported');
      }
      if (status === 404 && headers['mcp-session-id'] !== undefined) {
        discard(reply.body);
        this.stop();
        return this.host.sessionGone();
      }
      if (status !== 200 || mediaType(reply) !== 'text/event-stream') {
        discard(reply.body);
        log.debug(`upstream standalone stream refused: ${statusLine(status)}`);
        if (!(await this.wait())) return;
        continue;
      }
      this.failures = 0;
      this.settle('open');
      const error = await pump(reply.body, this.parser(), this.host.paused);
      if (signal.aborted) return;
      log.debug({ err: error }, 'upstream standalone stream dropped; reconnecting');
      this.state = 'connecting';
      if (!(await this.wait())) return;
    }
  }

  private parser(): SseParser {
    const host = this.host;
    const event = (event: SseEvent | ScannedEvent): void => {
      const { data, type, id } = event;
      if (id !== undefined) this.lastEventId = id === '' ? undefined : id;
      if (data.length > 0 && (type === '' || type === 'message')) {
        host.deliver(data, 'scanned' in event ? event.scanned : undefined);
      }
    };
    return new SseParser(this.host.maxMessageBytes, {
      event,
      get scanned() {
        return host.takesPieces() ? event : undefined;
      },
      retry: (ms) => (this.retryMs = ms),
      oversized: (bytes, head, tail) => this.host.oversized(bytes, head, tail),
    });
  }

  /** The delay before the next attempt: what the server asked for, else doubling from the first, capped. */
  private wait(): Promise<boolean> {
    const { reconnectDelayMs, reconnectMaxDelayMs } = this.host;
    const delay = this.retryMs ?? backoffDelay(reconnectDelayMs, reconnectMaxDelayMs, this.failures);
    this.failures++;
    return pause(delay, this.controller.signal);
  }
}

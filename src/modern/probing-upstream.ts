/**
 * A stdio upstream whose era is not known yet. Before anything else it is sent `server/discover` (the
 * probe basic/transports/stdio.mdx "Backward Compatibility" recommends): a DiscoverResult means
 * 2026-07-28, and the Session is served through a ModernUpstreamTranslator; any other answer, or none in
 * time, means 2025, and messages pass as they are. What the Session sends meanwhile waits, in order: a
 * dual-era server takes the first message after the probe as its choice of era, so even the Session's
 * initialize must wait for the verdict. A probe left unanswered in time is most often a server still
 * starting (`npx -y` fetching it): initialize goes to it as 2025. It may instead have taken the probe as its
 * choice of era and refuse that initialize: then the initialize goes again to a fresh process (as the SDK's
 * own client probes on a sibling process). The verdict holds for the upstream's restarts.
 */
import type { Logger } from 'pino';
import { withExactId } from '../protocol/exact-ids.js';
import { parseFrame } from '../protocol/frames.js';
import { isObject, type JsonObject } from '../protocol/messages.js';
import {
  CLIENT_CAPABILITIES_META,
  CLIENT_INFO_META,
  MODERN_VERSIONS,
  PROTOCOL_VERSION_META,
} from '../protocol/modern/meta.js';
import { chooseVersion, stdioProbeVerdict } from '../protocol/modern/probe.js';
import type { Channel, ChannelHandlers, Route } from '../transport/channel.js';
import { TASKGATE_INFO } from './defaults.js';
import { ModernUpstreamTranslator, type TranslatorOptions } from './upstream-translator.js';

const PROBE_ID = 'taskgate-era-probe';

export type UpstreamEra = 'auto' | 'legacy' | 'modern';

export class ProbingUpstream implements Channel {
  /** Where the inner channel's events go: the Session's handlers, or the translator's. */
  private receiver: ChannelHandlers | undefined;
  /** Where the Session's messages go once the era is known. */
  private target: Channel | undefined;
  private waiting: { raw: Buffer | string; route: Route | undefined; parsed: object | undefined }[] = [];
  /** Until the probe is answered, each message is looked at for its answer; after, none pays for it. */
  private probeOpen = true;
  private probeTimer: NodeJS.Timeout | undefined;
  /** The owner closed it: no verdict comes any more, and nothing waits to be sent. */
  private closed = false;
  /**
   * After a probe left unanswered: the Session's initialize, resent to a fresh process if this one refuses it
   * (`watching` until it goes out, undefined once it is answered).
   */
  private refusable: 'watching' | { id: unknown; raw: Buffer | string; route: Route | undefined } | undefined;

  /** Known once the probe is answered: before, nothing has been sent on (it all waits). */
  get takesCallerCapabilities(): boolean {
    return this.target?.takesCallerCapabilities === true;
  }

  constructor(
    private readonly inner: Channel,
    private readonly era: UpstreamEra,
    private readonly probeTimeoutMs: number,
    private readonly logger: Logger,
    private readonly translation: TranslatorOptions = {},
    /** Puts a fresh server in place of one that left the probe unanswered (a stdio child). */
    private readonly replaceUnanswered?: (reason: string) => Promise<void>,
  ) {}

  start(handlers: ChannelHandlers): void {
    if (this.era === 'legacy') {
      this.target = this.inner;
      this.inner.start(handlers);
      return;
    }
    const decide = (discover: JsonObject | undefined, why: string): void => {
      if (this.target !== undefined || this.closed) return;
      clearTimeout(this.probeTimer);
      this.decided(handlers, discover, why);
    };
    this.probeTimer = setTimeout(() => {
      if (this.replaceUnanswered !== undefined) this.refusable = 'watching';
      decide(undefined, `no answer within ${this.probeTimeoutMs} ms`);
    }, this.probeTimeoutMs).unref();
    this.inner.start({
      message: (raw, arrival) => {
        if (this.probeOpen && isProbeAnswer(raw)) {
          this.probeOpen = false;
          const answer = parsed(raw);
          return answer === undefined ? undefined : decide(discoverOf(answer), describe(answer));
        }
        if (typeof this.refusable === 'object' && this.resentRefused(raw)) return;
        if (this.target !== undefined) this.receiver?.message(raw, arrival);
      },
      malformed: (error, id) => this.receiver?.malformed(error, id) ?? handlers.malformed(error, id),
      closed: (info) => {
        decide(undefined, `it went away first (${info.reason})`);
        this.receiver?.closed(info);
      },
      reopened: () => this.receiver?.reopened?.(),
    });
    this.inner.send({
      jsonrpc: '2.0',
      id: PROBE_ID,
      method: 'server/discover',
      params: {
        _meta: {
          [PROTOCOL_VERSION_META]: MODERN_VERSIONS[0],
          [CLIENT_CAPABILITIES_META]: {},
          [CLIENT_INFO_META]: TASKGATE_INFO,
        },
      },
    });
  }

  sendRaw(raw: Buffer | string, route?: Route, parsed?: object): void {
    if (this.target === undefined) {
      if (!this.closed) this.waiting.push({ raw, route, parsed });
      return;
    }
    if (this.refusable === 'watching') this.watchInitialize(raw, route, parsed);
    this.target.sendRaw(raw, route, parsed);
  }

  send(message: object, route?: Route): void {
    this.sendRaw(JSON.stringify(message), route);
  }

  /**
   * Through the translator once there is one: hearing no `closed` for it, it ends its own calls itself.
   * Before the verdict, the probe is given up and what waited for it dropped.
   */
  close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.probeTimer);
    this.waiting = [];
    return (this.target ?? this.inner).close();
  }

  private decided(handlers: ChannelHandlers, discover: JsonObject | undefined, why: string): void {
    const version =
      discover === undefined
        ? undefined
        : chooseVersion(MODERN_VERSIONS, stringsOf(discover.supportedVersions) ?? MODERN_VERSIONS);
    if (discover === undefined || version === undefined || this.era === 'legacy') {
      if (this.era === 'modern') {
        this.logger.warn(
          `upstream.era is modern, but the upstream server did not answer server/discover (${why}): speaking 2025 to it`,
        );
      } else this.logger.info(`the upstream server speaks 2025 (server/discover: ${why})`);
      this.receiver = handlers;
      this.target = this.inner;
    } else {
      this.logger.info(`the upstream server speaks ${version}: taskgate translates for 2025 clients`);
      const translator = new ModernUpstreamTranslator(
        this.innerView(),
        discover,
        version,
        this.logger,
        this.translation,
      );
      this.target = translator;
      translator.start(handlers);
    }
    const waiting = this.waiting;
    this.waiting = [];
    for (const { raw, route, parsed } of waiting) this.sendRaw(raw, route, parsed);
  }

  private watchInitialize(raw: Buffer | string, route: Route | undefined, given: object | undefined): void {
    const message =
      (given as JsonObject | undefined) ?? parsed(typeof raw === 'string' ? Buffer.from(raw) : raw);
    if (message?.method === 'initialize' && message.id !== undefined) {
      this.refusable = { id: message.id, raw, route };
    }
  }

  /**
   * Whether `raw` was the watched initialize's refusal, then sent again to a fresh process: a server that
   * took the unanswered probe as its choice of era refuses a 2025 handshake (an inner taskgate does, -32601).
   */
  private resentRefused(raw: Buffer): boolean {
    const watched = this.refusable;
    if (typeof watched !== 'object') return false;
    const answer = parsed(raw);
    if (answer === undefined || answer.id !== watched.id || 'method' in answer) return false;
    this.refusable = undefined;
    if (!isObject(answer.error) || this.replaceUnanswered === undefined) return false;
    const reason = `initialize was refused (${describe(answer)}) after server/discover went unanswered`;
    void this.replaceUnanswered(reason).then(() => {
      if (!this.closed) this.inner.sendRaw(watched.raw, watched.route);
    });
    return true;
  }

  /** The inner channel as the translator sees it: started already, its events handed on. */
  private innerView(): Channel {
    return {
      start: (handlers) => (this.receiver = handlers),
      sendRaw: (raw, route, parsed) => this.inner.sendRaw(raw, route, parsed),
      send: (message, route) => this.inner.send(message, route),
      close: () => this.inner.close(),
    };
  }
}

function isProbeAnswer(raw: Buffer): boolean {
  return raw.includes(PROBE_ID) && parsed(raw)?.id === PROBE_ID;
}

function parsed(raw: Buffer): JsonObject | undefined {
  try {
    const value = withExactId(parseFrame(raw, 'the upstream server'), raw);
    return isObject(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** The DiscoverResult of a modern answer; undefined for a legacy one (or a modern error). */
function discoverOf(answer: JsonObject): JsonObject | undefined {
  if (stdioProbeVerdict(answer).era !== 'modern') return undefined;
  return isObject(answer.result) ? answer.result : undefined;
}

function describe(answer: JsonObject): string {
  if (isObject(answer.error)) return `error ${String(answer.error.code)} ${String(answer.error.message)}`;
  return isObject(answer.result) ? 'a result' : 'an unreadable answer';
}

function stringsOf(value: unknown): string[] | undefined {
  return Array.isArray(value) && value.every((each) => typeof each === 'string') ? value : undefined;
}

/**
 * A stdio upstream whose era is not known yet. Before anything else it is sent `server/discover` (the
 * probe basic/transports/stdio.mdx "Backward Compatibility" recommends): a DiscoverResult means
 * 2026-07-28, and the Session is served through a ModernUpstreamTranslator; any other answer, or none in
 * time, means 2025, and messages pass as they are. What the Session sends meanwhile waits, in order: a
 * dual-era server takes the first message after the probe as its choice of era, so even the Session's
 * initialize must wait for the verdict. A probe left unanswered in time is most often a server still
 * starting (`npx -y` fetching it): initialize goes to it as 2025. It may instead have taken the probe as its
 * choice of era and refuse that initialize: then, if it answered the probe meanwhile with a DiscoverResult,
 * that answer decides after all (the initialize goes through a translator to the same process: no second
 * slow start, as an inner taskgate on a loaded machine would take); if not, the initialize goes again to a
 * fresh process (as the SDK's own client probes on a sibling process). The verdict holds for the
 * upstream's restarts.
 */
import type { Logger } from 'pino';
import { withExactId } from '../protocol/exact-ids.js';
import { parseFrame } from '../protocol/frames.js';
import type { Pieces } from '../protocol/pieces.js';
import type { Scanned } from '../protocol/scanned.js';
import { isObject, type JsonObject } from '../protocol/messages.js';
import {
  CLIENT_CAPABILITIES_META,
  CLIENT_INFO_META,
  MODERN_VERSIONS,
  PROTOCOL_VERSION_META,
} from '../protocol/modern/meta.js';
import { chooseVersion, stdioProbeVerdict } from '../protocol/modern/probe.js';
import {
  deliverPieces,
  type Arrival,
  type Channel,
  type ChannelHandlers,
  type Route,
} from '../transport/channel.js';
import { TASKGATE_INFO } from './defaults.js';
import { ModernUpstreamTranslator, type TranslatorOptions } from './upstream-translator.js';

const PROBE_ID = 'taskgate-era-probe';

export type UpstreamEra = 'auto' | 'legacy' | 'modern';

/** The Session's initialize, as it went out after a probe left unanswered. */
interface Watched {
  id: unknown;
  raw: Buffer | string;
  route: Route | undefined;
}

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
  private refusable: 'watching' | Watched | undefined;
  /** A DiscoverResult that came after the probe was given up: it decides if the initialize is refused. */
  private lateDiscover: JsonObject | undefined;
  /** A refused initialize waiting (probeTimeoutMs at most) for the late probe answer that may decide. */
  private heldRefusal: { watched: Watched; why: string; timer: NodeJS.Timeout } | undefined;

  /** Known once the probe is answered: before, nothing has been sent on (it all waits). */
  get takesCallerCapabilities(): boolean {
    return this.target?.takesCallerCapabilities === true;
  }

  get wireVersion(): string | undefined {
    return this.target?.wireVersion;
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
    const message = (raw: Buffer, arrival: Arrival | undefined): void => {
      if (this.probeOpen && isProbeAnswer(raw)) {
        this.probeOpen = false;
        const answer = parsed(raw);
        if (answer === undefined) return;
        if (this.target !== undefined) return this.answeredLate(answer);
        return decide(discoverOf(answer), describe(answer));
      }
      if (typeof this.refusable === 'object' && this.resentRefused(raw)) return;
      if (this.target !== undefined) this.receiver?.message(raw, arrival);
    };
    const receiverOf = (): ChannelHandlers | undefined => this.receiver;
    const pieces = (line: Pieces, scanned: Scanned, arrival?: Arrival): void => {
      const receiver = this.receiver;
      if (this.probeOpen || typeof this.refusable === 'object' || this.target === undefined || !receiver) {
        return message(line.join(), arrival);
      }
      deliverPieces(receiver, line, scanned, arrival);
    };
    this.inner.start({
      message,
      // Once decided and watching nothing, to a receiver that takes pieces: a message goes on as it came.
      get pieces() {
        return receiverOf()?.pieces === undefined ? undefined : pieces;
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
    clearTimeout(this.heldRefusal?.timer);
    this.waiting = [];
    return (this.target ?? this.inner).close();
  }

  private decided(handlers: ChannelHandlers, discover: JsonObject | undefined, why: string): void {
    const version = discover === undefined ? undefined : versionOf(discover);
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
      this.translate(handlers, discover, version);
    }
    const waiting = this.waiting;
    this.waiting = [];
    for (const { raw, route, parsed } of waiting) this.sendRaw(raw, route, parsed);
  }

  private translate(handlers: ChannelHandlers, discover: JsonObject, version: string): void {
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

  private watchInitialize(raw: Buffer | string, route: Route | undefined, given: object | undefined): void {
    const message =
      (given as JsonObject | undefined) ?? parsed(typeof raw === 'string' ? Buffer.from(raw) : raw);
    if (message?.method === 'initialize' && message.id !== undefined) {
      this.refusable = { id: message.id, raw, route };
    }
  }

  /**
   * Whether `raw` was the watched initialize's refusal, then sent again (`resend`): a server that took the
   * unanswered probe as its choice of era refuses a 2025 handshake (an inner taskgate does). The refusal
   * may come before the probe's answer (an inner taskgate answers server/discover only once its own
   * upstream is up): then it waits for that answer, probeTimeoutMs at most.
   */
  private resentRefused(raw: Buffer): boolean {
    const watched = this.refusable;
    if (typeof watched !== 'object') return false;
    const answer = parsed(raw);
    if (answer === undefined || answer.id !== watched.id || 'method' in answer) return false;
    this.refusable = undefined;
    const replace = this.replaceUnanswered;
    if (!isObject(answer.error) || replace === undefined) return false;
    const why = describe(answer);
    if (this.lateDiscover !== undefined || !this.probeOpen) {
      this.resend(watched, why, replace);
      return true;
    }
    const timer = setTimeout(() => {
      this.heldRefusal = undefined;
      this.resend(watched, why, replace);
    }, this.probeTimeoutMs).unref();
    this.heldRefusal = { watched, why, timer };
    return true;
  }

  /** The probe's answer, after the verdict: it decides for an initialize that is (or will be) refused. */
  private answeredLate(answer: JsonObject): void {
    this.lateDiscover = discoverOf(answer);
    const held = this.heldRefusal;
    if (held === undefined || this.replaceUnanswered === undefined) return;
    clearTimeout(held.timer);
    this.heldRefusal = undefined;
    this.resend(held.watched, held.why, this.replaceUnanswered);
  }

  /**
   * The refused initialize sent again: through a translator to the same process if it answered the probe
   * late with a DiscoverResult (no second start, slow as the first on a loaded machine); else to a fresh
   * process.
   */
  private resend(watched: Watched, why: string, replace: (reason: string) => Promise<void>): void {
    if (this.closed) return;
    const discover = this.lateDiscover;
    const version = discover === undefined ? undefined : versionOf(discover);
    if (discover !== undefined && version !== undefined && this.receiver !== undefined) {
      this.logger.info(
        `the upstream server answered server/discover late and refused the 2025 initialize (${why}): it speaks ${version}, taskgate translates for 2025 clients`,
      );
      this.translate(this.receiver, discover, version);
      this.target!.sendRaw(watched.raw, watched.route);
      return;
    }
    const reason = `initialize was refused (${why}) after server/discover went unanswered`;
    void replace(reason).then(() => {
      if (!this.closed) this.inner.sendRaw(watched.raw, watched.route);
    });
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

/** The version taskgate speaks to a server whose DiscoverResult this is; undefined if none it knows. */
function versionOf(discover: JsonObject): string | undefined {
  return chooseVersion(MODERN_VERSIONS, stringsOf(discover.supportedVersions) ?? MODERN_VERSIONS);
}

function stringsOf(value: unknown): string[] | undefined {
  return Array.isArray(value) && value.every((each) => typeof each === 'string') ? value : undefined;
}

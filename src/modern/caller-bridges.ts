/**
 * The HTTP front's 2026-07-28 callers, each on a bridge of its own (issue 28): a caller is its identity,
 * else its client's address, and its bridge's session has an upstream of its own as a 2025 session's has
 * (its own server under `sharing: session`, a port of the shared one or of the pool otherwise). What the
 * server asks on an upstream that serves one caller is that caller's: Bob's question never reaches Alice.
 *
 * At most `maxCallers` bridges. One with nothing in flight for `idleMs` is retired, and so is the least
 * recently used one with nothing in flight when a newcomer needs room: its session lingers until its
 * tasks are over (their results stay in the store for any bridge of the caller), then stops its upstream.
 * With every bridge busy, a newcomer is refused.
 */
import type { Logger } from 'pino';
import { ErrorCode } from '../protocol/errors.js';
import { errorResponse } from '../protocol/messages.js';
import { type AnswerSink, type ModernAnswer, type ModernExchange } from '../protocol/modern/exchange.js';
import { toModernError } from '../protocol/modern/results.js';
import type { Valve } from '../transport/valve.js';
import { SharedModernBridge, type OpenedBridge } from './shared-bridge.js';

export interface CallerBridgeLimits {
  maxCallers: number;
  idleMs: number;
}

interface CallerBridge {
  bridge: SharedModernBridge;
  inFlight: number;
  lastUsed: number;
}

/** The key of a request without a caller (a front that names none: one client). */
const THE_CLIENT = '';

export class CallerBridges {
  /** By caller, least recently used first. */
  private readonly byCaller = new Map<string, CallerBridge>();
  /** The entry last in byCaller: one caller's requests in a row do not move it (a delete and a set each). */
  private mostRecent: CallerBridge | undefined;
  private readonly retiring = new Set<Promise<void>>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    /** `first`: the request that needs it opened (its caller's identity, for servers bound to it). */
    private readonly open: (caller: string | undefined, first: ModernExchange) => Promise<OpenedBridge>,
    private readonly limits: CallerBridgeLimits,
    private readonly logger: Logger,
  ) {
    this.sweeper = setInterval(() => this.retireIdle(), Math.max(1_000, limits.idleMs / 4)).unref();
  }

  /** Serves the exchange on its caller's bridge, into `sink`, counted in flight until it is answered. */
  readonly serveTo = (exchange: ModernExchange, sink: AnswerSink): void => {
    const key = exchange.caller ?? THE_CLIENT;
    const entry = this.byCaller.get(key) ?? this.opened(key, exchange.caller);
    if (entry === undefined) return sink.answer(this.refuse(exchange));
    // Most recently used last.
    if (entry !== this.mostRecent) {
      this.byCaller.delete(key);
      this.byCaller.set(key, entry);
      this.mostRecent = entry;
    }
    entry.inFlight++;
    entry.bridge.serveTo(exchange, new CountedSink(entry, sink));
  };

  /** The valve the caller's bridge's stdio server shuts while its stdin is behind, if there is one. */
  intakeOf(caller: string | undefined): Valve | undefined {
    return this.byCaller.get(caller ?? THE_CLIENT)?.bridge.intake;
  }

  get size(): number {
    return this.byCaller.size;
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    const bridges = [...this.byCaller.values()];
    this.byCaller.clear();
    await Promise.all([...bridges.map(({ bridge }) => bridge.close()), ...this.retiring]);
  }

  private opened(key: string, caller: string | undefined): CallerBridge | undefined {
    if (this.byCaller.size >= this.limits.maxCallers) {
      const idlest = [...this.byCaller].find(([, entry]) => entry.inFlight === 0);
      if (idlest === undefined) return undefined;
      this.retire(idlest[0], 'another caller needed its room');
    }
    const entry: CallerBridge = {
      bridge: new SharedModernBridge((first) => this.open(caller, first)),
      inFlight: 0,
      lastUsed: Date.now(),
    };
    this.byCaller.set(key, entry);
    return entry;
  }

  private retireIdle(): void {
    const before = Date.now() - this.limits.idleMs;
    for (const [key, entry] of this.byCaller) {
      if (entry.inFlight === 0 && entry.lastUsed < before) this.retire(key, 'its caller was idle');
    }
  }

  private retire(key: string, why: string): void {
    const entry = this.byCaller.get(key);
    if (entry === undefined) return;
    this.byCaller.delete(key);
    this.logger.info({ callers: this.byCaller.size }, `a 2026-07-28 caller's bridge is retired: ${why}`);
    const retiring = entry.bridge.retire();
    this.retiring.add(retiring);
    void retiring.finally(() => this.retiring.delete(retiring));
  }

  private refuse({ request }: ModernExchange): ModernAnswer {
    return {
      response: errorResponse(
        request.id,
        toModernError(request.method, {
          code: ErrorCode.LimitExceeded,
          message: `taskgate serves at most ${this.limits.maxCallers} 2026-07-28 callers at once (http.maxSessions), and every one has a request in flight: try again shortly`,
        }),
      ),
    };
  }
}

/** A sink that counts its bridge's request over once it is answered, then hands the answer on. */
class CountedSink implements AnswerSink {
  constructor(
    private readonly entry: CallerBridge,
    private readonly sink: AnswerSink,
  ) {}

  answer(answer: ModernAnswer): void {
    this.over();
    this.sink.answer(answer);
  }

  failed(error: unknown): void {
    this.over();
    this.sink.failed(error);
  }

  private over(): void {
    this.entry.inFlight--;
    this.entry.lastUsed = Date.now();
  }
}

/**
 * How a bridge is put together (a Session whose client end takes values, the bridge as its 2025 client), and a
 * caller's bridge on the HTTP front (caller-bridges.ts): opened on its first request, opened again when
 * its upstream is gone for good.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { goneError } from '../protocol/correlation.js';
import { errorResponse } from '../protocol/messages.js';
import type { AnswerSink, ModernExchange } from '../protocol/modern/exchange.js';
import { toModernError } from '../protocol/modern/results.js';
import { ALL_VERSIONS } from '../protocol/versions.js';
import { Session, type SessionEvents, type SessionOptions } from '../session/session.js';
import type { Channel } from '../transport/channel.js';
import { ValueClient } from '../session/value-client.js';
import type { Valve } from '../transport/valve.js';
import { ModernBridge } from './bridge.js';
import {
  MODERN_INPUT_WAIT_MS,
  MODERN_LISTEN_SHARES,
  MODERN_PARKED_SHARES,
  TASKGATE_INFO,
  modernTaskShares,
} from './defaults.js';
import { Settling } from './settling.js';

export interface BridgedSession {
  bridge: ModernBridge;
  session: Session;
}

/**
 * A started bridge on `client`, the client end `session` serves in front of `upstream`; `oneCaller` when
 * every request it carries comes from one client connection (stdio).
 */
export function startBridge(
  client: ValueClient,
  session: Session,
  options: SessionOptions,
  upstream: Channel,
  oneCaller = false,
): ModernBridge {
  const bridge = new ModernBridge({
    session: {
      take: (request, context) => session.take(request, context),
      takeMessage: (message) => session.takeMessage(message),
      listen: (receiver) => client.listen(receiver),
      end: () => client.end(),
    },
    logger: options.logger,
    supportedVersions: ALL_VERSIONS,
    // Replicas sharing a store know each other by its executor ids: a retry can be carried to its call.
    replica: options.store.inputs?.self ?? options.id,
    inputWaitMs: MODERN_INPUT_WAIT_MS,
    parkedShares: MODERN_PARKED_SHARES,
    listenShares: MODERN_LISTEN_SHARES,
    clientInfo: TASKGATE_INFO,
    taskShares: modernTaskShares(options.config.tasks.maxTasks),
    ...(options.store.inputs === undefined ? {} : { taskInputs: options.store.inputs }),
    ...(options.limits === undefined ? {} : { limits: options.limits }),
    defaultCaller: session.caller,
    ...(options.audit === undefined ? {} : { audit: { log: options.audit, session: options.id } }),
    upstreamTakesCallerCapabilities: () => upstream.takesCallerCapabilities === true,
  });
  session.servesCallers(oneCaller);
  bridge.start();
  return bridge;
}

/** A Session between `upstream` and a new bridge, both started. */
export function bridgeSession(
  upstream: Channel,
  options: SessionOptions,
  events: SessionEvents,
): BridgedSession {
  const client = new ValueClient();
  const session = new Session(client, upstream, options, events);
  session.start();
  return { bridge: startBridge(client, session, options, upstream), session };
}

export interface OpenedBridge {
  bridge: ModernBridge;
  /** Settles once the bridge's session is over. */
  ended: Promise<void>;
  /** Shut while its stdio server's stdin is behind (valve.ts); absent for other upstreams. */
  intake?: Valve | undefined;
  /** Ends it once its tasks are over, then stops its upstream. */
  retire(): Promise<void>;
  /** Ends it now: its upstream is stopped, what runs there with it. */
  close(): Promise<void>;
}

export interface ModernSessionParts {
  logger: Logger;
  openChannel(
    logger: Logger,
  ): Promise<{ channel: Channel; stop(): Promise<void>; intake?: Valve | undefined }>;
  sessionOptions(id: string, logger: Logger): SessionOptions;
}

/** Opens an upstream and a bridged session on it; the session ends when its upstream is gone for good. */
export async function openModernSession(parts: ModernSessionParts): Promise<OpenedBridge> {
  const upstream = await parts.openChannel(parts.logger);
  let ended!: () => void;
  const over = new Promise<void>((resolve) => (ended = resolve));
  const { bridge, session } = bridgeSession(
    upstream.channel,
    { ...parts.sessionOptions(`modern-${randomUUID()}`, parts.logger), lingerForTasks: true },
    {
      upstreamGone: () => void session.close(),
      closed: async () => {
        await upstream.stop();
        ended();
      },
    },
  );
  return {
    bridge,
    ended: over,
    intake: upstream.intake,
    retire: () => session.close(),
    close: async () => {
      // A stopped upstream ends the tasks the session would linger for.
      const closing = session.close();
      await upstream.stop();
      await closing;
    },
  };
}

export class SharedModernBridge {
  /** The current bridge, being opened or open (its value, once it is: served without waiting on it). */
  private opening: Settling<OpenedBridge> | undefined;

  constructor(private readonly open: (first: ModernExchange) => Promise<OpenedBridge>) {}

  /** Serves the exchange into `sink` on the open bridge, at once when it is open. */
  serveTo(exchange: ModernExchange, sink: AnswerSink): void {
    const opened = this.opening?.value;
    if (opened !== undefined) return opened.bridge.serveTo(exchange, sink);
    this.current(exchange).then(
      (bridge) => bridge.bridge.serveTo(exchange, sink),
      (error: unknown) => {
        const { request } = exchange;
        const reason = error instanceof Error ? error.message : 'it could not be started';
        sink.answer({
          response: errorResponse(request.id, toModernError(request.method, goneError('upstream', reason))),
        });
      },
    );
  }

  /** The open bridge's intake valve, if it has one. */
  get intake(): Valve | undefined {
    return this.opening?.value?.intake;
  }

  async close(): Promise<void> {
    await (await this.taken())?.close();
  }

  async retire(): Promise<void> {
    await (await this.taken())?.retire();
  }

  /** The bridge, if one was opened, no longer this one's: requests that come later open another. */
  private async taken(): Promise<OpenedBridge | undefined> {
    const opening = this.opening;
    this.opening = undefined;
    return opening?.promise.catch(() => undefined);
  }

  private current(first: ModernExchange): Promise<OpenedBridge> {
    if (this.opening === undefined) {
      const opening = new Settling(this.open(first));
      this.opening = opening;
      opening.promise.then(
        (opened) => {
          void opened.ended.then(() => {
            if (this.opening === opening) this.opening = undefined;
          });
        },
        () => {
          if (this.opening === opening) this.opening = undefined;
        },
      );
    }
    return this.opening.promise;
  }
}

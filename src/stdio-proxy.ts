/**
 * taskgate on stdio: the client spawned us, we spawn the upstream server. Resolves with the exit code
 * once the client has gone away (0), or once the upstream failed before it ever answered (1).
 */
import { randomUUID } from 'node:crypto';
import type { Config } from './config/schema.js';
import { Policy } from './config/policy.js';
import type { Logger } from 'pino';
import { startAdminListener, type AdminListener } from './observability/admin.js';
import { createLogger } from './observability/logger.js';
import { Metrics } from './observability/metrics.js';
import { observeTasks } from './observability/observe.js';
import type { Routes } from './observability/routes.js';
import { countingDenials, createAuditLog } from './observability/audit.js';
import { Limits } from './security/limits.js';
import { Session, type SessionOptions } from './session/session.js';
import { ModernChannelFront } from './modern/channel-front.js';
import { opensModernConnection } from './modern/era.js';
import { startBridge } from './modern/shared-bridge.js';
import { DeferredChannel } from './transport/deferred-channel.js';
import { memoryChannelPair } from './transport/memory-channel.js';
import { awaitFirstMessage } from './transport/held-channel.js';
import { openStore } from './store.js';
import { LineChannel } from './transport/line-channel.js';
import { openUpstream } from './upstream.js';

/** How long a client that has not asked anything yet is waited for, to get the reason as its answer. */
const UNANSWERED_CLIENT_GRACE_MS = 2_000;

export async function startStdioProxy(config: Config): Promise<number> {
  const logger = createLogger(config.logLevel);
  const metrics = new Metrics();
  const tasks = await openStore(config, logger, { onExpired: (record) => metrics.taskExpired(record) });
  const observed = observeTasks(tasks, metrics, logger);
  const store = observed.store;
  metrics.observeSessions(() => 1);
  // The admin listener first: a taken address fails the run before any server is started.
  const admin = await startAdmin(config, observed.routes, logger);
  const upstream = await openUpstream(config, logger, { restarted: () => metrics.upstreamRestarted() }).catch(
    async (error: unknown) => {
      await admin?.close();
      throw error;
    },
  );
  // eslint-disable-next-line no-restricted-properties -- stdout is the client's channel in stdio mode
  const client = new LineChannel(process.stdin, process.stdout, config.maxMessageBytes, 'the client');

  const audit = countingDenials(createAuditLog(logger, store, config.audit), (subject) =>
    metrics.taskLookupDenied(subject),
  );
  const id = `stdio-${randomUUID()}`;
  const options: SessionOptions = {
    id,
    config,
    policy: new Policy(config),
    store,
    logger,
    limits: new Limits(config.limits, (limit) => {
      metrics.limitRefused(limit);
      audit.limitHit(limit, { session: id });
    }),
    audit,
    onUpstreamAnswer: (method, seconds) => metrics.upstreamLatency(method, seconds),
    sightings: observed.board.sightingsOf(id),
  };
  // The session starts at once, to watch the upstream; its client is known from the first message.
  const toClient = new DeferredChannel();
  return new Promise<number>((resolve) => {
    let exitCode = 0;
    let stopFront: () => void = () => undefined;
    const session = new Session(toClient, upstream.channel, options, {
      upstreamGone: (state) => {
        if (state.initialized) return;
        logger.error(
          `the upstream server "${upstream.description}" stopped before it answered initialize (${state.goneReason}); exiting`,
        );
        exitCode = 1;
        session.closeOnceAnswered(UNANSWERED_CLIENT_GRACE_MS);
      },
      closed: async () => {
        stopFront();
        await upstream.stop();
        await admin?.close();
        observed.close();
        await store.close();
        resolve(exitCode);
      },
    });
    session.start();
    void awaitFirstMessage(client).then(({ first, channel }) => {
      if (first === undefined || !opensModernConnection(first)) return toClient.connect(channel);
      // A 2026-07-28 client: the bridge is the 2025 client of this connection's session.
      const pair = memoryChannelPair();
      toClient.connect(pair.a);
      const bridge = startBridge(pair.b, session, options, upstream.channel);
      const front = new ModernChannelFront(channel, bridge, logger, () => void session.close());
      stopFront = () => void front.close();
      front.start();
    });
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      process.once(signal, () => {
        logger.info(`taskgate is shutting down (${signal}): closing the session and the upstream server`);
        void session.close();
      });
    }
  });
}

async function startAdmin(
  config: Config,
  routes: Routes,
  logger: Logger,
): Promise<AdminListener | undefined> {
  if (config.admin.listen === undefined) return undefined;
  const admin = await startAdminListener(config.admin.listen, routes, logger);
  logger.info({ url: admin.url.href }, 'admin listener: /metrics, /healthz, /dashboard');
  return admin;
}

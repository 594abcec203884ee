/**
 * What a stdio run serves its one client with, before any server is started: the logger, the metrics
 * (prom-client only with an admin listener to show them), telemetry, the task store and the core, and the
 * admin listener, whose taken address fails the run first.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Config } from './config/schema.js';
import { openCore, startAdmin, type Core, type ReadinessHooks } from './composition.js';
import type { AdminListener } from './observability/admin.js';
import { createLogger } from './observability/logger.js';
import type { Metrics } from './observability/metrics.js';
import { UNREAD_METRICS } from './observability/unread-metrics.js';
import { openStore } from './store.js';
import type { TaskStore } from './tasks/store.js';
import { startTelemetry } from './telemetry/start.js';
import type { Telemetry } from './telemetry/telemetry.js';

export interface StdioCore {
  logger: Logger;
  metrics: Metrics;
  telemetry: Telemetry;
  tasks: TaskStore;
  /** The one session's id: whatever hits a limit, it was this session. */
  id: string;
  core: Core;
  admin: AdminListener | undefined;
  /** Closes the admin listener, the core and the store (not telemetry: it reports the run's end). */
  close(): Promise<void>;
}

async function openMetrics(config: Config): Promise<Metrics> {
  if (config.admin.listen === undefined) return UNREAD_METRICS;
  return new (await import('./observability/metrics.js')).PrometheusMetrics({
    servers: config.upstreams !== undefined,
  });
}

/** `readiness`: what the admin listener's /readyz answers from (the one upstream's unless given). */
export async function openStdioCore(config: Config, readiness?: ReadinessHooks): Promise<StdioCore> {
  const logger = createLogger(config.logLevel);
  const metrics = await openMetrics(config);
  const telemetry = await startTelemetry(config, logger);
  const tasks = await openStore(config, logger, { onExpired: (record) => metrics.taskExpired(record) });
  const id = `stdio-${randomUUID()}`;
  const core = openCore(config, logger, tasks, metrics, { limitCaller: () => ({ session: id }) });
  metrics.observeSessions(() => 1);
  const closeCore = async (): Promise<void> => {
    core.close();
    await tasks.close();
  };
  const admin = await startAdmin(config, core.observed, logger, readiness).catch(async (error: unknown) => {
    await closeCore();
    throw error;
  });
  return {
    logger,
    metrics,
    telemetry,
    tasks,
    id,
    core,
    admin,
    close: async () => {
      await admin?.close();
      await closeCore();
    },
  };
}

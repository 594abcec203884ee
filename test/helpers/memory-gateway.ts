/**
 * taskgate's HTTP gateway in the test's own process, on the memory store, logging nothing: what the
 * in-process HTTP tests start in front of their servers.
 */
import { pino } from 'pino';
import type { Config } from '../../src/config/schema.js';
import { startHttpGateway, type RunningGateway } from '../../src/http-proxy.js';
import { PrometheusMetrics } from '../../src/observability/metrics.js';
import { MemoryTaskStore } from '../../src/tasks/memory-store.js';

/** Started with `config`; `metrics` when the test watches them. */
export function memoryGateway(
  config: Config,
  metrics: PrometheusMetrics = new PrometheusMetrics({ defaultMetrics: false }),
): Promise<RunningGateway> {
  const store = new MemoryTaskStore({
    maxTasks: config.tasks.maxTasks,
    maxResultBytes: config.tasks.maxResultBytes,
  });
  return startHttpGateway(config, pino({ level: 'silent' }), store, metrics);
}

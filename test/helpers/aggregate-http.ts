/**
 * taskgate's HTTP front in front of several servers (`upstreams`, issue 32), in the test's own process:
 * startHttpGateway with each server an SDK 1.x one on a real socket of its own (in-process-http.ts), spoken
 * to as a 2025 server, and one MemoryTaskStore.
 */
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { pino, type Logger } from 'pino';
import { resolveConfig } from '../../src/config/load.js';
import type { ConfigInput } from '../../src/config/schema.js';
import { startHttpGateway } from '../../src/http-proxy.js';
import { PrometheusMetrics } from '../../src/observability/metrics.js';
import { MemoryTaskStore } from '../../src/tasks/memory-store.js';
import { serveInProcess } from './in-process-http.js';

export interface AggregateHttpOptions {
  /** How it knows callers (none: callers are not identified). */
  auth?: ConfigInput['auth'];
  /** Where it listens; a free port of 127.0.0.1 unless set. */
  listen?: string;
  /** What it logs (the audit lines among them); nothing unless set. */
  logger?: Logger;
  /** The servers mounted without prefix (`prefix: false`); every one has its prefix unless named here. */
  withoutPrefix?: string[];
}

/**
 * The gateway in front of `servers` (name → a new SDK server for each session). What is opened is closed by
 * `closing` (pushed on).
 */
export async function aggregateHttpGateway(
  closing: (() => Promise<unknown>)[],
  servers: Record<string, () => Server>,
  {
    auth = {},
    listen = '127.0.0.1:0',
    logger = pino({ level: 'silent' }),
    withoutPrefix = [],
  }: AggregateHttpOptions = {},
): Promise<URL> {
  const upstreams: Record<string, { url: string; era: 'legacy'; prefix: boolean }> = {};
  for (const [name, makeServer] of Object.entries(servers)) {
    const http = await serveInProcess(makeServer, name);
    closing.push(() => http.close());
    upstreams[name] = { url: http.url, era: 'legacy', prefix: !withoutPrefix.includes(name) };
  }
  const config = resolveConfig({ http: { listen }, upstreams, auth });
  const store = new MemoryTaskStore({ maxTasks: 100, maxResultBytes: 1_000_000 });
  const running = await startHttpGateway(
    config,
    logger,
    store,
    new PrometheusMetrics({ defaultMetrics: false, servers: true }),
  );
  closing.push(async () => {
    await running.close();
    await store.close();
  });
  return running.url;
}

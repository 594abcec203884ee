/**
 * taskgate's core as a process composes it (composition.ts's openCore: the observed store, the per-caller
 * limits, the audit log counted in the metrics), in the test's own process: each caller gets a Session of
 * its own with its identity, as the HTTP front opens one for an authenticated caller, and an SDK 1.x
 * Client over a memory channel pair; behind each Session the legacy fixture's server. The JSON log lines
 * (the audit log among them) are collected in `log`.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { pino } from 'pino';
import { openCore } from '../../src/composition.js';
import { resolveConfig } from '../../src/config/load.js';
import type { ConfigInput } from '../../src/config/schema.js';
import { PrometheusMetrics } from '../../src/observability/metrics.js';
import { Session } from '../../src/session/session.js';
import { MemoryTaskStore } from '../../src/tasks/memory-store.js';
import { memoryChannelPair } from '../../src/transport/memory-channel.js';
import { createLegacyServer } from '../fixtures/legacy-fixture.js';
import { ChannelTransport } from './channel-transport.js';
import { CheckedTransport } from './checked-transport.js';
import type { Identified } from './in-process-callers.js';
import { TASK_AWARE } from './taskgate.js';

export interface CoreGateway {
  /** A task-aware 2025 client on a Session of its own, bound to `as`. */
  caller(as: Identified): Promise<Client>;
  /** The exposition text of taskgate's metrics, as /metrics serves it. */
  metrics(): Promise<string>;
  /** Every log line taskgate wrote, parsed. */
  readonly log: Record<string, unknown>[];
  /** Schema violations in what the clients received. */
  readonly violations: string[];
  close(): Promise<void>;
}

export async function coreGateway(input: ConfigInput = {}): Promise<CoreGateway> {
  const config = resolveConfig(input);
  const log: Record<string, unknown>[] = [];
  const logger = pino(
    { level: 'info', base: { name: 'taskgate' } },
    { write: (line: string) => void log.push(JSON.parse(line) as Record<string, unknown>) },
  );
  const metrics = new PrometheusMetrics({ defaultMetrics: false });
  const store = new MemoryTaskStore({
    maxTasks: config.tasks.maxTasks,
    maxResultBytes: config.tasks.maxResultBytes,
  });
  const core = openCore(config, logger, store, metrics, {
    limitCaller: (caller) => ({ session: '-', subject: caller }),
  });
  const transports: CheckedTransport[] = [];
  const closing: (() => Promise<unknown>)[] = [];
  let sessions = 0;
  return {
    caller: async (as) => {
      const id = `session-${++sessions}`;
      const toServer = memoryChannelPair();
      const server = createLegacyServer();
      await server.connect(new ChannelTransport(toServer.b));
      const toClient = memoryChannelPair();
      const session = new Session(
        toClient.b,
        toServer.a,
        {
          ...core.sessionOptions(id, logger.child({ session: id })),
          identity: as.identity,
          subject: as.subject,
        },
        { upstreamGone: () => undefined, closed: () => undefined },
      );
      session.start();
      const transport = new CheckedTransport(new ChannelTransport(toClient.a));
      transports.push(transport);
      const client = new Client({ name: 'in-process-core', version: '1' }, { capabilities: TASK_AWARE });
      await client.connect(transport);
      closing.unshift(
        () => client.close(),
        () => session.close(),
        () => server.close(),
      );
      return client;
    },
    metrics: () => metrics.text(),
    log,
    get violations() {
      return transports.flatMap((transport) => transport.violations);
    },
    close: async () => {
      for (const close of closing) await close();
      core.close();
      await store.close();
    },
  };
}

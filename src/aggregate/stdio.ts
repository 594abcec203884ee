/**
 * taskgate on stdio in front of several servers (`upstreams`): one client, one aggregator (with the
 * 2026-07-28 bridge before it when the client's first request is a 2026-07-28 one), one Session per
 * server. Resolves with the exit code once the client has gone away (0), or at once (1) when no server
 * could be started.
 */
import { createRequire } from 'node:module';
import { AGGREGATE_DEFAULTS, DEFAULT_SEPARATOR, type Config } from '../config/schema.js';
import { upstreamAuth } from '../security/upstream-auth.js';
import { openStdioCore } from '../stdio-core.js';
import { LineChannel } from '../transport/line-channel.js';
import { Valve } from '../transport/valve.js';
import { ModernChannelFront } from '../modern/channel-front.js';
import { ValueClient } from '../session/value-client.js';
import { opensModernConnection } from '../modern/era.js';
import { DeferredChannel } from '../transport/deferred-channel.js';
import { awaitFirstMessage } from '../transport/held-channel.js';
import { Aggregator } from './aggregator.js';
import { openMembers } from './members.js';
import { aggregatorBridge } from './modern.js';
import { Names } from './names.js';
import { readinessOf, type ServersReadiness } from './readiness.js';

export async function startAggregatedStdio(config: Config): Promise<number> {
  // The admin listener answers /readyz from the servers' states: starting until they are opened.
  let states = (): ServersReadiness =>
    Object.fromEntries(Object.keys(config.upstreams ?? {}).map((name) => [name, { state: 'starting' }]));
  const stdio = await openStdioCore(
    config,
    readinessOf(() => states()),
  );
  const { logger, metrics, telemetry, id, core } = stdio;
  // A side that stops reading stops taskgate reading what would be written to it (valve.ts): the servers'
  // output while the client is behind, the client's input while any server is.
  const toClient = new Valve();
  const toServers: Valve[] = [];
  // Over stdio there is no caller to stand for: only a credential of taskgate's own (client credentials).
  const credentials = upstreamAuth(config);
  const members = await openMembers(
    config,
    logger,
    (name) => core.sessionOptions(`${id}/${name}`, logger),
    { restarted: () => metrics.upstreamRestarted() },
    (name) => credentials.forServer(name, undefined),
    () => {
      const toServer = new Valve();
      toServers.push(toServer);
      return { writes: toServer, reads: [toClient] };
    },
  );
  if (members.specs.every((spec) => spec.failed !== undefined)) {
    logger.error('none of the servers in upstreams could be started; exiting');
    await stdio.close();
    return 1;
  }
  // eslint-disable-next-line no-restricted-properties -- stdout is the client's channel in stdio mode
  const line = new LineChannel(process.stdin, process.stdout, config.maxMessageBytes, 'the client', true, {
    writes: toClient,
    reads: [toClient, ...toServers],
  });
  const client = telemetry.front(line, { transport: 'pipe' });
  const separator = config.namespacing?.separator ?? DEFAULT_SEPARATOR;
  const { slowServerGrace, listChangedWindow } = config.aggregate ?? AGGREGATE_DEFAULTS;
  const { version } = createRequire(import.meta.url)('../../package.json') as { version: string };
  return new Promise<number>((resolve) => {
    // The aggregator starts at once, to watch the servers; its client is known from the first message.
    const clientSide = new DeferredChannel();
    const aggregator = new Aggregator(clientSide, members.specs, {
      names: new Names(separator),
      logger,
      version,
      graceMs: slowServerGrace,
      listChangedWindowMs: listChangedWindow,
      closed: (reason) => {
        logger.info(`session closed: ${reason}`);
        void (async () => {
          await members.close();
          await stdio.close();
          await telemetry.shutdown();
          resolve(0);
        })();
      },
    });
    aggregator.start();
    void awaitFirstMessage(client).then(({ first, channel }) => {
      if (first === undefined || !opensModernConnection(first)) return clientSide.connect(channel);
      // A 2026-07-28 client: the bridge is the aggregator's 2025 client, handing it values.
      const values = new ValueClient();
      clientSide.connect(values);
      const bridge = aggregatorBridge(aggregator, values, logger, core.sessionOptions(id, logger));
      new ModernChannelFront(channel, bridge, logger, () => aggregator.close()).start();
    });
    states = () => aggregator.servers();
    logger.info(
      { servers: members.specs.map((spec) => spec.name), separator },
      'serving several servers behind one endpoint',
    );
    let stopping = false;
    const stop = (signal: NodeJS.Signals): void => {
      if (stopping) return void aggregator.close();
      stopping = true;
      logger.info(`taskgate is shutting down (${signal}): closing the sessions and the servers`);
      void core.drain().then(() => aggregator.close());
    };
    for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, stop);
  });
}

/**
 * taskgate on stdio: the client spawned us, we spawn the upstream server. Resolves with the exit code
 * once the client has gone away (0), or once the upstream failed before it ever answered (1).
 */
import type { Config } from './config/schema.js';
import { Session } from './session/session.js';
import { ModernChannelFront } from './modern/channel-front.js';
import { opensModernConnection } from './modern/era.js';
import { startBridge } from './modern/shared-bridge.js';
import { DeferredChannel } from './transport/deferred-channel.js';
import { ValueClient } from './session/value-client.js';
import { awaitFirstMessage } from './transport/held-channel.js';
import { openStdioCore } from './stdio-core.js';
import { LineChannel } from './transport/line-channel.js';
import { stdioValves } from './transport/valve.js';
import { upstreamAuth } from './security/upstream-auth.js';
import { openUpstream } from './upstream.js';

/** How long a client that has not asked anything yet is waited for, to get the reason as its answer. */
const UNANSWERED_CLIENT_GRACE_MS = 2_000;

export async function startStdioProxy(config: Config): Promise<number> {
  if (config.upstreams !== undefined) {
    return (await import('./aggregate/stdio.js')).startAggregatedStdio(config);
  }
  const stdio = await openStdioCore(config);
  const { logger, metrics, telemetry, id, core } = stdio;
  // Over stdio there is no caller to stand for: only a credential of taskgate's own (client credentials).
  const credential = upstreamAuth(config).forCaller(undefined);
  // A side that stops reading stops taskgate reading what would be written to it (valve.ts).
  const valves = stdioValves();
  const upstream = await openUpstream(config, logger, {
    restarted: () => metrics.upstreamRestarted(),
    credential,
    flow: { writes: valves.toUpstream, reads: [valves.toClient] },
  }).catch(async (error: unknown) => {
    await stdio.close();
    throw error;
  });
  // eslint-disable-next-line no-restricted-properties -- stdout is the client's channel in stdio mode
  const line = new LineChannel(process.stdin, process.stdout, config.maxMessageBytes, 'the client', true, {
    writes: valves.toClient,
    reads: [valves.toClient, valves.toUpstream],
  });
  const client = telemetry.front(line, { transport: 'pipe' });
  const options = core.sessionOptions(id, logger);
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
        await stdio.close();
        await telemetry.shutdown();
        resolve(exitCode);
      },
    });
    session.start();
    void awaitFirstMessage(client).then(({ first, channel }) => {
      if (first === undefined || !opensModernConnection(first)) return toClient.connect(channel);
      // A 2026-07-28 client: the bridge is the 2025 client of this connection's session.
      const valueClient = new ValueClient();
      toClient.connect(valueClient);
      const bridge = startBridge(valueClient, session, options, upstream.channel, true);
      const front = new ModernChannelFront(channel, bridge, logger, () => void session.close());
      stopFront = () => void front.close();
      front.start();
    });
    let stopping = false;
    const stop = (signal: NodeJS.Signals): void => {
      // A second signal means now.
      if (stopping) return void session.close();
      stopping = true;
      logger.info(`taskgate is shutting down (${signal}): closing the session and the upstream server`);
      void core.drain().then(() => session.close());
    };
    for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, stop);
  });
}

/**
 * Several servers behind one taskgate endpoint, in the test's own process (issue 32): a real SDK Client,
 * the Aggregator, one taskgate Session per server and a real SDK Server behind each, joined by memory
 * channel pairs, with one MemoryTaskStore. What the client receives is schema-checked.
 *
 *   const gate = await inProcessAggregate([{ name: 'a', tools: [echo] }, { name: 'b', tools: [sleep] }]);
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { ClientCapabilities } from '@modelcontextprotocol/sdk/types.js';
import { pino } from 'pino';
import { Aggregator } from '../../src/aggregate/aggregator.js';
import { memberSessionOptions, ownLimits } from '../../src/aggregate/members.js';
import { Names, ToolFilter } from '../../src/aggregate/names.js';
import type { MemberSpec } from '../../src/aggregate/member.js';
import { resolveConfig } from '../../src/config/load.js';
import { Policy } from '../../src/config/policy.js';
import { AGGREGATE_DEFAULTS, type ConfigInput, type Member } from '../../src/config/schema.js';
import { ProbingUpstream } from '../../src/modern/probing-upstream.js';
import { Limits } from '../../src/security/limits.js';
import { Session } from '../../src/session/session.js';
import type { AuditLog } from '../../src/tasks/audit-log.js';
import { MemoryTaskStore } from '../../src/tasks/memory-store.js';
import type { Channel } from '../../src/transport/channel.js';
import { memoryChannelPair, type MemoryChannel } from '../../src/transport/memory-channel.js';
import { ChannelTransport } from './channel-transport.js';
import { CheckedTransport } from './checked-transport.js';
import { fakeServer, type FakeTool } from './in-process.js';

export interface ServerBehind {
  name: string;
  tools?: FakeTool[];
  /** A real server in place of the fake one (`tools` is then unused). */
  server?: Server;
  /** Listed under `{name}__` (true unless set). */
  prefix?: boolean;
  include?: string[];
  exclude?: string[];
  /** Its server is connected only by `connectLate` (until then it answers nothing, initialize included). */
  late?: boolean;
  /** Its own `limits` (upstreams.<name>.limits). */
  limits?: Member['limits'];
  /**
   * A 2026-07-28 peer in place of an SDK 1.x server (`tools` and `server` unused): serves on the channel it
   * is given. Its Session reaches it through the era probe, as taskgate reaches a stdio server.
   */
  modern?: (serverSide: MemoryChannel) => Promise<ModernPeer> | ModernPeer;
}

/** A 2026-07-28 peer serving in the test's process. */
export interface ModernPeer {
  close(): Promise<void>;
}

export interface AggregateGateway {
  client: Client;
  clientTransport: CheckedTransport;
  store: MemoryTaskStore;
  /** Each server's SDK Server and what it received from its Session (not a `modern` one's). */
  servers: Map<string, { server: Server; received: CheckedTransport; sessionSide: MemoryChannel }>;
  /** The server (of either kind) goes away at once, as a crashed child does when it is not restarted. */
  crash(name: string): Promise<void>;
  /** Connects the server of an entry marked `late`: it reads what it was sent meanwhile and answers. */
  connectLate(name: string): Promise<void>;
  readonly violations: string[];
  close(): Promise<void>;
}

const TASK_CLIENT: ClientCapabilities = {
  tasks: { list: {}, cancel: {}, requests: {} },
  elicitation: { form: {} },
  sampling: {},
};

export async function inProcessAggregate(
  behind: ServerBehind[],
  options: {
    config?: ConfigInput;
    capabilities?: ClientCapabilities;
    separator?: string;
    /** The audit log every server's Session writes to, made for the one store they share. */
    audit?: (store: MemoryTaskStore) => AuditLog;
  } = {},
): Promise<AggregateGateway> {
  const config = resolveConfig(options.config ?? {});
  const store = new MemoryTaskStore({
    maxTasks: config.tasks.maxTasks,
    maxResultBytes: config.tasks.maxResultBytes,
  });
  const logger = pino({ level: 'silent' });
  const audit = options.audit?.(store);
  const servers: AggregateGateway['servers'] = new Map();
  const sessions: Session[] = [];
  const specs: MemberSpec[] = [];
  const lateOnes = new Map<string, () => Promise<void>>();
  // One Limits for every server, as composition.ts gives each Session the one it made.
  const limits = new Limits(config.limits);
  const modernOnes = new Map<string, ModernPeer>();
  for (const entry of behind) {
    const toServer = memoryChannelPair();
    let upstream: Channel = toServer.a;
    if (entry.modern !== undefined) {
      modernOnes.set(entry.name, await entry.modern(toServer.b));
      upstream = new ProbingUpstream(toServer.a, 'auto', 5_000, logger, {
        statusNotifications: config.tasks.statusNotifications,
      });
    } else {
      const server = entry.server ?? fakeServer(entry.tools ?? []).server;
      const received = new CheckedTransport(new ChannelTransport(toServer.b));
      if (entry.late === true) lateOnes.set(entry.name, () => server.connect(received));
      else await server.connect(received);
      servers.set(entry.name, { server, received, sessionSide: toServer.a });
    }
    const toSession = memoryChannelPair();
    const session = new Session(
      toSession.b,
      upstream,
      // Each server's Session as src/aggregate/members.ts gives it its options.
      memberSessionOptions(
        {
          id: `in-process/${entry.name}`,
          config,
          policy: new Policy(config),
          store,
          logger,
          limits,
          ...(audit === undefined ? {} : { audit }),
        },
        entry.name,
        config,
        ownLimits(config, entry.limits),
      ),
      { upstreamGone: () => session.closeOnceAnswered(1_000), closed: () => undefined },
    );
    session.start();
    sessions.push(session);
    specs.push({
      name: entry.name,
      prefixed: entry.prefix ?? true,
      filter: new ToolFilter(entry.include, entry.exclude),
      channel: toSession.a,
      description: entry.name,
      close: () => session.close(),
    });
  }
  const front = memoryChannelPair();
  const gateway = new Aggregator(front.b, specs, {
    names: new Names(options.separator ?? '__'),
    logger,
    version: '0.0.0-test',
    closed: () => undefined,
    // As src/aggregate/stdio.ts takes them from the config.
    graceMs: (config.aggregate ?? AGGREGATE_DEFAULTS).slowServerGrace,
    listChangedWindowMs: (config.aggregate ?? AGGREGATE_DEFAULTS).listChangedWindow,
  });
  gateway.start();
  const clientTransport = new CheckedTransport(new ChannelTransport(front.a));
  const client = new Client(
    { name: 'in-process-client', version: '1.0.0' },
    { capabilities: options.capabilities ?? TASK_CLIENT },
  );
  await client.connect(clientTransport);
  return {
    client,
    clientTransport,
    store,
    servers,
    crash: async (name) => {
      const found = servers.get(name) ?? modernOnes.get(name);
      if (found === undefined) throw new Error(`no server ${name}`);
      await ('server' in found ? found.server : found).close();
    },
    connectLate: async (name) => {
      const connect = lateOnes.get(name);
      if (connect === undefined) throw new Error(`no late server ${name}`);
      lateOnes.delete(name);
      await connect();
    },
    get violations() {
      return [...clientTransport.violations];
    },
    close: async () => {
      await client.close();
      await gateway.close();
      for (const { server } of servers.values()) await server.close();
      for (const peer of modernOnes.values()) await peer.close();
      audit?.close();
      await store.close();
    },
  };
}

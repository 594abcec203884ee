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
import { pino, type Logger } from 'pino';
import { Client as ModernClient, type ElicitRequest, type ElicitResult } from '@modelcontextprotocol/client';
import { Aggregator, type AggregatorOptions } from '../../src/aggregate/aggregator.js';
import { aggregatorBridge } from '../../src/aggregate/modern.js';
import { ModernChannelFront } from '../../src/modern/channel-front.js';
import type { ModernAnswer, ModernExchange } from '../../src/protocol/modern/exchange.js';
import { memberSessionOptions, ownLimits } from '../../src/aggregate/members.js';
import { Names, namesOf, ToolFilter } from '../../src/aggregate/names.js';
import type { MemberSpec } from '../../src/aggregate/member.js';
import { resolveConfig } from '../../src/config/load.js';
import { Policy } from '../../src/config/policy.js';
import { AGGREGATE_DEFAULTS, type ConfigInput, type Member } from '../../src/config/schema.js';
import { ProbingUpstream } from '../../src/modern/probing-upstream.js';
import { Limits } from '../../src/security/limits.js';
import { Session } from '../../src/session/session.js';
import { ValueClient } from '../../src/session/value-client.js';
import type { AuditLog } from '../../src/tasks/audit-log.js';
import { MemoryTaskStore } from '../../src/tasks/memory-store.js';
import type { Channel } from '../../src/transport/channel.js';
import { memoryChannelPair, type MemoryChannel } from '../../src/transport/memory-channel.js';
import { createV2TaskServer } from '../fixtures/v2-task-server.js';
import { ChannelTransport } from './channel-transport.js';
import { CheckedTransport } from './checked-transport.js';
import { fakeServer, type FakeTool } from './in-process.js';

export interface ServerBehind {
  name: string;
  tools?: FakeTool[];
  /** What the fake server's initialize says to do with it. */
  instructions?: string;
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

/** The v2 tasks extension fixture on the channel, one JSON-RPC message each way per channel message. */
export const v2TasksPeer = (serverSide: MemoryChannel): ModernPeer => {
  const receive = createV2TaskServer((message: unknown) => serverSide.send(message as object));
  serverSide.start({
    message: (raw) => receive(JSON.parse(raw.toString())),
    malformed: () => undefined,
    closed: () => undefined,
  });
  return { close: () => serverSide.close() };
};

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

/** The servers behind, each with its Session (as src/aggregate/members.ts opens them), and the store they share. */
interface Behind {
  config: ReturnType<typeof resolveConfig>;
  store: MemoryTaskStore;
  logger: Logger;
  audit: AuditLog | undefined;
  servers: AggregateGateway['servers'];
  specs: MemberSpec[];
  lateOnes: Map<string, () => Promise<void>>;
  modernOnes: Map<string, ModernPeer>;
}

interface BehindOptions {
  config?: ConfigInput;
  /** The audit log every server's Session writes to, made for the one store they share. */
  audit?: (store: MemoryTaskStore) => AuditLog;
}

async function openBehind(behind: ServerBehind[], options: BehindOptions): Promise<Behind> {
  const config = resolveConfig(options.config ?? {});
  const store = new MemoryTaskStore({
    maxTasks: config.tasks.maxTasks,
    maxResultBytes: config.tasks.maxResultBytes,
  });
  const logger = pino({ level: 'silent' });
  const audit = options.audit?.(store);
  const servers: AggregateGateway['servers'] = new Map();
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
      const server = entry.server ?? fakeServer(entry.tools ?? [], entry.instructions).server;
      const received = new CheckedTransport(new ChannelTransport(toServer.b));
      if (entry.late === true) lateOnes.set(entry.name, () => server.connect(received));
      else await server.connect(received);
      servers.set(entry.name, { server, received, sessionSide: toServer.a });
    }
    const toSession = memoryChannelPair();
    // Each server's Session as src/aggregate/members.ts gives it its options.
    const sessionOptions = memberSessionOptions(
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
      (tool) => namesOf(config).outer(entry.name, entry.prefix ?? true, tool),
      config,
      ownLimits(config, entry.limits),
    );
    const session = new Session(toSession.b, upstream, sessionOptions, {
      upstreamGone: () => session.closeOnceAnswered(1_000),
      closed: () => undefined,
    });
    session.start();
    specs.push({
      name: entry.name,
      prefixed: entry.prefix ?? true,
      filter: new ToolFilter(entry.include, entry.exclude),
      channel: toSession.a,
      description: entry.name,
      close: () => session.close(),
      toolFacts: (tool) => ({
        upstream: session.upstreamTool(tool),
        policy: sessionOptions.policy.forTool(tool),
      }),
    });
  }
  return { config, store, logger, audit, servers, specs, lateOnes, modernOnes };
}

export async function inProcessAggregate(
  behind: ServerBehind[],
  options: BehindOptions & { capabilities?: ClientCapabilities; separator?: string } = {},
): Promise<AggregateGateway> {
  const { config, store, logger, audit, servers, specs, lateOnes, modernOnes } = await openBehind(
    behind,
    options,
  );
  const front = memoryChannelPair();
  const gateway = new Aggregator(front.b, specs, aggregatorOptions(config, logger, options.separator));
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
    crash: (name) => crash({ servers, modernOnes }, name),
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

function aggregatorOptions(config: Behind['config'], logger: Logger, separator = '__'): AggregatorOptions {
  return {
    names: new Names(separator),
    logger,
    version: '0.0.0-test',
    closed: () => undefined,
    // As src/aggregate/stdio.ts takes them from the config.
    graceMs: (config.aggregate ?? AGGREGATE_DEFAULTS).slowServerGrace,
    listChangedWindowMs: (config.aggregate ?? AGGREGATE_DEFAULTS).listChangedWindow,
  };
}

async function crash({ servers, modernOnes }: Pick<Behind, 'servers' | 'modernOnes'>, name: string) {
  const found = servers.get(name) ?? modernOnes.get(name);
  if (found === undefined) throw new Error(`no server ${name}`);
  await ('server' in found ? found.server : found).close();
}

export interface ModernAggregateGateway {
  /** An SDK v2 client pinned to 2026-07-28, on the stdio front's ModernChannelFront before the bridge. */
  client: ModernClient;
  /** The bridge itself, as the HTTP front hands it exchanges (a requester's own dispatch). */
  handle(exchange: ModernExchange): Promise<ModernAnswer>;
  store: MemoryTaskStore;
  /** The server goes away at once, as a crashed child does when it is not restarted. */
  crash(name: string): Promise<void>;
  close(): Promise<void>;
}

/**
 * The same servers behind the aggregator with the 2026-07-28 bridge as its client (src/aggregate/modern.ts),
 * as taskgate on stdio serves a client whose first request is a 2026-07-28 one. `onElicit` answers the
 * servers' elicitation (MRTR input) and declares `elicitation.form`.
 */
export async function inProcessModernAggregate(
  behind: ServerBehind[],
  options: BehindOptions & {
    onElicit?: (params: ElicitRequest['params']) => ElicitResult | Promise<ElicitResult>;
  } = {},
): Promise<ModernAggregateGateway> {
  const opened = await openBehind(behind, options);
  const { config, store, logger, audit } = opened;
  const values = new ValueClient();
  const aggregator = new Aggregator(values, opened.specs, aggregatorOptions(config, logger));
  aggregator.start();
  const bridge = aggregatorBridge(aggregator, values, logger, {
    id: 'in-process-modern-aggregate',
    store,
    config,
  });
  const toFront = memoryChannelPair();
  const front = new ModernChannelFront(toFront.b, bridge, logger, () => aggregator.close());
  front.start();
  const { onElicit } = options;
  const client = new ModernClient(
    { name: 'in-process-modern', version: '1.0.0' },
    {
      capabilities: onElicit === undefined ? {} : { elicitation: { form: {} } },
      versionNegotiation: { mode: { pin: '2026-07-28' } },
    },
  );
  if (onElicit) client.setRequestHandler('elicitation/create', (request) => onElicit(request.params));
  await client.connect(new ChannelTransport(toFront.a));
  return {
    client,
    handle: (exchange) => bridge.handle(exchange),
    store,
    crash: (name) => crash(opened, name),
    close: async () => {
      await client.close();
      await front.close();
      for (const { server } of opened.servers.values()) await server.close();
      for (const peer of opened.modernOnes.values()) await peer.close();
      audit?.close();
      await store.close();
    },
  };
}

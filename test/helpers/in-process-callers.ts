/**
 * Several callers of both eras on one task store, in the test's own process, as the HTTP gateway has them:
 * 2026-07-28 callers hand exchanges (with the principal and subject the front would) to one bridge and its
 * Session, 2025 callers each have an SDK 1.x Client and a Session of their own with their identity; each
 * Session has its own SDK 1.x Server (in-process.ts's fakeServer) over a memory channel pair. Each caller
 * has the rights the config's auth.rules give it, as the front works them out. What the task services tell
 * the audit log is collected in `audit`.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { pino } from 'pino';
import { resolveConfig } from '../../src/config/load.js';
import { Policy } from '../../src/config/policy.js';
import type { ConfigInput } from '../../src/config/schema.js';
import type { JsonObject } from '../../src/protocol/messages.js';
import type { ModernAnswer } from '../../src/protocol/modern/exchange.js';
import { bridgeSession } from '../../src/modern/shared-bridge.js';
import { accessRules, type Principal } from '../../src/security/access.js';
import { Session, type SessionOptions } from '../../src/session/session.js';
import type { AuditLog, Caller } from '../../src/tasks/audit-log.js';
import type { TaskStore } from '../../src/tasks/store.js';
import { memoryChannelPair } from '../../src/transport/memory-channel.js';
import { ChannelTransport } from './channel-transport.js';
import { CheckedTransport } from './checked-transport.js';
import { fakeServer, type FakeTool } from './in-process.js';

export interface AuditLine extends Caller {
  event: 'created' | 'result' | 'cancelled' | 'denied' | 'limit' | 'access' | 'others';
  taskId?: string;
  method?: string;
  right?: string;
  tool?: string;
}

/** Who a request comes from, as the HTTP front authenticates it (with an OAuth token's scopes and groups). */
export interface Identified {
  identity: string;
  subject: string;
  grant?: NonNullable<Principal['grant']>;
}

export interface CallersGateway {
  /** One 2026-07-28 request from `as` (none: callers are not identified). */
  modern(method: string, params: JsonObject, as?: Identified, signal?: AbortSignal): Promise<ModernAnswer>;
  /** A 2025 client with a session of its own, bound to `as`. */
  legacy(as?: Identified): Promise<Client>;
  readonly audit: AuditLine[];
  readonly violations: unknown[];
  close(): Promise<void>;
}

export async function callersGateway(
  store: TaskStore,
  tools: FakeTool[],
  input: ConfigInput = {},
): Promise<CallersGateway> {
  const config = resolveConfig(input);
  const audit: AuditLine[] = [];
  const log: AuditLog = {
    created: (record, caller) => audit.push({ event: 'created', taskId: record.taskId, ...caller }),
    resultRetrieved: (taskId, caller) => audit.push({ event: 'result', taskId, ...caller }),
    cancelled: (taskId, caller) => audit.push({ event: 'cancelled', taskId, ...caller }),
    denied: (taskId, method, caller) => audit.push({ event: 'denied', taskId, method, ...caller }),
    limitHit: (_limit, caller) => audit.push({ event: 'limit', ...caller }),
    accessDenied: (refused, caller) => audit.push({ event: 'access', ...refused, ...caller }),
    othersTask: (taskId, method, caller) => audit.push({ event: 'others', taskId, method, ...caller }),
    close: () => undefined,
  };
  const options = (id: string): SessionOptions => ({
    id,
    config,
    policy: new Policy(config),
    store,
    audit: log,
    logger: pino({ level: 'silent' }),
  });
  const rights = accessRules(config.auth);
  const accessOf = (as: Identified) => (rights === undefined ? {} : { access: rights(as) });
  const servers: CheckedTransport[] = [];
  const closing: (() => Promise<unknown>)[] = [];
  const upstream = async () => {
    const pair = memoryChannelPair();
    const { server } = fakeServer(tools);
    const transport = new CheckedTransport(new ChannelTransport(pair.b));
    servers.push(transport);
    await server.connect(transport);
    closing.push(() => server.close());
    return pair.a;
  };

  const { bridge, session } = bridgeSession(await upstream(), options('modern'), {
    upstreamGone: () => undefined,
    closed: () => undefined,
  });
  closing.unshift(() => session.close());
  let nextId = 1;
  let sessions = 0;
  return {
    modern: (method, params, as, signal) =>
      bridge.handle({
        request: { jsonrpc: '2.0', id: nextId++, method, params },
        notify: () => undefined,
        signal: signal ?? new AbortController().signal,
        ...(as === undefined
          ? {}
          : { principal: as.identity, subject: as.subject, caller: as.identity, ...accessOf(as) }),
      }),
    legacy: async (as) => {
      const toClient = memoryChannelPair();
      const legacy = new Session(
        toClient.b,
        await upstream(),
        {
          ...options(`legacy-${++sessions}`),
          ...(as === undefined ? {} : { identity: as.identity, subject: as.subject, ...accessOf(as) }),
        },
        { upstreamGone: () => undefined, closed: () => undefined },
      );
      legacy.start();
      const client = new Client(
        { name: 'in-process-2025', version: '1' },
        { capabilities: { tasks: { list: {}, cancel: {}, requests: {} } } },
      );
      await client.connect(new ChannelTransport(toClient.a));
      closing.unshift(
        () => client.close(),
        () => legacy.close(),
      );
      return client;
    },
    audit,
    get violations() {
      return servers.flatMap((transport) => transport.violations);
    },
    close: async () => {
      for (const close of closing) await close();
    },
  };
}

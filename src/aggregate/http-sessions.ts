/**
 * Several servers behind the HTTP front: each 2025 client session, and each 2026-07-28 caller's bridge,
 * gets one aggregator and, behind it, a Session per server of `upstreams`, bound to the caller's identity,
 * on a server of its own or, for a server whose `sharing` is `shared` or `pool`, on a port of the
 * connection the sessions share (as `upstream.sharing` gives one server). The front asks here whether a
 * session still runs tasks (any of its servers' Sessions) and whether a new one could be served (some
 * server can be started).
 */
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import type { Logger } from 'pino';
import type { Core } from '../composition.js';
import type { OpenedBridge } from '../modern/shared-bridge.js';
import type { ModernExchange } from '../protocol/modern/exchange.js';
import { AGGREGATE_DEFAULTS, type Config } from '../config/schema.js';
import type { UpstreamCredential } from '../security/upstream-credentials.js';
import type { Channel } from '../transport/channel.js';
import type { Caller } from '../transport/http-front.js';
import type { HttpSession } from '../transport/http-session.js';
import { telemetry } from '../telemetry/telemetry.js';
import { upstreamProblem } from '../upstream-readiness.js';
import { sharedSessionRules } from '../session/shared-sessions.js';
import { ValueClient } from '../session/value-client.js';
import { UpstreamPool } from '../transport/upstream-pool.js';
import { isObject } from '../protocol/messages.js';
import { openUpstream, type UpstreamOptions } from '../upstream.js';
import { Aggregator } from './aggregator.js';
import { memberConfig, openMembers, type OpenedMembers } from './members.js';
import { aggregatorBridge } from './modern.js';
import { namesOf } from './names.js';
import { readinessOf, type Readiness } from './readiness.js';
import { ReplicaTasks } from './replica-tasks.js';

export interface AggregatedSessions extends Readiness {
  open(channel: HttpSession, caller: Caller | undefined): Promise<void>;
  /**
   * A 2026-07-28 caller's bridge (src/modern/caller-bridges.ts): the modern bridge before an aggregator and
   * servers of its own, bound to the caller the first request names, as a 2025 session's are.
   */
  openModern(first: ModernExchange): Promise<OpenedBridge>;
  /** When the session's last task ended (Infinity while one runs), over all its servers' Sessions. */
  tasksEndedAt(sessionId: string): number;
  /** Stops every session's servers (the front has ended the sessions). */
  close(): Promise<void>;
}

export function aggregatedSessions(
  config: Config,
  logger: Logger,
  core: Core,
  hooks: UpstreamOptions & {
    /** The Authorization a caller's connection to a server is sent (its `auth`, auth.bearerPassthrough), if any. */
    credentialFor(caller: Caller | undefined, server: string): UpstreamCredential | undefined;
    forget(sessionId: string): void;
  },
): AggregatedSessions {
  const { forget, credentialFor, ...upstreamHooks } = hooks;
  const { version } = createRequire(import.meta.url)('../../package.json') as { version: string };
  const names = namesOf(config);
  const { slowServerGrace, listChangedWindow } = config.aggregate ?? AGGREGATE_DEFAULTS;
  const servers = Object.keys(config.upstreams ?? {});
  const pools = sharedServers(config, logger, upstreamHooks, (name) => credentialFor(undefined, name));
  /** Each front session's Session ids, one per server. */
  const ids = new Map<string, string[]>();
  const opened = new Set<OpenedMembers>();
  const { running } = core;
  const board = core.observed.store.inputs;
  const replicaTasks = board === undefined ? undefined : new ReplicaTasks(board, logger);
  /** One caller's servers, each with its Session, and the aggregator before them serving `client`. */
  const serve = async (
    id: string,
    sessionLogger: Logger,
    caller: Caller | undefined,
    client: Channel,
    ended: () => void,
  ): Promise<Aggregator> => {
    // Whom each server's Session is bound to, as its replicas' tasks are.
    const bound = caller === undefined ? {} : boundTo(caller);
    const serverTasks = replicaTasks?.session(bound, names);
    const members = await openMembers(
      config,
      sessionLogger,
      (name) => {
        const memberId = `${id}/${name}`;
        const options = core.sessionOptions(memberId, sessionLogger);
        const sightings = options.sightings!;
        return {
          ...options,
          lingerForTasks: true,
          sightings: {
            ...sightings,
            upstreamTask: (task, tool, server) => {
              running.seen(memberId, task);
              if (isObject(task) && typeof task.taskId === 'string') {
                serverTasks?.sighted(name, task.taskId);
              }
              sightings.upstreamTask(task, tool, server);
            },
            upstreamTaskForgotten: (taskId) => {
              running.forgot(memberId, taskId);
              serverTasks?.forgotten(name, taskId);
              sightings.upstreamTaskForgotten(taskId);
            },
          },
          ...bound,
        };
      },
      upstreamHooks,
      (name) => credentialFor(caller, name),
      undefined,
      (name) => pools.get(name)?.port(),
    );
    // Followed once opened: a session whose servers could not be opened leaves nothing behind.
    const own = servers.map((name) => `${id}/${name}`);
    ids.set(id, own);
    for (const memberId of own) running.follow(memberId);
    opened.add(members);
    const aggregator = new Aggregator(client, members.specs, {
      names,
      logger: sessionLogger,
      version,
      graceMs: slowServerGrace,
      listChangedWindowMs: listChangedWindow,
      serverTasks,
      closed: () =>
        void members.close().then(() => {
          opened.delete(members);
          for (const memberId of own) running.forget(memberId);
          ids.delete(id);
          ended();
        }),
    });
    aggregator.start();
    return aggregator;
  };
  return {
    open: async (channel, caller) => {
      const sessionLogger = logger.child({ session: channel.id.slice(0, 8) });
      const client = telemetry().front(channel, { transport: 'tcp', sessionId: channel.id });
      await serve(channel.id, sessionLogger, caller, client, () => forget(channel.id));
    },
    openModern: async (first) => {
      const id = `modern-${randomUUID()}`;
      const sessionLogger = logger.child({ session: 'modern' });
      let ended!: () => void;
      const over = new Promise<void>((resolve) => (ended = resolve));
      // The bridge hands its aggregator values; what the aggregator sends before the bridge listens waits.
      const values = new ValueClient();
      const aggregator = await serve(id, sessionLogger, modernCaller(first), values, ended);
      const bridge = aggregatorBridge(
        aggregator,
        values,
        sessionLogger,
        core.sessionOptions(id, sessionLogger),
      );
      // Its servers' Sessions linger for their tasks once the aggregator closes them.
      return { bridge, ended: over, retire: () => aggregator.close(), close: () => aggregator.close() };
    },
    tasksEndedAt: (sessionId) => Math.max(0, ...(ids.get(sessionId) ?? []).map((id) => running.endedAt(id))),
    // Whether a new session's servers could be started (or reached) now: ready while one of them can.
    ...readinessOf(async () =>
      Object.fromEntries(
        await Promise.all(
          Object.entries(config.upstreams ?? {}).map(async ([name, member]) => {
            const problem = await upstreamProblem(memberConfig(config, member).upstream);
            return [
              name,
              problem === undefined ? { state: 'ready' } : { state: 'unavailable', cause: problem },
            ];
          }),
        ),
      ),
    ),
    close: async () => {
      replicaTasks?.close();
      await Promise.all([...opened].map((members) => members.close()));
      await Promise.all([...pools.values()].map((pool) => pool.close()));
    },
  };
}

const boundTo = ({ identity, subject, access }: Caller) =>
  access === undefined ? { identity, subject } : { identity, subject, access };

/** The caller a 2026-07-28 request names, as the front's authentication gave it; none without one. */
function modernCaller(first: ModernExchange): Caller | undefined {
  const { principal, subject, access, upstreamAuthorization } = first;
  if (principal === undefined) return undefined;
  return {
    identity: principal,
    subject: subject ?? principal,
    ...(access === undefined ? {} : { access }),
    ...(upstreamAuthorization === undefined ? {} : { upstreamAuthorization }),
  };
}

/**
 * The servers the sessions share (`sharing: shared`, or `pool` of `poolSize`), by name: each started with
 * the first session that needs it, and sent taskgate's own credential only, since it serves every caller.
 */
function sharedServers(
  config: Config,
  logger: Logger,
  hooks: UpstreamOptions,
  credentialOf: (name: string) => UpstreamCredential | undefined,
): Map<string, UpstreamPool> {
  const pools = new Map<string, UpstreamPool>();
  for (const [name, member] of Object.entries(config.upstreams ?? {})) {
    if (member.sharing === 'session') continue;
    if (config.auth.bearerPassthrough !== undefined) {
      logger.warn(
        `upstreams.${name}.sharing is ${member.sharing}: a shared server is sent no caller's own token`,
      );
    }
    const own = memberConfig(config, member);
    const pool = new UpstreamPool(
      member.sharing === 'pool' ? member.poolSize : 1,
      (_index, poolLogger) =>
        openUpstream(own, poolLogger, { ...hooks, server: name, credential: credentialOf(name) }),
      logger.child({ session: 'shared', server: name }),
      () => sharedSessionRules(),
    );
    pools.set(name, pool);
  }
  return pools;
}

/**
 * The servers of `upstreams`, each opened as taskgate opens its one upstream (openUpstream, with that
 * server's era and task rules) and given a Session of its own, whose client is the aggregator: one server
 * that crashes, is slow or refuses ends only that Session's work.
 */
import type { Logger } from 'pino';
import { Policy } from '../config/policy.js';
import { withBuckets, type Config, type Member as MemberConfig } from '../config/schema.js';
import { NO_CALLER } from '../protocol/caller.js';
import type { UpstreamCredential } from '../security/upstream-credentials.js';
import { Session, type SessionOptions } from '../session/session.js';
import { tasksOfServer } from '../tasks/server-store.js';
import { memoryChannelPair } from '../transport/memory-channel.js';
import type { PoolUpstream } from '../transport/upstream-pool.js';
import type { Flow } from '../transport/valve.js';
import { openUpstream, type UpstreamOptions } from '../upstream.js';
import type { MemberSpec } from './member.js';
import { namesOf, ToolFilter } from './names.js';

/** How long a server's Session that lost its server for good goes on answering what was asked. */
const GONE_GRACE_MS = 2_000;

export interface OpenedMembers {
  specs: MemberSpec[];
  /** Closes every Session (and so its server); safe to call again. */
  close(): Promise<void>;
}

/** The config one server's Session and upstream are given: `upstream` is that server, its rules first. */
export function memberConfig(config: Config, member: MemberConfig): Config {
  const { prefix: _prefix, include: _include, exclude: _exclude, tools, restart, limits, ...server } = member;
  return {
    ...config,
    upstream: { ...server, sharing: 'session', poolSize: 1 },
    upstreams: undefined,
    tools: [...tools, ...config.tools],
    upstreamRestart: restart ?? config.upstreamRestart,
    limits: ownLimits(config, limits) ?? config.limits,
  };
}

/** A server's own `limits`, over the top-level ones; undefined for a server without: it shares those. */
export function ownLimits(config: Config, limits: MemberConfig['limits']): Config['limits'] | undefined {
  return limits === undefined ? undefined : withBuckets({ ...config.limits, ...limits });
}

/**
 * Whose an identity's tasks made through one server are, for tasks/list: all its servers' tasks share the
 * store (and, on Redis, every replica's), so each server's Session lists only those made through it, and
 * the merged list names each task once, under its own server. (Without an identity the owner is the
 * server's Session, its own already.) The separator is a control character no identity carries.
 */
function serverTaskOwner(identity: string, server: string): string {
  return `${identity}\u001fserver:${server}`;
}

/**
 * What one server's Session is given: what every Session is (`given`), made that server's: its config,
 * its identity's tasks listed apart, its tasks (taskgate's and its own) named after it, its caller's rights
 * applied to its tools by the names the client sees (`outer`: a tool's, from the server's own), and its own
 * `limits` (ownLimits), if it has them, counted apart.
 */
export function memberSessionOptions(
  given: SessionOptions,
  name: string,
  outer: (tool: string) => string,
  own: Config,
  limits?: Config['limits'],
): SessionOptions {
  const { sightings, access } = given;
  return {
    ...given,
    ...(access === undefined
      ? {}
      : { access: { ...access, mayCall: (tool) => access.mayCall(outer(tool)), shownName: outer } }),
    ...(limits === undefined || given.limits === undefined
      ? {}
      : { limits: given.limits.apart(limits, `upstreams.${name}.limits`, name) }),
    ...(given.identity === undefined ? {} : { taskOwner: serverTaskOwner(given.identity, name) }),
    store: tasksOfServer(given.store, name),
    ...(sightings === undefined
      ? {}
      : {
          sightings: { ...sightings, upstreamTask: (task, tool) => sightings.upstreamTask(task, tool, name) },
        }),
    config: own,
    policy: new Policy(own),
  };
}

export async function openMembers(
  config: Config,
  logger: Logger,
  sessionOptions: (name: string) => SessionOptions,
  hooks: UpstreamOptions = {},
  /** The Authorization the server `name` is sent (UpstreamAuth.forServer), if any. */
  credentialOf: (name: string) => UpstreamCredential | undefined = () => undefined,
  /** Each server's backpressure on stdio (valve.ts), given as it is opened. */
  flowOf?: () => Flow,
  /** A port of the connection the sessions share to the server `name` (its `sharing`), if they share one. */
  portOf: (name: string) => Promise<PoolUpstream> | undefined = () => undefined,
): Promise<OpenedMembers> {
  const closers: (() => Promise<void>)[] = [];
  const names = namesOf(config);
  const specs = await Promise.all(
    Object.entries(config.upstreams ?? {}).map(async ([name, member]): Promise<MemberSpec> => {
      const own = memberConfig(config, member);
      const memberLogger = logger.child({ server: name });
      const base = {
        name,
        prefixed: member.prefix,
        filter: new ToolFilter(member.include, member.exclude),
      };
      const opening: Promise<PoolUpstream> =
        portOf(name) ??
        openUpstream(own, memberLogger, {
          ...hooks,
          server: name,
          credential: credentialOf(name),
          ...(flowOf === undefined ? {} : { flow: flowOf() }),
        });
      const upstream = await opening.catch((error: unknown) => error as Error);
      if (upstream instanceof Error) {
        memberLogger.error(`the server "${name}" could not be started: ${upstream.message}`);
        const pair = memoryChannelPair();
        return {
          ...base,
          channel: pair.a,
          description: name,
          failed: upstream.message,
          close: () => pair.a.close(),
        };
      }
      const description = upstream.description ?? name;
      const pair = memoryChannelPair();
      const options = {
        ...memberSessionOptions(
          sessionOptions(name),
          name,
          (tool) => names.outer(name, member.prefix, tool),
          own,
          ownLimits(config, member.limits),
        ),
        logger: memberLogger,
      };
      let closing = false;
      const session: Session = new Session(pair.b, upstream.channel, options, {
        upstreamGone: (state) => {
          if (closing) return;
          memberLogger.error(
            `the server "${name}" (${description}) is gone (${state.goneReason}): only its calls fail`,
          );
          session.closeOnceAnswered(GONE_GRACE_MS);
        },
        closed: () => upstream.stop(),
      });
      session.start();
      const close = (): Promise<void> => {
        closing = true;
        return session.close();
      };
      closers.push(close);
      return {
        ...base,
        channel: pair.a,
        description,
        close,
        toolFacts: (tool) => ({ upstream: session.upstreamTool(tool), policy: options.policy.forTool(tool) }),
        handUnnarrowed: (request, answer) => session.take(request, { caller: NO_CALLER, answer }),
        shows: (tool) => options.access?.mayCall(tool) !== false,
      };
    }),
  );
  let closing: Promise<void> | undefined;
  return {
    specs,
    close: () => (closing ??= Promise.all(closers.map((close) => close())).then(() => undefined)),
  };
}

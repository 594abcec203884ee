/**
 * taskgate as a network gateway: a Streamable HTTP front where each client session gets its own upstream
 * (a child process, or a session with an HTTP server), or a port of one they share (`upstream.sharing`),
 * and all sessions share one task store.
 */
import type { Logger } from 'pino';
import type { Config } from './config/schema.js';
import { openCore, startAdmin } from './composition.js';
import { createLogger } from './observability/logger.js';
import { PrometheusMetrics, type Metrics } from './observability/metrics.js';
import { Session } from './session/session.js';
import { CallerBridges } from './modern/caller-bridges.js';
import { openModernSession } from './modern/shared-bridge.js';
import type { Routes } from './observability/routes.js';
import { openStore } from './store.js';
import type { TaskStore } from './tasks/store.js';
import { createAuthenticator } from './security/auth.js';
import { challenge, protectedResourceRoutes } from './security/oauth.js';
import type { UpstreamChallenge } from './transport/http-refusals.js';
import { upstreamAuth } from './security/upstream-auth.js';
import type { UpstreamCredential } from './security/upstream-credentials.js';
import { HttpFront, type Caller } from './transport/http-front.js';
import type { HttpSession } from './transport/http-session.js';
import { parseListen } from './transport/listen.js';
import { isLoopbackHost } from './security/loopback.js';
import { UpstreamPool } from './transport/upstream-pool.js';
import { Valve } from './transport/valve.js';
import { sharedSessionRules } from './session/shared-sessions.js';
import { openUpstream, probeUpstreamAtStartUp, type Upstream } from './upstream.js';
import { upstreamProblem } from './upstream-readiness.js';
import { startTelemetry } from './telemetry/start.js';
import { telemetry } from './telemetry/telemetry.js';

export interface RunningGateway {
  url: URL;
  /** Lets running tasks finish within shutdownGrace (no new sessions or tasks meanwhile), fails the rest. */
  drain(): Promise<void>;
  close(): Promise<void>;
}

export async function startHttpGateway(
  config: Config,
  logger: Logger,
  tasks: TaskStore,
  metrics: Metrics = new PrometheusMetrics({ servers: config.upstreams !== undefined }),
): Promise<RunningGateway> {
  const listen = config.http.listen;
  if (listen === undefined) throw new Error('no listen address configured');
  const credentials = upstreamAuth(config);
  const identify = createAuthenticator(config.auth);
  const authenticate = identify === undefined ? undefined : credentials.watching(identify);
  // The operator's pages on the front are behind the same authentication as MCP, and for operators only.
  const admins = new Set(config.auth.adminSubjects);
  const core = openCore(config, logger, tasks, metrics, {
    // One front serves many callers: a limit names whom it held back.
    limitCaller: (caller) => ({ session: '-', subject: caller }),
    ...(authenticate === undefined
      ? {}
      : {
          authorize: async (req, page) => {
            const caller = await authenticate(req);
            if ('refused' in caller) return 'unauthenticated';
            // With rules, the caller's rights say (they include adminSubjects); without, adminSubjects alone.
            if (caller.access === undefined ? admins.has(caller.subject) : caller.access[page])
              return 'allowed';
            core.audit.accessDenied({ right: page }, { subject: caller.subject, session: '-' });
            return 'forbidden';
          },
        }),
  });
  const { runner, running, observed } = core;
  // With an admin listener the operator's pages live there only, off the front. With bearer pass-through
  // any token gets past the front (the upstream judges it), so the pages are served on the admin listener
  // or not at all.
  const admin = config.admin.listen;
  const pagesOnFront = admin === undefined && config.auth.bearerPassthrough === undefined;
  warnOfPlainTokens(config, logger);
  const pagesGranted = config.auth.rules.some((rule) => rule.metrics === true || rule.dashboard === true);
  if (pagesOnFront && authenticate !== undefined && admins.size === 0 && !pagesGranted) {
    logger.info('no auth.adminSubjects: /metrics and /dashboard on the front answer 403; use --admin-listen');
  }
  if (admin === undefined && !pagesOnFront) {
    logger.info('auth.bearerPassthrough admits any token: /metrics and /dashboard need --admin-listen');
  }
  const hooks = {
    restarted: () => metrics.upstreamRestarted(),
    // Servers killed along with taskgate (a signal to the process group) stay down.
    mayRestart: () => runner.isAccepting,
  };
  const upstreams = sessionUpstreams(config, logger, hooks, credentials.forCaller(undefined));
  // An upstream that is sent each caller's credential is asked its era by the first caller's session.
  if (!credentials.perCaller) probeUpstreamAtStartUp(config, logger, credentials.forCaller(undefined));
  // Several servers: each session gets an aggregator before one Session per server (src/aggregate/).
  const aggregated =
    config.upstreams === undefined
      ? undefined
      : (await import('./aggregate/http-sessions.js')).aggregatedSessions(config, logger, core, {
          ...hooks,
          credentialFor: (caller, server) =>
            credentials.forServer(server, caller?.identity, caller?.upstreamAuthorization),
          forget: (sessionId) => front.forget(sessionId),
        });
  // 2026-07-28 requests go through a bridge session of their caller's, on an upstream as a 2025 session's
  // would be: its own server, or a port of the shared one or of the pool (several servers: an aggregator).
  const modern = new CallerBridges(
    (_caller, first) =>
      aggregated?.openModern(first) ??
      openModernSession({
        logger: logger.child({ session: 'modern' }),
        openChannel: (sessionLogger) =>
          upstreams.open(sessionLogger, credentials.forCaller(first.principal, first.upstreamAuthorization)),
        sessionOptions: (id, sessionLogger) => core.sessionOptions(id, sessionLogger),
      }),
    { maxCallers: config.http.maxSessions, idleMs: config.http.sessionIdleTimeout },
    logger,
  );
  // Each session's own server, until it has stopped: close() waits for them, so that none outlives taskgate.
  const sessionServers = new Set<Pick<Upstream, 'stop'>>();
  const front: HttpFront = new HttpFront(
    {
      ...parseListen(listen),
      path: config.http.path,
      allowedOrigins: config.http.allowedOrigins,
      maxMessageBytes: config.maxMessageBytes,
      maxSessions: config.http.maxSessions,
      sessionIdleTimeoutMs: config.http.sessionIdleTimeout,
      abandonedSessionTimeoutMs: config.http.abandonedSessionTimeout,
      eventLogSize: config.http.eventLogSize,
      eventLogBytes: config.http.eventLogBytes,
      eventLogTotalBytes: config.http.eventLogTotalBytes,
    },
    {
      openSession: async (channel: HttpSession, caller: Caller | undefined) => {
        if (aggregated !== undefined) return aggregated.open(channel, caller);
        const sessionLogger = logger.child({ session: channel.id.slice(0, 8) });
        running.follow(channel.id);
        const upstream = await upstreams.open(
          sessionLogger,
          credentials.forCaller(caller?.identity, caller?.upstreamAuthorization),
        );
        sessionServers.add(upstream);
        channel.intake = upstream.intake;
        const options = core.sessionOptions(channel.id, sessionLogger);
        const sightings = options.sightings!;
        const session = new Session(
          telemetry().front(channel, { transport: 'tcp', sessionId: channel.id }),
          upstream.channel,
          {
            ...options,
            lingerForTasks: true,
            sightings: {
              ...sightings,
              upstreamTask: (task, tool) => {
                running.seen(channel.id, task);
                sightings.upstreamTask(task, tool);
              },
              upstreamTaskForgotten: (taskId) => {
                running.forgot(channel.id, taskId);
                sightings.upstreamTaskForgotten(taskId);
              },
            },
            ...(caller === undefined ? {} : { identity: caller.identity, subject: caller.subject }),
            ...(caller?.access === undefined ? {} : { access: caller.access }),
          },
          {
            upstreamGone: () => undefined,
            closed: async () => {
              await upstream.stop();
              sessionServers.delete(upstream);
              running.forget(channel.id);
              front.forget(channel.id);
            },
          },
        );
        session.start();
      },
      notReady: () => aggregated?.notReady() ?? upstreamProblem(config.upstream),
      ...(aggregated === undefined ? {} : { servers: () => aggregated.servers() }),
      accepting: () => runner.isAccepting,
      modern: telemetry().modern(modern.serveTo),
      modernIntake: (caller: string) => modern.intakeOf(caller),
      ...(authenticate === undefined ? {} : { authenticate }),
      ...upstreamChallenge(config),
      ...extraRoutes(config, pagesOnFront ? observed.routes : undefined),
      sessionRefused: () => metrics.limitRefused('max_sessions'),
      sessionEnded: (why) => metrics.sessionEnded(why),
      tasksEndedAt: (sessionId) => aggregated?.tasksEndedAt(sessionId) ?? running.endedAt(sessionId),
    },
    logger,
  );
  metrics.observeSessions(() => front.sessionCount);
  const url = await front.listen();
  logger.info({ url: url.href }, 'listening for MCP over Streamable HTTP');
  // A command that cannot be started now is said once here; each session it refuses is then one line.
  const problem =
    aggregated !== undefined
      ? await aggregated.notReady()
      : config.upstream?.url === undefined
        ? await upstreamProblem(config.upstream)
        : undefined;
  if (problem !== undefined) {
    logger.warn(
      `${problem}: every new session is refused until it can be started (/readyz answers 503 meanwhile)`,
    );
  }
  const adminListener = await startAdmin(config, observed, logger, aggregated).catch(
    async (error: unknown) => {
      await front.close();
      core.close();
      throw error;
    },
  );
  return {
    url,
    drain: () => core.drain(),
    close: async () => {
      // The bridge first: its open streams end with their closing result, which the front then delivers.
      await modern.close();
      await front.close();
      // The sessions ended by front.close() stop their servers; every one is stopped here all the same.
      await Promise.all([...sessionServers].map((upstream) => upstream.stop()));
      await aggregated?.close();
      await upstreams.close();
      await adminListener?.close();
      core.close();
    },
  };
}

/** The HTTP gateway as a process: resolves with the exit code once a signal stops it. */
export async function runHttpGateway(config: Config): Promise<number> {
  const logger = createLogger(config.logLevel);
  const metrics = new PrometheusMetrics({ servers: config.upstreams !== undefined });
  const traces = await startTelemetry(config, logger);
  const store = await openStore(config, logger, { onExpired: (record) => metrics.taskExpired(record) });
  // A store left open (a Redis connection) would keep a process that could not listen alive.
  const gateway = await startHttpGateway(config, logger, store, metrics).catch(async (error: unknown) => {
    await store.close();
    throw error;
  });
  await new Promise((resolve) => {
    for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, resolve);
  });
  // A second signal means now.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(1));
  await gateway.drain();
  await gateway.close();
  await store.close();
  await traces.shutdown();
  return 0;
}

/** The front's routes beside MCP: the OAuth metadata (`auth.oauth`), then the operator's pages. */
function extraRoutes(config: Config, pages: Routes | undefined): { extraRoutes?: Routes } {
  const oauth = config.auth.oauth === undefined ? undefined : protectedResourceRoutes(config.auth.oauth);
  if (oauth === undefined) return pages === undefined ? {} : { extraRoutes: pages };
  return {
    extraRoutes: async (req, res, path) =>
      oauth(req, res, path) || (pages !== undefined && (await pages(req, res, path))),
  };
}

/**
 * An HTTP upstream's 401 to the credential that stands for the caller reaches it as a 401 of taskgate's:
 * with taskgate's own challenge when it is the resource server (the client gets a new token for taskgate,
 * which is exchanged or passed on anew), with the upstream's when the caller's token is the upstream's own.
 */
function upstreamChallenge(config: Config): { upstreamChallenge?: UpstreamChallenge } {
  const oauth = config.auth.oauth;
  if (oauth !== undefined) {
    const refused = challenge(oauth, {
      ok: false,
      status: 401,
      error: 'invalid_token',
      description: 'the upstream server refused the token sent for this caller',
    });
    return { upstreamChallenge: () => refused! };
  }
  if (config.auth.bearerPassthrough === undefined) return {};
  return {
    upstreamChallenge: (upstream) => upstream ?? 'Bearer realm="taskgate", error="invalid_token"',
  };
}

/** Callers' own tokens passed on in clear text to another machine: allowed, but said at start-up. */
function warnOfPlainTokens(config: Config, logger: Logger): void {
  const url = config.upstream?.url === undefined ? undefined : new URL(config.upstream.url);
  if (config.auth.bearerPassthrough === undefined || url?.protocol !== 'http:' || isLoopbackHost(url.host)) {
    return;
  }
  logger.warn(
    { upstream: url.origin },
    "auth.bearerPassthrough sends callers' tokens to the upstream server over plain HTTP: use https",
  );
}

interface SessionUpstreams {
  open(
    sessionLogger: Logger,
    credential: UpstreamCredential | undefined,
  ): Promise<Pick<Upstream, 'channel' | 'stop'> & { intake?: Valve | undefined }>;
  close(): Promise<void>;
}

/**
 * A server, with the valve that shuts while its stdin holds more than the mark unread (valve.ts): its
 * sessions' POSTs are not read meanwhile. One per server: a shared server's sessions wait on it together.
 */
async function openIntakeUpstream(
  config: Config,
  logger: Logger,
  options: Parameters<typeof openUpstream>[2],
): Promise<Upstream & { intake: Valve }> {
  const intake = new Valve();
  const upstream = await openUpstream(config, logger, { ...options, flow: { writes: intake } });
  return { ...upstream, intake };
}

/**
 * Where each session's upstream comes from: a server of its own (`upstream.sharing: session`), or a port
 * of one server (`shared`) or of one of `poolSize` servers (`pool`), each started with the first session
 * given to it and stopped with the gateway.
 */
function sessionUpstreams(
  config: Config,
  logger: Logger,
  hooks: { restarted: () => void; mayRestart: () => boolean },
  sharedCredential: UpstreamCredential | undefined,
): SessionUpstreams {
  const sharing = config.upstream?.sharing ?? 'session';
  if (sharing === 'session') {
    // The sessions to an HTTP upstream share its keep-alive connections, let go with the gateway.
    const connections =
      config.upstream?.url === undefined
        ? undefined
        : import('./transport/http-wire.js').then(({ OriginConnections }) => new OriginConnections());
    return {
      open: async (sessionLogger, credential) =>
        openIntakeUpstream(config, sessionLogger, { ...hooks, credential, connections: await connections }),
      close: async () => (await connections)?.close(),
    };
  }
  if (config.auth.bearerPassthrough !== undefined) {
    logger.warn(`upstream.sharing is ${sharing}: a shared upstream is sent no caller's own token`);
  }
  const size = sharing === 'pool' ? (config.upstream?.poolSize ?? 1) : 1;
  const pool = new UpstreamPool(
    size,
    (_index, memberLogger) =>
      openIntakeUpstream(config, memberLogger, { ...hooks, credential: sharedCredential }),
    logger.child({ session: 'shared' }),
    () => sharedSessionRules(),
  );
  return { open: () => pool.port(), close: () => pool.close() };
}

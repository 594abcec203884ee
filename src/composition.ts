/**
 * What both fronts are built from, once per process: the task store as sessions get it (observed for the
 * metrics, the dashboard and the audit log, with a per-session index of running tasks), the per-caller
 * limits, the tool policy, graceful shutdown and the admin listener. stdio-proxy.ts and http-proxy.ts add
 * only what carries their clients (one stdio connection, or the HTTP front's sessions) and where each
 * session's upstream comes from.
 */
import type { Logger } from 'pino';
import { Policy } from './config/policy.js';
import type { Config } from './config/schema.js';
import { TaskRunner } from './tasks/task-runner.js';
import { startAdminListener, type AdminListener } from './observability/admin.js';
import { countingDenials, createAuditLog } from './observability/audit.js';
import type { AuditLog, Caller } from './tasks/audit-log.js';
import type { Metrics } from './observability/metrics.js';
import { observeTasks, type Observability, type ObserveOptions } from './observability/observe.js';
import { Limits } from './security/limits.js';
import { RunningTasks, noticingCreations } from './session/running-tasks.js';
import type { SessionOptions } from './session/session.js';
import type { TaskStore } from './tasks/store.js';
import { upstreamProblem } from './upstream-readiness.js';

/** After a drain in which tasks finished, how long their results stay fetchable (at most shutdownGrace). */
const RESULTS_WINDOW_MS = 5_000;

export interface Core {
  readonly observed: Observability;
  readonly running: RunningTasks;
  readonly runner: TaskRunner;
  /** The audit log the sessions write to, for what a front decides itself (an operator's page refused). */
  readonly audit: AuditLog;
  /** What every Session of the process is given; the session's own id and logger. */
  sessionOptions(id: string, logger: Logger): SessionOptions;
  /**
   * Stops accepting tasks, lets the running ones finish within `shutdownGrace`, and fails the rest, so
   * that every waiter is answered before the sessions close; when some finished, their results stay
   * fetchable for RESULTS_WINDOW_MS more (at most shutdownGrace). At once when none runs.
   */
  drain(): Promise<void>;
  /** Stops watching the store (the store itself is closed by whoever opened it). */
  close(): void;
}

export interface CoreOptions extends ObserveOptions {
  /** How a caller that hit a limit appears in the audit log (a session's front knows what it stands for). */
  limitCaller(caller: string): Caller;
}

export function openCore(
  config: Config,
  logger: Logger,
  tasks: TaskStore,
  metrics: Metrics,
  options: CoreOptions,
): Core {
  const { limitCaller, ...observe } = options;
  const observed = observeTasks(tasks, metrics, logger, observe);
  const running = new RunningTasks();
  const store = noticingCreations(observed.store, running);
  const stopFollowing = store.onTransition((record) => running.changed(record));
  const audit = countingDenials(createAuditLog(logger, store, config.audit), (subject) =>
    metrics.taskLookupDenied(subject),
  );
  const limits = new Limits(config.limits, (limit, caller) => {
    metrics.limitRefused(limit);
    audit.limitHit(limit, limitCaller(caller));
  });
  const policy = new Policy(config);
  const runner = new TaskRunner();
  return {
    observed,
    running,
    runner,
    audit,
    sessionOptions: (id, sessionLogger) => ({
      id,
      config,
      policy,
      store,
      logger: sessionLogger,
      limits,
      audit,
      runner,
      onUpstreamAnswer: (method, seconds) => metrics.upstreamLatency(method, seconds),
      sightings: observed.board.sightingsOf(id),
    }),
    drain: async () => {
      const running = runner.size;
      // Nothing to wait for: the fronts stop at once (a desktop client kills taskgate 2 s after its SIGTERM).
      if (running === 0) logger.info('shutting down: no task running');
      else {
        logger.info(
          { graceMs: config.shutdownGrace, running },
          'shutting down: no new tasks (nor sessions over HTTP); letting running tasks finish',
        );
      }
      const { ended, completed } = await runner.drain(config.shutdownGrace);
      if (ended > 0) logger.warn({ ended }, 'grace period over: the tasks still running were failed');
      // A client that polls tasks/get learns of the last ones within its pollInterval: it gets a moment.
      const windowMs = Math.min(config.shutdownGrace, RESULTS_WINDOW_MS);
      if (completed === 0 || windowMs === 0) return;
      logger.info(
        { windowMs, completed },
        'shutting down: the results of the tasks that finished stay fetchable a moment longer',
      );
      await new Promise((resolve) => setTimeout(resolve, windowMs));
    },
    close: () => {
      audit.close();
      stopFollowing();
      observed.close();
    },
  };
}

/** What /readyz answers from: why no upstream can be served now, and with several servers each one's state. */
export interface ReadinessHooks {
  notReady(): Promise<string | undefined>;
  servers?(): Promise<Record<string, object>>;
}

/** The admin listener of `admin.listen`, if one is configured; its /readyz the one upstream's unless told. */
export async function startAdmin(
  config: Config,
  observed: Observability,
  logger: Logger,
  readiness: ReadinessHooks = { notReady: () => upstreamProblem(config.upstream) },
): Promise<AdminListener | undefined> {
  if (config.admin.listen === undefined) return undefined;
  const admin = await startAdminListener(
    config.admin.listen,
    observed.routes,
    logger,
    () => readiness.notReady(),
    readiness.servers === undefined ? undefined : () => readiness.servers!(),
  );
  logger.info({ url: admin.url.href }, 'admin listener: /metrics, /healthz, /readyz, /dashboard');
  return admin;
}

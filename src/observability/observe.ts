/**
 * Watching a process's tasks for the operator, in one place for both fronts: the store the sessions get
 * is wrapped so that creations, limit refusals and waiters are seen; every status change feeds the
 * metrics and the dashboard's board and is logged (debug) with its task id.
 */
import type { Logger } from 'pino';
import { MemoryTaskStore } from '../tasks/memory-store.js';
import type { TaskStore } from '../tasks/store.js';
import type { Metrics } from './metrics.js';
import { NO_TELEMETRY, telemetry } from '../telemetry/telemetry.js';
import { ObservedStore } from './observed-store.js';
import { operationsRoutes, type Authorize, type Routes } from './routes.js';
import { TaskBoard } from './task-board.js';

export interface Observability {
  /** The store to hand to sessions. */
  store: TaskStore;
  metrics: Metrics;
  board: TaskBoard;
  /** /metrics, /dashboard and /dashboard/data. */
  routes: Routes;
  /** Stops watching (the store itself is closed by whoever made it). */
  close(): void;
}

export interface ObserveOptions {
  /** Who may see /metrics and /dashboard: the front's own authentication, once it has one. */
  authorize?: Authorize;
}

export function observeTasks(
  store: TaskStore,
  metrics: Metrics,
  logger: Logger,
  options: ObserveOptions = {},
): Observability {
  const board = new TaskBoard({
    upstreamCreated: (task) => metrics.upstreamTaskCreated(task.tool, task.server),
    upstreamFinished: (task) =>
      metrics.upstreamTaskFinished(
        task.tool,
        task.server,
        task.status,
        (task.updatedAt - task.createdAt) / 1000,
      ),
  });
  metrics.observeLiveTasks(
    () => board.liveByStatus(),
    () => board.liveByServer(),
  );
  if (store instanceof MemoryTaskStore) {
    metrics.observeStore(() => ({ ...store.size, evictions: store.evictions }));
  }
  const unsubscribe = store.onTransition((record) => {
    metrics.taskChanged(record);
    board.changed(record);
    telemetry().taskChanged(record);
    if (!logger.isLevelEnabled('debug')) return;
    logger.debug(
      {
        taskId: record.taskId,
        tool: record.toolName,
        status: record.status,
        ...(record.statusMessage === undefined ? {} : { statusMessage: record.statusMessage }),
      },
      'task status changed',
    );
  });
  // Telemetry starts before any store is opened; off, a task read costs nothing more.
  const traces = telemetry();
  const observed = new ObservedStore(store, {
    ...(traces === NO_TELEMETRY
      ? {}
      : {
          creating: (task, create) => traces.createTask(task, create),
          seen: (record) => traces.taskSeen(record),
        }),
    created: (record) => {
      metrics.taskCreated(record);
      board.created(record);
    },
    refused: (limit) => metrics.limitRefused(limit),
    waiting: (delta) => metrics.waiting(delta),
  });
  return {
    store: observed,
    metrics,
    board,
    routes: operationsRoutes({ metrics, board, ...options }),
    close: unsubscribe,
  };
}

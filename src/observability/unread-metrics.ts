/**
 * The metrics of a run that nothing can read (stdio without an admin listener): counted nowhere, so that
 * such a run loads no prom-client, whose process metrics bring the OpenTelemetry API with them (together a
 * fair part of a start's time).
 */
import type { Metrics } from './metrics.js';

const nothing = (): void => undefined;

export const UNREAD_METRICS: Metrics = {
  contentType: 'text/plain; version=0.0.4; charset=utf-8',
  text: () => Promise.resolve(''),
  observeLiveTasks: nothing,
  observeStore: nothing,
  observeSessions: nothing,
  taskCreated: nothing,
  taskChanged: nothing,
  taskExpired: nothing,
  upstreamTaskCreated: nothing,
  upstreamTaskFinished: nothing,
  limitRefused: nothing,
  waiting: nothing,
  upstreamLatency: nothing,
  taskLookupDenied: nothing,
  sessionEnded: nothing,
  upstreamRestarted: nothing,
};

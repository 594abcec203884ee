/**
 * taskgate's Prometheus metrics, in a registry of their own (never prom-client's global one, so that an
 * embedding process and parallel tests cannot mix them up). Events are counted as they happen; levels
 * (live tasks, store size, sessions) are read from their sources when scraped.
 *
 * Label values that come from peers (tool names, methods) are bounded: past MAX_LABEL_VALUES distinct
 * values a metric counts the rest as "_other", so a client calling made-up tools cannot grow it forever.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { isTerminal, type TaskRecord, type TaskStatus } from '../tasks/state.js';

export const MAX_LABEL_VALUES = 200;
export const OTHER_LABEL = '_other';
const MAX_LABEL_LENGTH = 100;
/** The subject label of a caller without an identity (an open front, or stdio). */
export const NO_SUBJECT = '_none';
/** The server label of a task made through no one server (only when the config has `upstreams`). */
export const NO_SERVER = '_none';

/** Why a limit refused something: a setting's name (a fixed set, so the label stays bounded). */
export type LimitName =
  | 'max_tasks'
  | 'max_result_bytes'
  | 'max_sessions'
  | 'max_live_tasks'
  | 'task_creation_rate'
  | 'task_request_rate';

/** Why an HTTP session ended: its client DELETEd it, or taskgate ended it (idle, abandoned, shutting down). */
export type SessionEnd = 'deleted' | 'idle' | 'abandoned' | 'shutdown';

export interface StoreSize {
  live: number;
  terminal: number;
  /** Bytes of finished results held. */
  bytes: number;
  /** Finished tasks evicted to make room, since start. */
  evictions: number;
}

export interface MetricsOptions {
  /** Node's process metrics (CPU, memory, event loop, GC); on by default. */
  defaultMetrics?: boolean;
  /**
   * The task metrics carry a `server` label (the config has `upstreams`). prom-client fixes a metric's
   * labels when it is registered, so a deployment with one upstream keeps exactly the labels it had.
   */
  servers?: boolean;
}

/** Seconds on a scale from a quick tool call to a long-running task. */
const TASK_SECONDS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600];
const REQUEST_SECONDS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** A label's values, at most MAX_LABEL_VALUES distinct ones; later newcomers become "_other". */
class BoundedLabel {
  private readonly seen = new Set<string>();

  of(value: string): string {
    const label = value.length > MAX_LABEL_LENGTH ? value.slice(0, MAX_LABEL_LENGTH) : value;
    if (this.seen.has(label)) return label;
    if (this.seen.size >= MAX_LABEL_VALUES) return OTHER_LABEL;
    this.seen.add(label);
    return label;
  }
}

/** What taskgate counts and how it is read: PrometheusMetrics keeps it, UNREAD_METRICS drops it. */
export interface Metrics {
  readonly contentType: string;
  /** The exposition text of every metric. */
  text(): Promise<string>;
  /** `byServer` is read instead of `source` when the metrics have a server label (MetricsOptions.servers). */
  observeLiveTasks(
    source: () => Partial<Record<TaskStatus, number>>,
    byServer?: () => Map<string | undefined, Partial<Record<TaskStatus, number>>>,
  ): void;
  observeStore(source: () => StoreSize): void;
  observeSessions(source: () => number): void;
  taskCreated(record: TaskRecord): void;
  /** Every status change; only terminal ones are counted. */
  taskChanged(record: TaskRecord): void;
  taskExpired(record: TaskRecord): void;
  /** A server's own task (passed through), first seen live; `server` when one endpoint fronts several. */
  upstreamTaskCreated(tool: string, server: string | undefined): void;
  /** A server's own task seen live before, now seen finished, `seconds` after the server created it. */
  upstreamTaskFinished(tool: string, server: string | undefined, status: TaskStatus, seconds: number): void;
  limitRefused(limit: LimitName): void;
  /** A tasks/result started (+1) or stopped (-1) waiting. */
  waiting(delta: 1 | -1): void;
  /** The upstream answered a forwarded request after `seconds`. */
  upstreamLatency(method: string, seconds: number): void;
  /** A caller asked for a task that does not exist or is not its own; `subject` is absent without auth. */
  taskLookupDenied(subject: string | undefined): void;
  sessionEnded(reason: SessionEnd): void;
  upstreamRestarted(): void;
}

export class PrometheusMetrics implements Metrics {
  readonly registry = new Registry();
  private readonly tools = new BoundedLabel();
  private readonly methods = new BoundedLabel();
  private readonly subjects = new BoundedLabel();
  private liveSource: (() => Partial<Record<TaskStatus, number>>) | undefined;
  private liveByServer: (() => Map<string | undefined, Partial<Record<TaskStatus, number>>>) | undefined;
  /** Every server a live count was shown for: one with none left shows 0, not nothing. */
  private readonly liveServers = new Set<string>();
  private storeSource: (() => StoreSize) | undefined;
  private sessionSource: (() => number) | undefined;
  private readonly servers: boolean;
  private readonly created: Counter;
  private readonly finished: Counter;
  private readonly expired: Counter;
  private readonly duration: Histogram;
  private readonly upstreamCreated: Counter;
  private readonly upstreamFinished: Counter;
  private readonly upstreamDuration: Histogram;
  private readonly waiters = new Gauge({
    name: 'taskgate_task_result_waiters',
    help: 'tasks/result requests waiting for their task to finish',
    registers: [this.registry],
  });
  private readonly refusals = new Counter({
    name: 'taskgate_limit_refusals_total',
    help: 'Requests refused by a limit, by the setting that refused them',
    labelNames: ['limit'],
    registers: [this.registry],
  });
  private readonly latency = new Histogram({
    name: 'taskgate_upstream_request_duration_seconds',
    help: 'Time the upstream server took to answer a forwarded request, by method',
    labelNames: ['method'],
    buckets: REQUEST_SECONDS,
    registers: [this.registry],
  });
  private readonly denials = new Counter({
    name: 'taskgate_task_lookups_denied_total',
    help: 'tasks/get, tasks/result and tasks/cancel of a task that is unknown or not the caller’s, by subject',
    labelNames: ['subject'],
    registers: [this.registry],
  });
  private readonly sessionsClosed = new Counter({
    name: 'taskgate_sessions_closed_total',
    help: 'HTTP client sessions ended, by why: deleted (by the client), idle, abandoned (the client left), shutdown',
    labelNames: ['reason'],
    registers: [this.registry],
  });
  private readonly restarts = new Counter({
    name: 'taskgate_upstream_restarts_total',
    help: 'Times an upstream server was restarted after it went away',
    registers: [this.registry],
  });

  constructor(options: MetricsOptions = {}) {
    const registers = [this.registry];
    this.servers = options.servers === true;
    const byServer = this.servers ? ' and server' : '';
    const task = this.servers ? ['tool', 'server'] : ['tool'];
    this.created = new Counter({
      name: 'taskgate_tasks_created_total',
      help: `Tasks created by taskgate, by tool${byServer}`,
      labelNames: task,
      registers,
    });
    this.finished = new Counter({
      name: 'taskgate_tasks_finished_total',
      help: `Tasks that reached a terminal status (completed, failed, cancelled), by tool${byServer} and status`,
      labelNames: [...task, 'status'],
      registers,
    });
    this.expired = new Counter({
      name: 'taskgate_tasks_expired_total',
      help: `Finished tasks dropped because their ttl ran out, by tool${byServer} (memory store only)`,
      labelNames: task,
      registers,
    });
    this.duration = new Histogram({
      name: 'taskgate_task_duration_seconds',
      help: `Time from creation to a terminal status, by tool${byServer} and status`,
      labelNames: [...task, 'status'],
      buckets: TASK_SECONDS,
      registers,
    });
    this.upstreamCreated = new Counter({
      name: 'taskgate_upstream_tasks_created_total',
      help: `A server's own tasks (passed through), counted when first seen live, by tool${byServer}`,
      labelNames: task,
      registers,
    });
    this.upstreamFinished = new Counter({
      name: 'taskgate_upstream_tasks_finished_total',
      help: `A server's own tasks seen live, then in a terminal status, by tool${byServer} and status`,
      labelNames: [...task, 'status'],
      registers,
    });
    this.upstreamDuration = new Histogram({
      name: 'taskgate_upstream_task_duration_seconds',
      help: `A server's own tasks: time from its creation to the terminal status seen, by tool${byServer} and status`,
      labelNames: [...task, 'status'],
      buckets: TASK_SECONDS,
      registers,
    });
    const liveTasks: Gauge = new Gauge({
      name: 'taskgate_tasks_live',
      help: `Tasks not yet finished that this process created or changed, by status${byServer}`,
      labelNames: this.servers ? ['status', 'server'] : ['status'],
      registers,
      collect: () => {
        if (this.servers) return this.collectLiveByServer(liveTasks);
        const counts = this.liveSource?.() ?? {};
        for (const status of ['working', 'input_required'] as const) {
          liveTasks.set({ status }, counts[status] ?? 0);
        }
      },
    });
    const storeTasks: Gauge<'state'> = new Gauge({
      name: 'taskgate_store_tasks',
      help: 'Tasks held by the task store, live or finished (memory store only)',
      labelNames: ['state'],
      registers,
      collect: () => {
        const size = this.storeSource?.();
        if (!size) return;
        storeTasks.set({ state: 'live' }, size.live);
        storeTasks.set({ state: 'finished' }, size.terminal);
      },
    });
    const storeBytes: Gauge = new Gauge({
      name: 'taskgate_store_result_bytes',
      help: 'Bytes of finished results held by the task store (memory store only)',
      registers,
      collect: () => {
        const size = this.storeSource?.();
        if (size) storeBytes.set(size.bytes);
      },
    });
    const evictions: Counter = new Counter({
      name: 'taskgate_store_evictions_total',
      help: 'Finished tasks evicted, least recently used first, to make room (memory store only)',
      registers,
      collect: () => {
        const size = this.storeSource?.();
        if (!size) return;
        // The store counts; this counter mirrors its count.
        evictions.reset();
        evictions.inc(size.evictions);
      },
    });
    const sessions: Gauge = new Gauge({
      name: 'taskgate_sessions_open',
      help: 'Client sessions open',
      registers,
      collect: () => sessions.set(this.sessionSource?.() ?? 0),
    });
    if (options.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry });
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }

  // ── sources read when scraped ────────────────────────────────────────────────────────────────────

  observeLiveTasks(
    source: () => Partial<Record<TaskStatus, number>>,
    byServer?: () => Map<string | undefined, Partial<Record<TaskStatus, number>>>,
  ): void {
    this.liveSource = source;
    this.liveByServer = byServer;
  }

  observeStore(source: () => StoreSize): void {
    this.storeSource = source;
  }

  observeSessions(source: () => number): void {
    this.sessionSource = source;
  }

  // ── events ───────────────────────────────────────────────────────────────────────────────────────

  taskCreated(record: TaskRecord): void {
    this.created.inc(this.taskLabels(record));
  }

  taskChanged(record: TaskRecord): void {
    if (!isTerminal(record.status)) return;
    const labels = { ...this.taskLabels(record), status: record.status };
    this.finished.inc(labels);
    this.duration.observe(labels, Math.max(0, record.lastUpdatedAt - record.createdAt) / 1000);
  }

  taskExpired(record: TaskRecord): void {
    this.expired.inc(this.taskLabels(record));
  }

  upstreamTaskCreated(tool: string, server: string | undefined): void {
    this.upstreamCreated.inc(this.labels(tool, server));
  }

  upstreamTaskFinished(tool: string, server: string | undefined, status: TaskStatus, seconds: number): void {
    const labels = { ...this.labels(tool, server), status };
    this.upstreamFinished.inc(labels);
    this.upstreamDuration.observe(labels, Math.max(0, seconds));
  }

  limitRefused(limit: LimitName): void {
    this.refusals.inc({ limit });
  }

  waiting(delta: 1 | -1): void {
    this.waiters.inc(delta);
  }

  upstreamLatency(method: string, seconds: number): void {
    this.latency.observe({ method: this.methods.of(method) }, seconds);
  }

  taskLookupDenied(subject: string | undefined): void {
    this.denials.inc({ subject: subject === undefined ? NO_SUBJECT : this.subjects.of(subject) });
  }

  sessionEnded(reason: SessionEnd): void {
    this.sessionsClosed.inc({ reason });
  }

  upstreamRestarted(): void {
    this.restarts.inc();
  }

  private collectLiveByServer(liveTasks: Gauge): void {
    const counts = new Map<string, Partial<Record<TaskStatus, number>>>();
    for (const [server, of] of this.liveByServer?.() ?? []) {
      const label = server ?? NO_SERVER;
      this.liveServers.add(label);
      const sum = counts.get(label) ?? {};
      for (const status of ['working', 'input_required'] as const) {
        sum[status] = (sum[status] ?? 0) + (of[status] ?? 0);
      }
      counts.set(label, sum);
    }
    for (const server of this.liveServers) {
      const of = counts.get(server) ?? {};
      for (const status of ['working', 'input_required'] as const) {
        liveTasks.set({ status, server }, of[status] ?? 0);
      }
    }
  }

  private taskLabels(record: TaskRecord): Record<string, string> {
    return this.labels(record.toolName, record.server);
  }

  private labels(toolName: string, server: string | undefined): Record<string, string> {
    const tool = this.tools.of(toolName);
    return this.servers ? { tool, server: server ?? NO_SERVER } : { tool };
  }
}

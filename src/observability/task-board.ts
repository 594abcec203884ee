/**
 * What the task dashboard shows: the live tasks this process knows of, the most recent finished ones, and
 * per-minute counts by status over the last hour. Fed by the store's creations and transitions (only
 * those made in this process), by the progress of the calls behind them, and by what the sessions see of
 * the tasks upstream servers run themselves (passed through); everything it holds is bounded.
 */
import { isTerminal, type TaskRecord, type TaskStatus } from '../tasks/state.js';

export const STATUSES: readonly TaskStatus[] = [
  'working',
  'input_required',
  'completed',
  'failed',
  'cancelled',
];
export type StatusCounts = Record<TaskStatus, number>;

/** One task as the dashboard shows it: never its full id, which is the only key to a task without identity. */
export interface BoardTask {
  /** The first 8 characters of the task id: enough to find it in the logs, not enough to use it. */
  id: string;
  tool: string;
  /** The server it was made through, when one endpoint fronts several (TaskRecord.server). */
  server?: string;
  status: TaskStatus;
  statusMessage?: string;
  /** The last progress notification of the task's call, for people ("3/10 · fetching"). */
  progress?: string;
  /** Who runs it: taskgate (augment), or the upstream server itself (passed through). */
  runBy: 'taskgate' | 'server';
  createdAt: number;
  updatedAt: number;
}

/** What a session tells the board of the tasks that pass through it. */
export interface TaskSightings {
  /**
   * An upstream's own task, as it described it (a CreateTaskResult's task, tasks/get, a status notification);
   * `server`: which one, when one endpoint fronts several.
   */
  upstreamTask(task: unknown, tool: string | undefined, server?: string): void;
  /** An upstream's own task no longer followed, its end unknown: it stops counting as live. */
  upstreamTaskForgotten(taskId: string): void;
  /** A progress notification of the call behind an upstream's own task. */
  upstreamProgress(taskId: string, params: Record<string, unknown> | undefined): void;
  /** A progress notification of the call behind one of taskgate's tasks. */
  progress(taskId: string, params: Record<string, unknown> | undefined): void;
}

export interface BoardSnapshot {
  now: number;
  /** Live tasks, most recently changed first, at most `maxShown`. */
  live: BoardTask[];
  /** How many live tasks there are in all, and by status. */
  liveTotal: number;
  liveByStatus: Pick<StatusCounts, 'working' | 'input_required'>;
  /** Finished tasks, most recently finished first. */
  recent: BoardTask[];
  /**
   * One bucket per minute, oldest first, the last one the current minute. Each task active in a minute
   * counts once there: by the status it ended with, if it ended in that minute, else by its status at the
   * end of the minute (now, for the current one).
   */
  history: { bucketMs: number; start: number; buckets: StatusCounts[] };
}

export interface TaskBoardOptions {
  /** Finished tasks kept for the dashboard (default 100). */
  recent?: number;
  /** Live tasks followed at most (default 10 000); past it the oldest is dropped from the board. */
  maxLive?: number;
  /** Live tasks listed in a snapshot at most (default 200). */
  maxShown?: number;
  now?: () => number;
  /** A server's own task first seen live, and one seen live before, now finished (for the metrics). */
  upstreamCreated?: (task: BoardTask) => void;
  upstreamFinished?: (task: BoardTask) => void;
}

export const BUCKET_MS = 60_000;
export const HISTORY_BUCKETS = 60;
/** Longer tool names and status messages are cut: they come from clients and servers. */
const MAX_TEXT = 300;

const zero = (): StatusCounts => ({ working: 0, input_required: 0, completed: 0, failed: 0, cancelled: 0 });
const cut = (text: string): string => (text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT)}…` : text);

export class TaskBoard {
  /** taskId → task, least recently changed first (a Map keeps insertion order). */
  private readonly live = new Map<string, BoardTask>();
  private readonly liveCounts = zero();
  /** Key → epoch ms when its ttl ends, for the upstreams' live tasks that have one. */
  private readonly expiries = new Map<string, number>();
  /** The earliest of those (Infinity: none), so that most reads skip the sweep. */
  private nextExpiry = Infinity;
  /** Finished tasks, oldest first. */
  private readonly finished: BoardTask[] = [];
  private readonly buckets: { minute: number; counts: StatusCounts }[] = [];
  private readonly now: () => number;
  private readonly keepRecent: number;
  private readonly maxLive: number;
  private readonly maxShown: number;
  private readonly options: TaskBoardOptions;

  constructor(options: TaskBoardOptions = {}) {
    this.options = options;
    this.now = options.now ?? Date.now;
    this.keepRecent = options.recent ?? 100;
    this.maxLive = options.maxLive ?? 10_000;
    this.maxShown = options.maxShown ?? 200;
  }

  /** Live tasks by status, for the metrics. */
  liveByStatus(): Pick<StatusCounts, 'working' | 'input_required'> {
    this.dropExpired(this.now());
    return this.liveNow();
  }

  /** Live tasks by server (undefined: made through none) and status, for the metrics; read when scraped. */
  liveByServer(): Map<string | undefined, Pick<StatusCounts, 'working' | 'input_required'>> {
    this.dropExpired(this.now());
    const counts = new Map<string | undefined, Pick<StatusCounts, 'working' | 'input_required'>>();
    for (const task of this.live.values()) {
      const of = counts.get(task.server) ?? { working: 0, input_required: 0 };
      if (task.status === 'working' || task.status === 'input_required') of[task.status]++;
      counts.set(task.server, of);
    }
    return counts;
  }

  private liveNow(): Pick<StatusCounts, 'working' | 'input_required'> {
    return { working: this.liveCounts.working, input_required: this.liveCounts.input_required };
  }

  created(record: TaskRecord): void {
    this.changed(record);
  }

  /** One of taskgate's tasks was created or changed status (creations and transitions arrive here alike). */
  changed(record: TaskRecord): void {
    this.place(record.taskId, {
      id: record.taskId.slice(0, 8),
      tool: cut(record.toolName),
      ...(record.server === undefined ? {} : { server: record.server }),
      status: record.status,
      runBy: 'taskgate',
      createdAt: record.createdAt,
      updatedAt: record.lastUpdatedAt,
      ...(record.statusMessage === undefined ? {} : { statusMessage: cut(record.statusMessage) }),
    });
  }

  /**
   * A task an upstream server runs itself, as a session saw it go by. `key` tells apart equal ids of
   * different upstream connections; the tool is known only from the call that created it (a task first
   * seen through tasks/get shows "(unknown)"). One never seen to end leaves the live tasks at its ttl.
   */
  upstreamTask(key: string, described: unknown, tool?: string, server?: string): void {
    const task = upstreamView(described);
    if (task === undefined) return;
    const before = this.live.get(key);
    const named = server ?? before?.server;
    // Its end is counted once, when the board saw it live; later tasks/get of it change nothing.
    if (before === undefined && isTerminal(task.status)) return;
    if (task.expiresAt !== undefined && !isTerminal(task.status)) {
      if (task.expiresAt <= this.now()) return this.forget(key);
      this.expiries.set(key, task.expiresAt);
      this.nextExpiry = Math.min(this.nextExpiry, task.expiresAt);
    }
    const seen: BoardTask = {
      id: task.taskId.slice(0, 8),
      tool: cut(tool ?? before?.tool ?? '(unknown)'),
      ...(named === undefined ? {} : { server: named }),
      status: task.status,
      runBy: 'server',
      createdAt: task.createdAt,
      updatedAt: task.updatedAt,
      ...(task.statusMessage === undefined ? {} : { statusMessage: cut(task.statusMessage) }),
    };
    this.place(key, seen);
    if (before === undefined) this.options.upstreamCreated?.(seen);
    else if (isTerminal(seen.status)) this.options.upstreamFinished?.(seen);
  }

  /** What one session sees: upstream task ids are its upstream's, so they are keyed by the session too. */
  sightingsOf(sessionId: string): TaskSightings {
    return {
      upstreamTask: (task, tool, server) => {
        const taskId = (task as { taskId?: unknown } | undefined)?.taskId;
        if (typeof taskId === 'string') this.upstreamTask(`${sessionId} ${taskId}`, task, tool, server);
      },
      upstreamTaskForgotten: (taskId) => this.forget(`${sessionId} ${taskId}`),
      upstreamProgress: (taskId, params) => this.progress(`${sessionId} ${taskId}`, params ?? {}),
      progress: (taskId, params) => this.progress(taskId, params ?? {}),
    };
  }

  /** The progress of a live task's call (`key` as the task was placed with): a change like any other. */
  progress(key: string, progress: { progress?: unknown; total?: unknown; message?: unknown }): void {
    const task = this.live.get(key);
    if (task === undefined || typeof progress.progress !== 'number') return;
    const amount =
      typeof progress.total === 'number'
        ? `${progress.progress}/${progress.total}`
        : String(progress.progress);
    task.progress = cut(typeof progress.message === 'string' ? `${amount} · ${progress.message}` : amount);
    task.updatedAt = Math.max(task.updatedAt, this.now());
    this.live.delete(key);
    this.live.set(key, task);
  }

  /** A live task leaves the board uncounted: its end will not be known. */
  forget(key: string): void {
    const task = this.live.get(key);
    this.expiries.delete(key);
    if (task === undefined) return;
    this.advance(this.now());
    this.live.delete(key);
    this.liveCounts[task.status]--;
  }

  /** Upstream tasks whose ttl ended unseen are gone from their server: they are forgotten. */
  private dropExpired(now: number): void {
    if (now < this.nextExpiry) return;
    this.nextExpiry = Infinity;
    for (const [key, expiresAt] of this.expiries) {
      if (expiresAt <= now) this.forget(key);
      else this.nextExpiry = Math.min(this.nextExpiry, expiresAt);
    }
  }

  private place(key: string, task: BoardTask): void {
    const bucket = this.advance(this.now());
    const before = this.live.get(key);
    if (before) {
      this.live.delete(key);
      this.liveCounts[before.status]--;
      if (before.progress !== undefined) task.progress ??= before.progress;
    }
    if (isTerminal(task.status)) {
      this.expiries.delete(key);
      bucket[task.status]++;
      this.finished.push(task);
      if (this.finished.length > this.keepRecent) this.finished.shift();
      return;
    }
    if (!before && this.live.size >= this.maxLive) {
      const [oldestId, oldest] = this.live.entries().next().value!;
      this.live.delete(oldestId);
      this.expiries.delete(oldestId);
      this.liveCounts[oldest.status]--;
    }
    // A changed task moves to the end: the most recently active are shown first.
    this.live.set(key, task);
    this.liveCounts[task.status]++;
  }

  snapshot(): BoardSnapshot {
    const now = this.now();
    this.dropExpired(now);
    this.advance(now);
    const minute = Math.floor(now / BUCKET_MS);
    const start = minute - HISTORY_BUCKETS + 1;
    const byMinute = new Map(this.buckets.map((bucket) => [bucket.minute, bucket.counts]));
    const buckets = Array.from({ length: HISTORY_BUCKETS }, (_, i) => ({
      ...(byMinute.get(start + i) ?? zero()),
    }));
    // The current minute is not over: its live tasks are those live now.
    Object.assign(buckets[HISTORY_BUCKETS - 1]!, this.liveNow());
    const live = [...this.live.values()].slice(-this.maxShown).reverse();
    return {
      now,
      live,
      liveTotal: this.live.size,
      liveByStatus: this.liveNow(),
      recent: [...this.finished].reverse(),
      history: { bucketMs: BUCKET_MS, start: start * BUCKET_MS, buckets },
    };
  }

  /**
   * The current minute's counts. Minutes that ended since the last change are closed with the live tasks
   * as they stand, which is how they stood at the end of each of those minutes.
   */
  private advance(now: number): StatusCounts {
    const minute = Math.floor(now / BUCKET_MS);
    const last = this.buckets.at(-1);
    if (last && last.minute >= minute) return last.counts;
    const live = this.liveNow();
    if (last) Object.assign(last.counts, live);
    const from = last ? Math.max(last.minute + 1, minute - HISTORY_BUCKETS + 1) : minute;
    for (let m = from; m < minute; m++) this.buckets.push({ minute: m, counts: { ...zero(), ...live } });
    this.buckets.push({ minute, counts: zero() });
    if (this.buckets.length > HISTORY_BUCKETS) this.buckets.splice(0, this.buckets.length - HISTORY_BUCKETS);
    return this.buckets.at(-1)!.counts;
  }
}

const STATUS_SET = new Set<unknown>(STATUSES);

/** The fields the board shows of a task an upstream described, or undefined when it is not one. */
function upstreamView(value: unknown):
  | {
      taskId: string;
      status: TaskStatus;
      statusMessage?: string;
      createdAt: number;
      updatedAt: number;
      expiresAt?: number;
    }
  | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const task = value as Record<string, unknown>;
  if (typeof task.taskId !== 'string' || !STATUS_SET.has(task.status)) return undefined;
  const createdAt = typeof task.createdAt === 'string' ? Date.parse(task.createdAt) : NaN;
  const updatedAt = typeof task.lastUpdatedAt === 'string' ? Date.parse(task.lastUpdatedAt) : createdAt;
  if (!Number.isFinite(createdAt)) return undefined;
  return {
    taskId: task.taskId,
    status: task.status as TaskStatus,
    createdAt,
    updatedAt: Number.isFinite(updatedAt) ? updatedAt : createdAt,
    ...(typeof task.ttl === 'number' ? { expiresAt: createdAt + task.ttl } : {}),
    ...(typeof task.statusMessage === 'string' ? { statusMessage: task.statusMessage } : {}),
  };
}

/**
 * What the task dashboard shows: the live tasks this process knows of, the most recent finished ones, and
 * per-minute counts by status over the last hour. Fed by the store's creations and transitions (only
 * those made in this process); everything it holds is bounded.
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
  status: TaskStatus;
  statusMessage?: string;
  createdAt: number;
  updatedAt: number;
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
  /** Finished tasks, oldest first. */
  private readonly finished: BoardTask[] = [];
  private readonly buckets: { minute: number; counts: StatusCounts }[] = [];
  private readonly now: () => number;
  private readonly keepRecent: number;
  private readonly maxLive: number;
  private readonly maxShown: number;

  constructor(options: TaskBoardOptions = {}) {
    this.now = options.now ?? Date.now;
    this.keepRecent = options.recent ?? 100;
    this.maxLive = options.maxLive ?? 10_000;
    this.maxShown = options.maxShown ?? 200;
  }

  /** Live tasks by status, for the metrics. */
  liveByStatus(): Pick<StatusCounts, 'working' | 'input_required'> {
    return { working: this.liveCounts.working, input_required: this.liveCounts.input_required };
  }

  created(record: TaskRecord): void {
    this.changed(record);
  }

  /** A task was created or changed status (creations and transitions arrive here alike). */
  changed(record: TaskRecord): void {
    const bucket = this.advance(this.now());
    const before = this.live.get(record.taskId);
    if (before) {
      this.live.delete(record.taskId);
      this.liveCounts[before.status]--;
    }
    const task: BoardTask = {
      id: record.taskId.slice(0, 8),
      tool: cut(record.toolName),
      status: record.status,
      createdAt: record.createdAt,
      updatedAt: record.lastUpdatedAt,
      ...(record.statusMessage === undefined ? {} : { statusMessage: cut(record.statusMessage) }),
    };
    if (isTerminal(record.status)) {
      bucket[record.status]++;
      this.finished.push(task);
      if (this.finished.length > this.keepRecent) this.finished.shift();
      return;
    }
    if (!before && this.live.size >= this.maxLive) {
      const [oldestId, oldest] = this.live.entries().next().value!;
      this.live.delete(oldestId);
      this.liveCounts[oldest.status]--;
    }
    // A changed task moves to the end: the most recently active are shown first.
    this.live.set(record.taskId, task);
    this.liveCounts[record.status]++;
  }

  snapshot(): BoardSnapshot {
    const now = this.now();
    this.advance(now);
    const minute = Math.floor(now / BUCKET_MS);
    const start = minute - HISTORY_BUCKETS + 1;
    const byMinute = new Map(this.buckets.map((bucket) => [bucket.minute, bucket.counts]));
    const buckets = Array.from({ length: HISTORY_BUCKETS }, (_, i) => ({
      ...(byMinute.get(start + i) ?? zero()),
    }));
    // The current minute is not over: its live tasks are those live now.
    Object.assign(buckets[HISTORY_BUCKETS - 1]!, this.liveByStatus());
    const live = [...this.live.values()].slice(-this.maxShown).reverse();
    return {
      now,
      live,
      liveTotal: this.live.size,
      liveByStatus: this.liveByStatus(),
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
    const live = this.liveByStatus();
    if (last) Object.assign(last.counts, live);
    const from = last ? Math.max(last.minute + 1, minute - HISTORY_BUCKETS + 1) : minute;
    for (let m = from; m < minute; m++) this.buckets.push({ minute: m, counts: { ...zero(), ...live } });
    this.buckets.push({ minute, counts: zero() });
    if (this.buckets.length > HISTORY_BUCKETS) this.buckets.splice(0, this.buckets.length - HISTORY_BUCKETS);
    return this.buckets.at(-1)!.counts;
  }
}

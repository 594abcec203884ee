/**
 * The task lifecycle of MCP 2025-11-25, written once. Every status change in every store goes through
 * `transition`, which refuses anything the spec does not allow; terminal tasks never change again.
 *
 * ```mermaid
 * stateDiagram-v2
 *     [*] --> working
 *     working --> input_required
 *     working --> completed
 *     working --> failed
 *     working --> cancelled
 *     input_required --> working
 *     input_required --> completed
 *     input_required --> failed
 *     input_required --> cancelled
 *     completed --> [*]
 *     failed --> [*]
 *     cancelled --> [*]
 * ```
 */

import { Pieces, type Bytes } from '../protocol/pieces.js';

/** A move the state machine does not allow (out of a terminal status, or not in the table). */
export class IllegalTransitionError extends Error {
  constructor(
    readonly taskId: string,
    readonly from: TaskStatus,
    readonly to: TaskStatus,
  ) {
    super(`Task ${taskId} cannot move from ${from} to ${to}`);
    this.name = 'IllegalTransitionError';
  }
}

/**
 * A change that expected the task in one status found it in another: something else moved it first
 * (a lost race, not a bug). Nothing was changed.
 */
export class StaleStatusError extends Error {
  constructor(
    readonly taskId: string,
    readonly expected: TaskStatus,
    readonly actual: TaskStatus,
    readonly to: TaskStatus,
  ) {
    super(`Task ${taskId} is ${actual}, not ${expected}: it was not moved to ${to}`);
    this.name = 'StaleStatusError';
  }
}

export type TaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';
export type TerminalStatus = Extract<TaskStatus, 'completed' | 'failed' | 'cancelled'>;

export const ALLOWED_TRANSITIONS: Readonly<Record<TaskStatus, readonly TaskStatus[]>> = {
  working: ['input_required', 'completed', 'failed', 'cancelled'],
  input_required: ['working', 'completed', 'failed', 'cancelled'],
  completed: [],
  failed: [],
  cancelled: [],
};

export const isTerminal = (status: TaskStatus): status is TerminalStatus =>
  ALLOWED_TRANSITIONS[status].length === 0;

export const canTransition = (from: TaskStatus, to: TaskStatus): boolean =>
  ALLOWED_TRANSITIONS[from].includes(to);

/** What the underlying request returned: exactly one of a result or a JSON-RPC error. */
export type TaskOutcome =
  { result: Record<string, unknown> } | { error: { code: number; message: string; data?: unknown } };

export interface TaskRecord {
  taskId: string;
  status: TaskStatus;
  statusMessage?: string;
  /** Epoch milliseconds; rendered as ISO 8601 on the wire. */
  createdAt: number;
  lastUpdatedAt: number;
  /** Actual ttl in ms, counted from creation. */
  ttl: number;
  pollInterval: number;
  /** Who may list the task (an identity, or the creating session when there is none). */
  owner: string;
  /** Set when the task is bound to an authenticated identity: only that identity may touch it. */
  identity?: string;
  /** The session whose connection receives this task's notifications. */
  sessionId: string;
  toolName: string;
  /**
   * The W3C traceparent of the task's span, when telemetry is on: the replicas sharing the store link
   * their spans about the task to it.
   */
  traceparent?: string;
  /** The server the task was made through, when one endpoint fronts several (`upstreams`). */
  server?: string;
  outcome?: TaskOutcome;
  /**
   * A success outcome kept, in place of `outcome`, as the bytes of its result as they arrived (issue 33),
   * in the pieces they were read in: tasks/result serves them as they are (result-bytes.ts). Text when a
   * store gives it back as text.
   */
  resultBytes?: Bytes | string;
  /** Size in bytes of the serialized outcome, for the store's byte budget. */
  outcomeBytes: number;
}

export interface TransitionChange {
  /** Apply the change only while the task is still in this status (StaleStatusError otherwise). */
  from?: TaskStatus;
  status: TaskStatus;
  statusMessage?: string;
  outcome?: TaskOutcome;
  /** The outcome as its result's bytes (TaskRecord.resultBytes), in place of `outcome`. */
  resultBytes?: Bytes | string;
  outcomeBytes?: number;
}

/**
 * The one guarded state change: returns the new record, or throws StaleStatusError (the task is not in
 * the status the change expects) or IllegalTransitionError.
 */
export function transition(record: TaskRecord, change: TransitionChange, now: number): TaskRecord {
  if (change.from !== undefined && change.from !== record.status) {
    throw new StaleStatusError(record.taskId, change.from, record.status, change.status);
  }
  if (!canTransition(record.status, change.status)) {
    throw new IllegalTransitionError(record.taskId, record.status, change.status);
  }
  const next: TaskRecord = {
    ...record,
    status: change.status,
    lastUpdatedAt: Math.max(now, record.lastUpdatedAt),
  };
  if (change.statusMessage === undefined) delete next.statusMessage;
  else next.statusMessage = change.statusMessage;
  if (change.outcome !== undefined) {
    next.outcome = change.outcome;
    delete next.resultBytes;
    next.outcomeBytes = change.outcomeBytes ?? 0;
  } else if (change.resultBytes !== undefined) {
    next.resultBytes = change.resultBytes;
    delete next.outcome;
    next.outcomeBytes = change.outcomeBytes ?? 0;
  }
  return next;
}

/** The task's outcome as an object, parsing a result kept as bytes: for the few readers that need one. */
export function outcomeOf(record: TaskRecord): TaskOutcome | undefined {
  const bytes = record.resultBytes;
  if (bytes === undefined) return record.outcome;
  const text =
    typeof bytes === 'string' ? bytes : (bytes instanceof Pieces ? bytes.join() : bytes).toString('utf8');
  return { result: JSON.parse(text) as Record<string, unknown> };
}

/**
 * An epoch-ms time as ISO 8601, remembering the last one: tasks created or finished in a burst share
 * their millisecond, and a Date per field is most of what a wire task costs.
 */
function isoTime(): (ms: number) => string {
  let lastMs = NaN;
  let lastIso = '';
  return (ms) => {
    if (ms !== lastMs) {
      lastIso = new Date(ms).toISOString();
      lastMs = ms;
    }
    return lastIso;
  };
}
const createdIso = isoTime();
const updatedIso = isoTime();

/** The Task object of the spec, as sent in CreateTaskResult, tasks/get, tasks/list, tasks/cancel and status notifications. */
export function toWireTask(record: TaskRecord): Record<string, unknown> {
  const task: Record<string, unknown> = {
    taskId: record.taskId,
    status: record.status,
    createdAt: createdIso(record.createdAt),
    lastUpdatedAt: updatedIso(record.lastUpdatedAt),
    ttl: record.ttl,
    pollInterval: record.pollInterval,
  };
  if (record.statusMessage !== undefined) task.statusMessage = record.statusMessage;
  return task;
}

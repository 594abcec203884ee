/**
 * One task, two faces: the 2025-11-25 tasks (v1) and the tasks extension of 2026-07-28 (v2, SEP-2663;
 * ext-tasks specification/draft/tasks.md). Whatever a task came from — a record taskgate holds, a v1
 * upstream's Task with the outcome its tasks/result gave, a v2 upstream's DetailedTask — it is read into
 * TaskFacts once, and each face is drawn from those facts.
 *
 * What differs, besides names (`ttl`/`ttlMs`, `pollInterval`/`pollIntervalMs`) and nesting (`{task}` vs
 * flat with `resultType: "task"`): a tool result with `isError: true` is `failed` on the v1 face (as
 * taskgate records it) and `completed` with that result on the v2 face, where `failed` is only for JSON-RPC
 * errors (tasks.md "Task Status", "Task Execution Errors"). v2 inlines the result, error or pending input
 * requests in tasks/get; v1 serves them through tasks/result and side requests.
 */
import type { CreateTaskResultV1, TaskV1 } from '@modelcontextprotocol/ext-tasks/core/v1';
import type { CreateTaskResultV2, DetailedTaskV2 } from '@modelcontextprotocol/ext-tasks/core/v2';
import { ErrorCode, type JsonRpcErrorObject } from '../protocol/errors.js';
import { isObject, RELATED_TASK_META, type JsonObject } from '../protocol/messages.js';
import { isTerminal, outcomeOf, type TaskOutcome, type TaskRecord, type TaskStatus } from './state.js';

export interface TaskFacts {
  taskId: string;
  /** As its source reported it; the faces settle what isError means for each generation. */
  status: TaskStatus;
  statusMessage?: string;
  createdAt: string;
  lastUpdatedAt: string;
  /** null: unlimited. */
  ttlMs: number | null;
  pollIntervalMs?: number;
  /** Required on a completed or failed task for the v2 face (its inline result or error). */
  outcome?: TaskOutcome;
  /** The outstanding input requests of an input_required task, by key (keys never reused in a task). */
  inputRequests?: JsonObject;
}

/** v2 Task: what CreateTaskResult and every DetailedTask share (the facts without the outcome or input). */
export type TaskV2Face = Omit<TaskFacts, 'outcome' | 'inputRequests'>;

export type DetailedTaskV2Face = TaskV2Face &
  (
    | { status: 'working' | 'cancelled' }
    | { status: 'input_required'; inputRequests: JsonObject }
    | { status: 'completed'; result: JsonObject }
    | { status: 'failed'; error: JsonRpcErrorObject }
  );

/** A completed or failed task without its outcome: a v1 task's tasks/result has to be fetched first. */
export class OutcomeRequiredError extends Error {
  constructor(readonly taskId: string) {
    super(`Task ${taskId} is terminal but its outcome is not known`);
    this.name = 'OutcomeRequiredError';
  }
}

export function factsFromRecord(record: TaskRecord, inputRequests?: JsonObject): TaskFacts {
  return withOptional(
    {
      taskId: record.taskId,
      status: record.status,
      createdAt: new Date(record.createdAt).toISOString(),
      lastUpdatedAt: new Date(record.lastUpdatedAt).toISOString(),
      ttlMs: record.ttl,
      pollIntervalMs: record.pollInterval,
    },
    { statusMessage: record.statusMessage, outcome: outcomeOf(record), inputRequests },
  );
}

/** A v1 upstream's Task; for a terminal one, `outcome` is what its tasks/result answered. */
export function factsFromV1(task: TaskV1, outcome?: TaskOutcome, inputRequests?: JsonObject): TaskFacts {
  return withOptional(
    {
      taskId: task.taskId,
      status: task.status,
      createdAt: task.createdAt,
      lastUpdatedAt: task.lastUpdatedAt,
      ttlMs: task.ttl,
    },
    { statusMessage: task.statusMessage, pollIntervalMs: task.pollInterval, outcome, inputRequests },
  );
}

/** A v2 upstream's CreateTaskResult, or the DetailedTask of its tasks/get or notifications/tasks. */
export function factsFromV2(task: CreateTaskResultV2 | DetailedTaskV2): TaskFacts {
  let outcome: TaskOutcome | undefined;
  if ('result' in task) outcome = { result: { ...task.result } };
  if ('error' in task) outcome = { error: task.error };
  return withOptional(
    {
      taskId: task.taskId,
      status: task.status,
      createdAt: task.createdAt,
      lastUpdatedAt: task.lastUpdatedAt,
      ttlMs: task.ttlMs,
    },
    {
      statusMessage: task.statusMessage,
      pollIntervalMs: task.pollIntervalMs,
      outcome,
      inputRequests: 'inputRequests' in task ? (task.inputRequests as JsonObject) : undefined,
    },
  );
}

/** The v1 Task: for tasks/get, tasks/list, tasks/cancel and notifications/tasks/status. */
export function toV1Task(facts: TaskFacts): TaskV1 {
  const failedTool = facts.status === 'completed' && isErrorResult(facts.outcome);
  return withOptional(
    {
      taskId: facts.taskId,
      status: failedTool ? 'failed' : facts.status,
      createdAt: facts.createdAt,
      lastUpdatedAt: facts.lastUpdatedAt,
      ttl: facts.ttlMs,
    },
    { statusMessage: facts.statusMessage, pollInterval: facts.pollIntervalMs },
  );
}

/** v1 creation: the Task nested under `task`. */
export const toV1CreateTaskResult = (facts: TaskFacts): CreateTaskResultV1 => ({ task: toV1Task(facts) });

export function toV2Task(facts: TaskFacts): TaskV2Face {
  const toolError = facts.status === 'failed' && facts.outcome !== undefined && 'result' in facts.outcome;
  return withOptional(
    {
      taskId: facts.taskId,
      status: toolError ? 'completed' : facts.status,
      createdAt: facts.createdAt,
      lastUpdatedAt: facts.lastUpdatedAt,
      ttlMs: facts.ttlMs,
    },
    { statusMessage: facts.statusMessage, pollIntervalMs: facts.pollIntervalMs },
  );
}

/** v2 creation: flat, `resultType: "task"` (tasks.md "Polymorphic Results", "Task Creation"). */
export const toV2CreateTaskResult = (facts: TaskFacts): TaskV2Face & { resultType: 'task' } => ({
  resultType: 'task',
  ...toV2Task(facts),
});

/**
 * The v2 DetailedTask, as notifications/tasks carries it: the inline `inputRequests`, `result` or `error`
 * that tasks.md "Task Polling: Response" requires for each status. Throws OutcomeRequiredError for a
 * completed or failed task whose outcome is not in the facts.
 */
export function toV2DetailedTask(facts: TaskFacts): DetailedTaskV2Face {
  const task = toV2Task(facts);
  const { outcome } = facts;
  switch (task.status) {
    case 'input_required':
      return { ...task, status: 'input_required', inputRequests: facts.inputRequests ?? {} };
    case 'completed':
      if (outcome === undefined || !('result' in outcome)) throw new OutcomeRequiredError(facts.taskId);
      return { ...task, status: 'completed', result: outcome.result };
    case 'failed':
      if (outcome === undefined || !('error' in outcome)) throw new OutcomeRequiredError(facts.taskId);
      return { ...task, status: 'failed', error: outcome.error };
    default:
      return { ...task, status: task.status };
  }
}

/** tasks/get on the v2 face: the DetailedTask with `resultType: "complete"` (tasks.md "Task Polling"). */
export const toV2GetTaskResult = (facts: TaskFacts): DetailedTaskV2Face & { resultType: 'complete' } => ({
  resultType: 'complete',
  ...toV2DetailedTask(facts),
});

/**
 * What v1 tasks/result answers for a terminal task: exactly the underlying request's result, tagged with
 * `related-task` (2025-11-25 tasks "Related Task Metadata": tasks/result MUST carry it), or its JSON-RPC
 * error; a cancelled task has no result, and says so as taskgate's own tasks do. Throws
 * OutcomeRequiredError for a task that is not terminal or whose outcome is not in the facts.
 */
export function toV1TaskResult(facts: TaskFacts): TaskOutcome {
  const { outcome, taskId } = facts;
  if (facts.status === 'cancelled') {
    return {
      error: { code: ErrorCode.InternalError, message: `Task ${taskId} was cancelled: it has no result` },
    };
  }
  if (outcome === undefined || !isTerminal(facts.status)) throw new OutcomeRequiredError(taskId);
  if ('error' in outcome) return outcome;
  const { resultType: _resultType, ...result } = outcome.result;
  const meta = isObject(result._meta) ? result._meta : {};
  return { result: { ...result, _meta: { ...meta, [RELATED_TASK_META]: { taskId } } } };
}

const isErrorResult = (outcome: TaskOutcome | undefined): boolean =>
  outcome !== undefined && 'result' in outcome && outcome.result.isError === true;

/** `base` with each optional field that has a value (exactOptionalPropertyTypes: never `key: undefined`). */
function withOptional<Base extends object, Extra extends object>(
  base: Base,
  optional: { [K in keyof Extra]: Extra[K] | undefined },
): Base & Partial<Extra> {
  const out = { ...base } as Record<string, unknown>;
  for (const [key, value] of Object.entries(optional)) if (value !== undefined) out[key] = value;
  return out as Base & Partial<Extra>;
}

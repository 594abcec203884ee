/**
 * The tasks extension's tasks as a 2026-07-28 client reads them (ext-tasks specification/draft/tasks.md):
 * the flat v2 CreateTaskResult, the DetailedTask tasks/get answers (its outcome or pending input inlined),
 * an outcome as the underlying call would have returned it, and "not found" for another caller's task.
 */
import type { TaskV1 } from '@modelcontextprotocol/ext-tasks/core/v1';
import { ErrorCode } from '../protocol/errors.js';
import type { JsonObject } from '../protocol/messages.js';
import { toModernError, toModernResult } from '../protocol/modern/results.js';
import { TaskNotFoundError } from '../tasks/errors.js';
import {
  factsFromV1,
  OutcomeRequiredError,
  toV2CreateTaskResult,
  toV2GetTaskResult,
} from '../tasks/generations.js';
import { toJsonRpcError } from '../tasks/wire-errors.js';
import type { Outcome } from './extension-task-record.js';

/** Another caller's task is answered exactly as an unknown id is (the store's answer, as every era gets it). */
export const TASK_NOT_FOUND = (taskId: string): Outcome => ({
  error: toJsonRpcError(new TaskNotFoundError(taskId)),
});

/** The v2 CreateTaskResult of a task the Session created (its 2025 face). */
export const createdResult = (created: TaskV1): Outcome => ({
  result: toV2CreateTaskResult(factsFromV1(created)) as JsonObject,
});

/**
 * The v2 DetailedTask of a task whose 2025 face the Session gave, with its `outcome` once terminal (none
 * for a cancelled one) and the input it waits for (`open`, by key).
 */
export function detailedTask(v1: TaskV1, outcome: Outcome | undefined, open: JsonObject): Outcome {
  // A failed task's error is its outcome, whatever its code; only a store that cannot answer is not.
  if (outcome !== undefined && 'error' in outcome && outcome.error.code === ErrorCode.StoreUnavailable) {
    return outcome;
  }
  // A v2 input_required task names at least one input to answer (SEP-2663). A 2025 task may say
  // input_required before its input request reaches the bridge (over HTTP the upstream poll bringing it
  // can be overtaken): until then the client, who could answer nothing, sees it working. Input the
  // Session could not tie to the task (a 2025 stdio server does not say) is still its input.
  const waiting = (v1.status === 'input_required' || v1.status === 'working') && Object.keys(open).length > 0;
  const shown = waiting ? 'input_required' : v1.status === 'input_required' ? 'working' : v1.status;
  const facts = factsFromV1({ ...v1, status: shown }, outcome, waiting ? open : undefined);
  try {
    return { result: toV2GetTaskResult(facts) as JsonObject };
  } catch (error) {
    // A completed task whose result could not be had (the store refused tasks/result): said, not thrown.
    if (!(error instanceof OutcomeRequiredError)) throw error;
    return {
      error: {
        code: ErrorCode.InternalError,
        message: `Task ${v1.taskId} is ${v1.status}, but its outcome could not be read: try tasks/get again`,
      },
    };
  }
}

/**
 * The outcome as the client sees it, inline or as the answer of a call that was not promoted: a 2026-07-28
 * tools/call result (`resultType: "complete"`, no related-task tag; tasks.md "exactly what the underlying
 * request would have returned").
 */
export const withoutTag = (outcome: Outcome): Outcome =>
  'result' in outcome
    ? { result: toModernResult('tools/call', outcome.result) }
    : { error: toModernError('tools/call', outcome.error) };

/**
 * Task ids between the client and several servers: every id a server's side gives out (a CreateTaskResult,
 * a Task, the related-task `_meta` of a result or of a request made for a task, a status notification)
 * reaches the client as `{server}{separator}{id}`, and the client's `tasks/*` carry it back.
 */
import { RELATED_TASK_META, isObject, type JsonObject } from '../protocol/messages.js';
import type { Names } from './names.js';

/**
 * How a session names its servers' task ids to the client and back: as `Names` does, or with its
 * server-run tasks told apart from other sessions' (replica-tasks.ts `SessionServerTasks.taskIds`).
 */
export type TaskIdNames = Pick<Names, 'taskId' | 'innerTaskId'>;

/**
 * `value` (a result, or a message's params) with the task ids it names given `server`'s prefix, or
 * undefined when it names none (then the bytes it came as can go on as they are).
 */
export function withOuterTaskIds(
  value: JsonObject,
  server: string,
  names: TaskIdNames,
): JsonObject | undefined {
  const outer = (id: string): string => names.taskId(server, id);
  let changed = withOuterRelatedTask(value, outer);
  if (typeof value.taskId === 'string') changed = { ...value, taskId: outer(value.taskId) };
  const task = value.task;
  if (isObject(task) && typeof task.taskId === 'string') {
    changed = { ...(changed ?? value), task: { ...task, taskId: outer(task.taskId) } };
  }
  const tasks = value.tasks;
  if (Array.isArray(tasks)) {
    const renamed = tasks.map((item: unknown) =>
      isObject(item) && typeof item.taskId === 'string' ? { ...item, taskId: outer(item.taskId) } : item,
    );
    changed = { ...(changed ?? value), tasks: renamed };
  }
  return changed;
}

/**
 * Only the related-task `_meta` of `value` given `server`'s prefix (what any other message may carry: its
 * other members are the server's own business), or undefined when it has none.
 */
export function withOuterRelatedTaskId(
  value: JsonObject,
  server: string,
  names: TaskIdNames,
): JsonObject | undefined {
  return withOuterRelatedTask(value, (id) => names.taskId(server, id));
}

function withOuterRelatedTask(value: JsonObject, outer: (id: string) => string): JsonObject | undefined {
  const meta = value._meta;
  const related = isObject(meta) ? meta[RELATED_TASK_META] : undefined;
  if (!isObject(meta) || !isObject(related) || typeof related.taskId !== 'string') return undefined;
  return { ...value, _meta: { ...meta, [RELATED_TASK_META]: { ...related, taskId: outer(related.taskId) } } };
}

/**
 * A tasks/get never answers an older status than a notifications/tasks/status already sent to the client.
 * The store is read before the answer goes out, and a transition committed meanwhile is notified at once
 * (over Redis, another replica's arrives whenever it does): the read can be older than the notification.
 * The statuses notified while a tasks/get of their task is open are kept until it is answered, and the
 * answer is the newer of the two. Nothing is kept for a task nobody is reading.
 */
import { idKey, isObject, type JsonObject, type RequestId } from '../protocol/messages.js';
import { isTerminal, type TaskStatus } from '../tasks/state.js';

interface Reading {
  readers: number;
  /** The latest status notified while it was read. */
  notified?: JsonObject;
}

export class StatusReads {
  /** Open tasks/get → the task it reads. */
  private readonly taskOf = new Map<string | number, string>();
  private readonly readings = new Map<string, Reading>();

  /** A tasks/get arrived. */
  opened(id: RequestId, params: JsonObject | undefined): void {
    const taskId = params?.taskId;
    if (typeof taskId !== 'string') return;
    this.taskOf.set(idKey(id), taskId);
    const reading = this.readings.get(taskId);
    if (reading) reading.readers++;
    else this.readings.set(taskId, { readers: 1 });
  }

  /** A status notification is being sent to the client. */
  notified(task: JsonObject): void {
    if (this.readings.size === 0 || typeof task.taskId !== 'string') return;
    const reading = this.readings.get(task.taskId);
    if (reading) reading.notified = task;
  }

  /** The answer to `id` as it is to go out: `message`, or its result replaced by a newer status notified. */
  answer(id: RequestId, message: object): object {
    if (this.taskOf.size === 0) return message;
    const notified = this.close(id);
    const { result } = message as { result?: unknown };
    if (notified === undefined || !isObject(result) || !isNewer(notified, result)) return message;
    return { ...message, result: { ...result, ...notified } };
  }

  /** The request is over (answered, by whichever path, or cancelled); the notified status, if one was kept. */
  close(id: RequestId): JsonObject | undefined {
    if (this.taskOf.size === 0) return undefined;
    const key = idKey(id);
    const taskId = this.taskOf.get(key);
    if (taskId === undefined) return undefined;
    this.taskOf.delete(key);
    const reading = this.readings.get(taskId)!;
    if (--reading.readers === 0) this.readings.delete(taskId);
    return reading.notified;
  }
}

/** Whether `notified` says more than `read` of the same task: later, or another status of the same moment. */
function isNewer(notified: JsonObject, read: JsonObject): boolean {
  if (notified.taskId !== read.taskId || typeof read.status !== 'string') return false;
  if (isTerminal(read.status as TaskStatus)) return false;
  const at = (task: JsonObject): number =>
    typeof task.lastUpdatedAt === 'string' ? Date.parse(task.lastUpdatedAt) : Number.NaN;
  const [then, now] = [at(read), at(notified)];
  return now > then || (now === then && notified.status !== read.status);
}

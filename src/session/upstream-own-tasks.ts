/**
 * The upstream's own tasks as the session sees them pass: what each answer and notification tells of
 * them, for the operator's dashboard and for the watch that fails them here when the upstream goes away
 * (DESIGN: nothing lost), and the answers given for the tasks it took with it.
 */
import { ErrorCode } from '../protocol/errors.js';
import {
  errorResponse,
  successResponse,
  type JsonObject,
  type Request,
  type Response,
} from '../protocol/messages.js';
import { IllegalTransitionError } from '../tasks/state.js';
import { UpstreamTaskWatch } from '../tasks/upstream-tasks.js';
import type { TaskSightings } from '../observability/task-board.js';
import type { Forwarded } from './upstream-peer.js';

export class UpstreamOwnTasks {
  private readonly watch = new UpstreamTaskWatch();

  constructor(private readonly sightings: TaskSightings | undefined) {}

  /** What the upstream's answer to a forwarded request tells of its tasks. */
  answered(entry: Forwarded, response: Response): void {
    if (entry.method === 'tasks/result') return this.watch.ended(entry.taskId);
    if (!('result' in response)) return;
    if (entry.method === 'tools/call') this.saw(response.result.task, entry.tool);
    else if (entry.method === 'tasks/get' || entry.method === 'tasks/cancel') this.saw(response.result);
  }

  /** A task as a status notification describes it. */
  announced(task: unknown): void {
    this.saw(task);
  }

  /**
   * The answer to the client's tasks/get|result|cancel of a task the gone upstream was running (it failed,
   * saying why), or the refusal to give; undefined when the request is of no such task.
   */
  answerIfLost(request: Request): { answer: Response } | { refusal: Error } | undefined {
    const task = this.watch.lostTask(request.params?.taskId);
    if (task === undefined) return undefined;
    if (request.method === 'tasks/get') return { answer: successResponse(request.id, task) };
    if (request.method === 'tasks/cancel') {
      return { refusal: new IllegalTransitionError(String(task.taskId), 'failed', 'cancelled') };
    }
    // Its outcome went with the upstream: tasks/result answers as the call in flight was answered.
    const error = { code: ErrorCode.UpstreamUnavailable, message: String(task.statusMessage) };
    return { answer: errorResponse(request.id, error) };
  }

  /** The upstream went away: its live tasks fail with `statusMessage`; `each` hears of each as it now is. */
  lose(statusMessage: string, each: (task: JsonObject) => void): void {
    for (const task of this.watch.lose(statusMessage)) {
      this.sightings?.upstreamTask(task, undefined);
      each(task);
    }
  }

  private saw(task: unknown, tool?: string): void {
    this.watch.saw(task);
    this.sightings?.upstreamTask(task, tool);
  }
}

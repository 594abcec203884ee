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
import { toJsonRpcError } from '../tasks/wire-errors.js';
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
   * saying why); undefined when the request is of no such task.
   */
  answerIfLost(request: Request): Response | undefined {
    const task = this.watch.lostTask(request.params?.taskId);
    if (task === undefined) return undefined;
    if (request.method === 'tasks/get') return successResponse(request.id, task);
    if (request.method === 'tasks/cancel') {
      const refusal = new IllegalTransitionError(String(task.taskId), 'failed', 'cancelled');
      return errorResponse(request.id, toJsonRpcError(refusal));
    }
    // Its outcome went with the upstream: tasks/result answers as the call in flight was answered.
    return errorResponse(request.id, {
      code: ErrorCode.UpstreamUnavailable,
      message: String(task.statusMessage),
    });
  }

  /** The upstream went away: its live tasks fail with `statusMessage`. Returns them as they now are. */
  lose(statusMessage: string): JsonObject[] {
    const failed = this.watch.lose(statusMessage);
    for (const task of failed) this.sightings?.upstreamTask(task, undefined);
    return failed;
  }

  private saw(task: unknown, tool?: string): void {
    this.watch.saw(task);
    this.sightings?.upstreamTask(task, tool);
  }
}

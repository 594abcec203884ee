/**
 * The upstream's own tasks as the session sees them pass: what each answer and notification tells of
 * them, for the operator's dashboard and for the watch that fails them here when the upstream goes away
 * (docs/design.md: nothing lost), and the answers given for the tasks it took with it. Those taskgate follows for
 * a client without tasks (unwrap) are told to the dashboard alone: the client never saw them.
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
import type { UnwrappedTasks } from '../tasks/unwrap.js';
import { UpstreamTaskWatch } from '../tasks/upstream-tasks.js';
import type { TaskSightings } from '../observability/task-board.js';
import type { Forwarded } from './upstream-peer.js';

export class UpstreamOwnTasks {
  private readonly watch = new UpstreamTaskWatch();

  /** What the unwrapper learns of the tasks it follows. */
  readonly unwrapped: UnwrappedTasks;

  constructor(private readonly sightings: TaskSightings | undefined) {
    this.unwrapped = {
      seen: (task, tool) => {
        // A status notification may come before the answer that made the task one the unwrapper follows.
        this.watch.ended(task.taskId);
        sightings?.upstreamTask(task, tool);
      },
      progress: (taskId, params) => sightings?.upstreamProgress(taskId, params),
      forgotten: (taskId) => sightings?.upstreamTaskForgotten(taskId),
    };
  }

  /** What the upstream's answer to a forwarded request tells of its tasks. */
  answered(entry: Forwarded, response: Response): void {
    if (entry.method === 'tasks/result') {
      const failed = 'error' in response || response.result.isError === true;
      return this.resultAnswered(
        entry.taskId,
        failed,
        'error' in response ? response.error.message : undefined,
      );
    }
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

  /** The client has the task's outcome: it ended as the outcome says, unless a status said so first. */
  resultAnswered(taskId: string | undefined, failed: boolean, errorMessage?: string): void {
    const last = this.watch.ended(taskId);
    if (last === undefined) return;
    this.sightings?.upstreamTask(
      {
        ...last,
        status: failed ? 'failed' : 'completed',
        lastUpdatedAt: new Date().toISOString(),
        ...(errorMessage === undefined ? {} : { statusMessage: errorMessage }),
      },
      undefined,
    );
  }

  private saw(task: unknown, tool?: string): void {
    this.watch.saw(task);
    this.sightings?.upstreamTask(task, tool);
  }
}

/**
 * Unwrap: a client without tasks calls a tool that the upstream runs as a task. taskgate sends the call
 * upstream task-augmented, follows the task (polling tasks/get at the upstream's pollInterval, waking at
 * once on its status notifications), fetches tasks/result, and answers the client's plain call with
 * exactly that result or error. While tasks/result is open, the upstream's side-channel requests reach
 * the client as ordinary requests (routed by the session).
 */
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import { ErrorCode, type JsonRpcErrorObject } from '../protocol/errors.js';
import {
  RELATED_TASK_META,
  idKey,
  isObject,
  type JsonObject,
  type Request,
  type RequestId,
} from '../protocol/messages.js';
import type { OwnCall } from './own-call.js';
import { isTerminal, type TaskStatus } from './state.js';

export interface UnwrapHost {
  callUpstream(method: string, params: JsonObject, timeoutMs?: number): OwnCall;
  cancelUpstream(wireId: RequestId, reason: string): void;
  /** Sends a notification to the client, on the stream of the request it concerns. */
  notifyClient(method: string, params: JsonObject, relatedTo: RequestId): void;
  answerClient(id: RequestId, outcome: { result: JsonObject } | { error: JsonRpcErrorObject }): void;
  /** Told of each upstream task followed, as it goes, for the operator's view of what runs. */
  tasks: UnwrappedTasks;
}

/** What an unwrapper tells of the upstream tasks it follows: each is seen to its end or forgotten. */
export interface UnwrappedTasks {
  /** The task as the upstream last described it; `tool` is the one the client called. */
  seen(task: JsonObject, tool: string): void;
  /** Progress of the call behind the task. */
  progress(taskId: string, params: JsonObject): void;
  /** No longer followed, its end unknown (the client left and the upstream refused the cancel). */
  forgotten(taskId: string): void;
}

interface Run {
  request: Request;
  /** The tool called, for the operator's view. */
  tool: string;
  taskId?: string;
  /** The task as last described by the upstream (or as its end was learnt). */
  task?: JsonObject;
  cancelled: boolean;
  /** The open tasks/result call, once made. */
  resultCall?: OwnCall;
  /** Resolves the current wait between polls early (a status notification, a cancellation). */
  wake?: () => void;
  /** A status the upstream announced, used instead of the next poll. */
  announced?: TaskStatus;
  progressToken?: string | number;
  lastProgress: number;
  keepAlive?: NodeJS.Timeout;
}

/** What an Unwrapper reads of the Config. */
export type UnwrapConfig = Pick<Config, 'unwrap'>;

/** How long one tasks/get may take before the client's call fails instead of hanging. */
const POLL_REQUEST_TIMEOUT_MS = 30_000;

export class Unwrapper {
  private readonly byClientId = new Map<string | number, Run>();
  private readonly byTaskId = new Map<string, Run>();

  constructor(
    private readonly host: UnwrapHost,
    private readonly config: UnwrapConfig,
    private readonly logger: Logger,
  ) {}

  /** The client request an upstream task is followed for. */
  clientRequestOf(taskId: string): RequestId | undefined {
    return this.byTaskId.get(taskId)?.request.id;
  }

  /** Whether an upstream task is one this unwrapper follows for a client. */
  follows(taskId: string): boolean {
    return this.byTaskId.has(taskId);
  }

  start(request: Request, ttl: number): void {
    const token = isObject(request.params?._meta) ? request.params._meta.progressToken : undefined;
    const tool = typeof request.params?.name === 'string' ? request.params.name : '(unknown)';
    const run: Run = { request, tool, cancelled: false, lastProgress: 0 };
    if (typeof token === 'string' || typeof token === 'number') run.progressToken = token;
    this.byClientId.set(idKey(request.id), run);
    this.armKeepAlive(run);
    void this.follow(run, ttl)
      .catch((error: unknown) => {
        this.logger.error(
          { err: error, requestId: run.request.id, taskId: run.taskId },
          'unwrapping a task failed',
        );
        this.finish(run, { error: { code: ErrorCode.InternalError, message: 'Internal error in taskgate' } });
      })
      .finally(() => this.forget(run));
  }

  /** The client cancelled its call: cancel the upstream task. True when the call was one of ours. */
  cancel(clientId: RequestId): boolean {
    const run = this.byClientId.get(idKey(clientId));
    if (!run) return false;
    this.abandon(run, 'the client cancelled its call');
    return true;
  }

  /** The upstream announced a task's status (notifications/tasks/status). */
  statusAnnounced(params: JsonObject | undefined): void {
    const run = typeof params?.taskId === 'string' ? this.byTaskId.get(params.taskId) : undefined;
    if (!run || typeof params?.status !== 'string') return;
    run.announced = params.status as TaskStatus;
    this.seen(run, params);
    run.wake?.();
  }

  /** Progress the upstream sent for a call being unwrapped, so keep-alives never go backwards. */
  progressSeen(token: string | number, params: JsonObject | undefined): void {
    const progress = params?.progress;
    if (typeof progress !== 'number' || this.byClientId.size === 0) return;
    for (const run of this.byClientId.values()) {
      if (run.progressToken !== token) continue;
      run.lastProgress = Math.max(run.lastProgress, progress);
      if (run.taskId !== undefined) this.host.tasks.progress(run.taskId, params!);
    }
  }

  /** The client is gone: no upstream task it started is left running. */
  abandonAll(): void {
    for (const run of [...this.byClientId.values()]) this.abandon(run, 'the client went away');
  }

  private async follow(run: Run, ttl: number): Promise<void> {
    const params = { ...run.request.params, task: { ttl } };
    const created = await this.host.callUpstream('tools/call', params).done;
    if (!created) return;
    if ('error' in created.response) return this.finish(run, { error: created.response.error });
    const task = created.response.result.task;
    // Some servers answer a task-augmented call with the plain result: that is the answer.
    if (!isObject(task) || typeof task.taskId !== 'string') {
      return this.finish(run, { result: created.response.result });
    }
    run.taskId = task.taskId;
    this.logger.debug(
      { taskId: task.taskId, tool: run.tool, requestId: run.request.id },
      'following the upstream task for a client without tasks',
    );
    this.seen(run, task);
    if (run.cancelled) return this.cancelUpstreamTask(run, 'the client cancelled its call');
    this.byTaskId.set(task.taskId, run);
    let status = task.status as TaskStatus;
    let pollInterval = typeof task.pollInterval === 'number' ? task.pollInterval : undefined;

    while (!isTerminal(status) && status !== 'input_required') {
      await this.pause(run, pollInterval);
      if (run.cancelled) return;
      if (run.announced !== undefined) {
        status = run.announced;
        delete run.announced;
        continue;
      }
      const polled = await this.host.callUpstream(
        'tasks/get',
        { taskId: task.taskId },
        POLL_REQUEST_TIMEOUT_MS,
      ).done;
      if (!polled || run.cancelled) return;
      if ('error' in polled.response) {
        const { code, message } = polled.response.error;
        return this.finish(run, {
          error: {
            code: code === ErrorCode.InvalidParams ? ErrorCode.UpstreamUnavailable : code,
            message:
              code === ErrorCode.InvalidParams
                ? `The upstream task ${task.taskId} vanished before it finished (expired?): ${message}`
                : `Following the upstream task ${task.taskId} failed: ${message}`,
          },
        });
      }
      this.seen(run, polled.response.result);
      status = polled.response.result.status as TaskStatus;
      if (typeof polled.response.result.pollInterval === 'number')
        pollInterval = polled.response.result.pollInterval;
    }

    run.resultCall = this.host.callUpstream('tasks/result', { taskId: task.taskId });
    const answer = await run.resultCall.done;
    if (!answer || run.cancelled) return;
    this.finish(
      run,
      'error' in answer.response
        ? { error: answer.response.error }
        : { result: withoutTaskTag(answer.response.result) },
    );
  }

  /** A description of the followed task from the upstream: the operator's view follows it. */
  private seen(run: Run, task: JsonObject): void {
    if (typeof task.status !== 'string' || run.taskId === undefined) return;
    // A poll answered before a status notification may arrive after it: the older word is not taken.
    if (run.task !== undefined && (isTerminal(run.task.status as TaskStatus) || isOlder(task, run.task))) {
      return;
    }
    run.task = { ...run.task, ...task, taskId: run.taskId };
    this.host.tasks.seen(run.task, run.tool);
  }

  /**
   * The run is over with `outcome` for the client. A task whose end no status told (it was answered after
   * input_required, or following it failed) ends as its outcome says.
   */
  private ended(run: Run, outcome: { result: JsonObject } | { error: JsonRpcErrorObject }): void {
    if (run.task === undefined || isTerminal(run.task.status as TaskStatus)) return;
    const failed = 'error' in outcome || outcome.result.isError === true;
    this.seen(run, {
      status: failed ? 'failed' : 'completed',
      lastUpdatedAt: new Date().toISOString(),
      ...('error' in outcome ? { statusMessage: outcome.error.message } : {}),
    });
  }

  private pause(run: Run, pollInterval: number | undefined): Promise<void> {
    const { minPollInterval, maxPollInterval } = this.config.unwrap;
    const delay = Math.min(maxPollInterval, Math.max(minPollInterval, pollInterval ?? minPollInterval));
    return new Promise((resolve) => {
      const timer = setTimeout(() => run.wake?.(), delay);
      run.wake = () => {
        clearTimeout(timer);
        delete run.wake;
        resolve();
      };
      if (run.announced !== undefined || run.cancelled) run.wake();
    });
  }

  private armKeepAlive(run: Run): void {
    const every = this.config.unwrap.keepAliveInterval;
    if (every === 0 || run.progressToken === undefined) return;
    const token = run.progressToken;
    run.keepAlive = setInterval(() => {
      // Progress must only increase; a small step above the last value keeps the client's timeout reset.
      run.lastProgress += 0.001;
      this.host.notifyClient(
        'notifications/progress',
        {
          progressToken: token,
          progress: run.lastProgress,
          message: 'taskgate: the upstream task is still running',
        },
        run.request.id,
      );
    }, every).unref();
  }

  private abandon(run: Run, reason: string): void {
    if (run.cancelled) return;
    run.cancelled = true;
    run.wake?.();
    if (run.resultCall) this.host.cancelUpstream(run.resultCall.wireId, reason);
    if (run.taskId !== undefined) this.cancelUpstreamTask(run, reason);
    this.forget(run);
  }

  private cancelUpstreamTask(run: Run, reason: string): void {
    if (run.taskId === undefined) return;
    const taskId = run.taskId;
    this.logger.debug({ taskId }, `cancelling the upstream task: ${reason}`);
    void this.host.callUpstream('tasks/cancel', { taskId }, POLL_REQUEST_TIMEOUT_MS).done.then((answer) => {
      const task = answer !== undefined && 'result' in answer.response ? answer.response.result : {};
      if (typeof task.status === 'string') return this.seen(run, task);
      this.logger.debug({ taskId }, 'the upstream task was not cancelled: no longer followed');
      this.host.tasks.forgotten(taskId);
    });
  }

  private finish(run: Run, outcome: { result: JsonObject } | { error: JsonRpcErrorObject }): void {
    if (run.cancelled || !this.byClientId.has(idKey(run.request.id))) return;
    this.ended(run, outcome);
    if (run.taskId !== undefined) {
      this.logger.debug({ taskId: run.taskId, status: run.task?.status }, 'the upstream task ended');
    }
    this.forget(run);
    this.host.answerClient(run.request.id, outcome);
  }

  private forget(run: Run): void {
    clearInterval(run.keepAlive);
    // Neither answered nor cancelled: its call was withdrawn, so nothing more will be learnt of it.
    if (!run.cancelled && run.task !== undefined && !isTerminal(run.task.status as TaskStatus)) {
      delete run.task;
      this.host.tasks.forgotten(run.taskId!);
    }
    if (this.byClientId.get(idKey(run.request.id)) === run) this.byClientId.delete(idKey(run.request.id));
    if (run.taskId !== undefined && this.byTaskId.get(run.taskId) === run) this.byTaskId.delete(run.taskId);
  }
}

/** Whether `task` was last updated before `than` (as their lastUpdatedAt say). */
function isOlder(task: JsonObject, than: JsonObject): boolean {
  const at = (t: JsonObject): number =>
    typeof t.lastUpdatedAt === 'string' ? Date.parse(t.lastUpdatedAt) : Number.NaN;
  return at(task) < at(than);
}

/** The result as the plain call would have returned it: without the task tag tasks/result adds. */
function withoutTaskTag(result: JsonObject): JsonObject {
  if (!isObject(result._meta) || !(RELATED_TASK_META in result._meta)) return result;
  const { [RELATED_TASK_META]: _, ...meta } = result._meta;
  const { _meta: __, ...rest } = result;
  return Object.keys(meta).length > 0 ? { ...rest, _meta: meta } : rest;
}

export function withoutRelatedTask(params: JsonObject | undefined): JsonObject | undefined {
  return params === undefined ? undefined : withoutTaskTag(params);
}

/**
 * Augment: serve the tasks feature on behalf of an upstream server that lacks it. A task-augmented
 * `tools/call` is answered at once with a CreateTaskResult while the plain call runs upstream; taskgate
 * then serves tasks/get, tasks/result, tasks/list and tasks/cancel from its store.
 */
import type { Logger } from 'pino';
import type { Policy } from '../config/policy.js';
import type { Config } from '../config/schema.js';
import { ErrorCode, ProtocolError, methodNotFound, type JsonRpcErrorObject } from '../protocol/errors.js';
import {
  IMMEDIATE_RESPONSE_META,
  RELATED_TASK_META,
  idKey,
  isObject,
  type JsonObject,
  type RequestId,
  type Response,
} from '../protocol/messages.js';
import { IllegalTransitionError, InvalidCursorError, TaskLimitError, TaskNotFoundError } from './errors.js';
import { ListTasksParams, TaskAugmentedCallParams, TaskIdParams, parseParams } from './params.js';
import { toWireTask, type TaskOutcome, type TaskRecord, type TransitionChange } from './state.js';
import type { TaskStore } from './store.js';

export interface UpstreamCall {
  wireId: RequestId;
  /** The upstream's answer, or undefined when the call was cancelled and no answer will come. */
  done: Promise<{ response: Response; bytes: number } | undefined>;
}

/** What augment needs from the session it serves. */
export interface AugmentHost {
  callUpstream(method: string, params: JsonObject): UpstreamCall;
  /** Sends notifications/cancelled for one of taskgate's own upstream calls and stops waiting for it. */
  cancelUpstream(wireId: RequestId, reason: string): void;
  notifyClient(method: string, params: JsonObject): void;
}

export interface Requester {
  sessionId: string;
  identity?: string;
}

interface RunningCall {
  wireId: RequestId;
  /** Side-channel requests (elicitation, sampling) sent to the client and not yet answered. */
  openInputRequests: number;
}

const OWN_CURSOR = 'own.';
const UPSTREAM_CURSOR = 'up.';

export const CANCELLED_BY_REQUEST = 'The task was cancelled by request.';

export class Augmenter {
  private readonly running = new Map<string, RunningCall>();
  private readonly byProgressToken = new Map<string | number, string>();
  private readonly unsubscribe: () => void;

  constructor(
    private readonly store: TaskStore,
    private readonly policy: Policy,
    private readonly config: Config,
    private readonly host: AugmentHost,
    private readonly requester: Requester,
    private readonly logger: Logger,
  ) {
    this.unsubscribe = store.onTransition((record) => {
      if (record.sessionId === requester.sessionId && config.tasks.statusNotifications) {
        host.notifyClient('notifications/tasks/status', toWireTask(record));
      }
    });
  }

  /** Whether taskgate may list its own tasks: only where they are bound to an identity, unless told. */
  private get listsOwnTasks(): boolean {
    return this.requester.identity !== undefined || this.config.tasks.exposeList;
  }

  /**
   * The `capabilities.tasks` the client sees: the upstream's own, plus tasks for tools/call and cancel
   * served here. `list` is offered when either side may list; then both sides' tasks are listed, since a
   * task the client can get must also be listable.
   */
  capabilities(upstreamTasks: JsonObject | undefined): JsonObject {
    const requests = isObject(upstreamTasks?.requests) ? upstreamTasks.requests : {};
    const tools = isObject(requests.tools) ? requests.tools : {};
    const tasks: JsonObject = {
      ...upstreamTasks,
      cancel: {},
      requests: { ...requests, tools: { ...tools, call: {} } },
    };
    if (this.listsOwnTasks || isObject(upstreamTasks?.list)) tasks.list = {};
    else delete tasks.list;
    return tasks;
  }

  /** Whether the task named in params is one of taskgate's own that this requester may see. */
  async knows(params: JsonObject | undefined): Promise<boolean> {
    try {
      await this.visibleTask(params, 'tasks');
      return true;
    } catch (error) {
      if (error instanceof TaskNotFoundError) return false;
      throw error;
    }
  }

  /** The task-augmented tools/call: creates the task, starts the plain call upstream, returns CreateTaskResult. */
  async createTask(params: JsonObject | undefined): Promise<JsonObject> {
    const call = parseParams(TaskAugmentedCallParams, params, 'tools/call');
    const policy = this.policy.forTool(call.name);
    if (policy.taskSupport === 'forbidden' || policy.taskSupport === 'passthrough') {
      throw methodNotFound(
        `Tool "${call.name}" cannot be called as a task (its taskSupport is "${policy.taskSupport === 'forbidden' ? 'forbidden' : 'left to the server, which has no tasks'}"); call it without "task"`,
      );
    }
    const record = await this.store.create({
      owner: this.owner,
      sessionId: this.requester.sessionId,
      toolName: call.name,
      ttl: this.policy.ttlFor(policy, call.task.ttl),
      pollInterval: policy.pollInterval,
      ...(this.requester.identity === undefined ? {} : { identity: this.requester.identity }),
    });
    const { task: _, ...plainParams } = call;
    this.start(record, plainParams, policy.timeout);
    const result: JsonObject = { task: toWireTask(record) };
    if (policy.immediateResponse !== undefined) {
      result._meta = { [IMMEDIATE_RESPONSE_META]: policy.immediateResponse };
    }
    this.logger.debug({ taskId: record.taskId, tool: call.name }, 'task created');
    return result;
  }

  async getTask(params: JsonObject | undefined): Promise<JsonObject> {
    return toWireTask(await this.visibleTask(params, 'tasks/get'));
  }

  /** Blocks until the task is terminal, then answers exactly what the plain call answered. */
  async taskResult(
    params: JsonObject | undefined,
    signal: AbortSignal,
  ): Promise<{ result: JsonObject } | { error: JsonRpcErrorObject }> {
    const { taskId } = await this.visibleTask(params, 'tasks/result');
    const done = await this.store.waitForTerminal(taskId, signal);
    const outcome = done.outcome ?? cancelledOutcome(done);
    if ('error' in outcome) return { error: outcome.error };
    const meta = isObject(outcome.result._meta) ? outcome.result._meta : {};
    return { result: { ...outcome.result, _meta: { ...meta, [RELATED_TASK_META]: { taskId } } } };
  }

  /**
   * tasks/list over both sides: taskgate's own tasks first, then the upstream's, behind one cursor. A
   * cursor is either one of the store's (prefixed "own.") or the upstream's own cursor (prefixed "up."),
   * which the upstream validates itself.
   */
  async listTasks(params: JsonObject | undefined, upstreamLists: boolean): Promise<JsonObject> {
    if (!this.listsOwnTasks && !upstreamLists) {
      throw methodNotFound(
        'tasks/list is not available: tasks here are not bound to an identity, so listing them is off (see the exposeList setting)',
      );
    }
    const { cursor } = parseParams(ListTasksParams, params, 'tasks/list');
    if (cursor?.startsWith(UPSTREAM_CURSOR)) return this.listUpstream(cursor.slice(UPSTREAM_CURSOR.length));
    if (cursor !== undefined && !cursor.startsWith(OWN_CURSOR)) throw new InvalidCursorError();
    const page = await this.store.list(
      this.owner,
      cursor?.slice(OWN_CURSOR.length),
      this.config.tasks.listPageSize,
    );
    const result: JsonObject = { tasks: page.tasks.map(toWireTask) };
    if (page.nextCursor !== undefined) result.nextCursor = OWN_CURSOR + page.nextCursor;
    else if (upstreamLists) result.nextCursor = UPSTREAM_CURSOR;
    return result;
  }

  private async listUpstream(cursor: string): Promise<JsonObject> {
    const answer = await this.host.callUpstream('tasks/list', cursor === '' ? {} : { cursor }).done;
    if (!answer) throw new ProtocolError(ErrorCode.InternalError, 'tasks/list was cancelled');
    if ('error' in answer.response)
      throw new ProtocolError(
        answer.response.error.code,
        answer.response.error.message,
        answer.response.error.data,
      );
    const { nextCursor, ...rest } = answer.response.result;
    return typeof nextCursor === 'string' ? { ...rest, nextCursor: UPSTREAM_CURSOR + nextCursor } : rest;
  }

  async cancelTask(params: JsonObject | undefined): Promise<JsonObject> {
    const { taskId } = await this.visibleTask(params, 'tasks/cancel');
    const cancelled = await this.store.update(taskId, {
      status: 'cancelled',
      statusMessage: CANCELLED_BY_REQUEST,
    });
    const call = this.running.get(taskId);
    if (call) this.host.cancelUpstream(call.wireId, `task ${taskId} was cancelled`);
    return toWireTask(cancelled);
  }

  /** The task whose progress notifications carry this token, if one is running. */
  taskForProgressToken(token: string | number): string | undefined {
    return this.byProgressToken.get(idKey(token));
  }

  /** The one running task, when exactly one runs: the only safe owner of an unlabelled upstream request. */
  soleRunningTask(): string | undefined {
    if (this.running.size !== 1) return undefined;
    return this.running.keys().next().value;
  }

  /** The upstream asked the client something on the task's behalf: the task waits on input. */
  async inputRequested(taskId: string): Promise<void> {
    const call = this.running.get(taskId);
    if (!call) return;
    call.openInputRequests++;
    await this.changeQuietly(taskId, { status: 'input_required' }, 'working');
  }

  /** The client answered one of those requests; with none left open the task works again. */
  async inputAnswered(taskId: string): Promise<void> {
    const call = this.running.get(taskId);
    if (!call) return;
    call.openInputRequests = Math.max(0, call.openInputRequests - 1);
    if (call.openInputRequests === 0)
      await this.changeQuietly(taskId, { status: 'working' }, 'input_required');
  }

  close(): void {
    this.unsubscribe();
  }

  private get owner(): string {
    return this.requester.identity ?? this.requester.sessionId;
  }

  /** The task named in params, as long as this requester may see it; otherwise exactly "not found". */
  private async visibleTask(params: JsonObject | undefined, method: string): Promise<TaskRecord> {
    const { taskId } = parseParams(TaskIdParams, params, method);
    const record = await this.store.get(taskId);
    if (record.identity !== undefined && record.identity !== this.requester.identity) {
      throw new TaskNotFoundError(taskId);
    }
    return record;
  }

  private start(record: TaskRecord, params: JsonObject, timeoutMs: number | undefined): void {
    const call = this.host.callUpstream('tools/call', params);
    const token = isObject(params._meta) ? params._meta.progressToken : undefined;
    const tokenKey = typeof token === 'string' || typeof token === 'number' ? idKey(token) : undefined;
    this.running.set(record.taskId, { wireId: call.wireId, openInputRequests: 0 });
    if (tokenKey !== undefined) this.byProgressToken.set(tokenKey, record.taskId);
    const timer =
      timeoutMs === undefined
        ? undefined
        : setTimeout(() => void this.timeOut(record.taskId, call.wireId, timeoutMs), timeoutMs).unref();
    void call.done
      .then((answer) => this.finish(record.taskId, answer))
      .catch((error: unknown) =>
        this.logger.error({ err: error, taskId: record.taskId }, 'task bookkeeping failed'),
      )
      .finally(() => {
        clearTimeout(timer);
        this.running.delete(record.taskId);
        if (tokenKey !== undefined) this.byProgressToken.delete(tokenKey);
      });
  }

  private async timeOut(taskId: string, wireId: RequestId, timeoutMs: number): Promise<void> {
    const message = `Task exceeded its timeout of ${timeoutMs} ms; the tool call was cancelled`;
    try {
      await this.store.update(taskId, {
        status: 'failed',
        statusMessage: message,
        outcome: { error: { code: ErrorCode.InternalError, message } },
      });
    } catch (error) {
      if (!(error instanceof IllegalTransitionError || error instanceof TaskNotFoundError)) throw error;
      return;
    }
    this.host.cancelUpstream(wireId, message);
  }

  private async finish(
    taskId: string,
    answer: { response: Response; bytes: number } | undefined,
  ): Promise<void> {
    if (!answer) return;
    const { response, bytes } = answer;
    const outcome: TaskOutcome =
      'error' in response ? { error: response.error } : { result: response.result };
    const change = outcomeChange(outcome, bytes);
    try {
      await this.store.update(taskId, change);
    } catch (error) {
      if (error instanceof TaskLimitError) {
        await this.store.update(taskId, {
          status: 'failed',
          statusMessage: error.message,
          outcome: { error: { code: ErrorCode.LimitExceeded, message: error.message } },
        });
      } else if (!(error instanceof IllegalTransitionError || error instanceof TaskNotFoundError)) {
        throw error;
      }
      // Already terminal (cancelled meanwhile): a cancelled task stays cancelled, whatever upstream said.
    }
  }

  /** A change that may legitimately lose a race with cancellation or completion. */
  private async changeQuietly(taskId: string, change: TransitionChange, from: string): Promise<void> {
    try {
      const current = await this.store.get(taskId);
      if (current.status === from) await this.store.update(taskId, change);
    } catch (error) {
      if (!(error instanceof IllegalTransitionError || error instanceof TaskNotFoundError)) throw error;
    }
  }
}

/** The status a finished call leaves its task in: failed for a JSON-RPC error or an isError result. */
export function outcomeChange(outcome: TaskOutcome, bytes: number): TransitionChange {
  if ('error' in outcome) {
    return {
      status: 'failed',
      statusMessage: `Tool call failed: ${outcome.error.message}`,
      outcome,
      outcomeBytes: bytes,
    };
  }
  if (outcome.result.isError === true) {
    return {
      status: 'failed',
      statusMessage: `Tool execution failed: ${firstText(outcome.result) ?? 'the tool reported an error'}`,
      outcome,
      outcomeBytes: bytes,
    };
  }
  return { status: 'completed', outcome, outcomeBytes: bytes };
}

/**
 * The spec leaves open what tasks/result answers for a task cancelled before it produced anything; this
 * is what the SDK's native tasks answer (-32603), so clients see the same from taskgate.
 */
function cancelledOutcome(record: TaskRecord): TaskOutcome {
  return {
    error: {
      code: ErrorCode.InternalError,
      message: `Task ${record.taskId} was cancelled: it has no result`,
    },
  };
}

function firstText(result: JsonObject): string | undefined {
  const content = Array.isArray(result.content) ? (result.content as unknown[]) : [];
  for (const item of content) {
    if (isObject(item) && item.type === 'text' && typeof item.text === 'string') {
      return item.text.length > 500 ? `${item.text.slice(0, 500)}…` : item.text;
    }
  }
  return undefined;
}

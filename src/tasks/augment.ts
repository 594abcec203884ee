/**
 * Augment: serve the tasks feature on behalf of an upstream server that lacks it. A task-augmented
 * `tools/call` is answered at once with a CreateTaskResult while the plain call runs upstream; taskgate
 * then serves tasks/get, tasks/result, tasks/list and tasks/cancel from its store.
 */
import type { Logger } from 'pino';
import type { Policy } from '../config/policy.js';
import type { Config } from '../config/schema.js';
import type { RequestCaller } from '../protocol/caller.js';
import { ErrorCode, ProtocolError, methodNotFound } from '../protocol/errors.js';
import { IMMEDIATE_RESPONSE_META, isObject, type JsonObject, type RequestId } from '../protocol/messages.js';
import type { OwnCall } from './own-call.js';
import type { ResultAnswer } from './result-bytes.js';
import type { AuditLog } from './audit-log.js';
import { ListTasksParams, TaskAugmentedCallParams, parseParams } from './params.js';
import { toWireTask, type TaskRecord } from './state.js';
import type { LiveLimit, TaskStore } from './store.js';
import { TaskRunner, type SessionCalls } from './task-runner.js';
import { listBothSides } from './task-list.js';
import { TaskService, type TaskServiceConfig } from './task-service.js';

/** What augment needs from the session it serves. */
export interface AugmentHost {
  /** `timeoutMs` in place of upstream.requestTimeout. */
  callUpstream(method: string, params: JsonObject, timeoutMs?: number): OwnCall;
  /** Sends notifications/cancelled for one of taskgate's own upstream calls and stops waiting for it. */
  cancelUpstream(wireId: RequestId, reason: string): void;
  notifyClient(method: string, params: JsonObject): void;
}

/** What an Augmenter reads of the Config: its TaskService's, and whether to list its own tasks. */
export type AugmentConfig = TaskServiceConfig & { tasks: Pick<Config['tasks'], 'exposeList'> };

const TOOL_CALL = { what: 'Tool call' };

export class Augmenter {
  /** This session's running task calls, in the process's runner. */
  readonly calls: SessionCalls;
  private readonly tasks: TaskService;

  constructor(
    store: TaskStore,
    private readonly policy: Policy,
    private readonly config: AugmentConfig,
    private readonly host: AugmentHost,
    private readonly requester: { sessionId: string; identity?: string; subject?: string; owner?: string },
    private readonly logger: Logger,
    audit?: AuditLog,
    runner: TaskRunner = new TaskRunner(),
  ) {
    this.calls = runner.forSession();
    this.tasks = new TaskService(
      store,
      config,
      // A request may carry a caller of its own (the bridge's): its task is bound to that caller.
      { ...requester, owner: requester.owner ?? requester.identity ?? requester.sessionId, perRequest: true },
      (method, params) => host.notifyClient(method, params),
      ({ taskId, status }) => {
        // Its call may still be on its way out, but what it reports is over for the client.
        this.calls.ended(taskId);
        const wireId = status === 'cancelled' ? this.calls.callOf(taskId) : undefined;
        if (wireId !== undefined) host.cancelUpstream(wireId, `task ${taskId} was cancelled`);
      },
      audit,
    );
  }

  /** Whether taskgate may list its own tasks: only where they are bound to an identity, unless told. */
  private listsOwnTasks(caller?: RequestCaller): boolean {
    const identity = caller === undefined ? this.requester.identity : caller.identity;
    return identity !== undefined || this.config.tasks.exposeList;
  }

  /**
   * The `capabilities.tasks` the client sees: the upstream's own, plus tasks for tools/call and cancel
   * served here. `list` is offered when either side may list; each side lists only what it may.
   */
  capabilities(upstreamTasks: JsonObject | undefined, caller?: RequestCaller): JsonObject {
    const requests = isObject(upstreamTasks?.requests) ? upstreamTasks.requests : {};
    const tools = isObject(requests.tools) ? requests.tools : {};
    const tasks: JsonObject = {
      ...upstreamTasks,
      cancel: {},
      requests: { ...requests, tools: { ...tools, call: {} } },
    };
    // A caller the rules refuse tasks/list (auth.rules) is not offered it.
    const listable =
      caller?.access?.taskList !== false && (this.listsOwnTasks(caller) || isObject(upstreamTasks?.list));
    if (listable) tasks.list = {};
    else delete tasks.list;
    return tasks;
  }

  knows(params: JsonObject | undefined, caller?: RequestCaller): Promise<boolean> {
    return this.tasks.knows(params, caller);
  }

  /**
   * The task-augmented tools/call: creates the task (within the caller's `liveLimit`, when given), starts
   * the plain call upstream, returns CreateTaskResult. The task is bound to `caller`, the session's own by default.
   */
  async createTask(
    params: JsonObject | undefined,
    liveLimit?: LiveLimit,
    caller?: RequestCaller,
  ): Promise<JsonObject> {
    const call = parseParams(TaskAugmentedCallParams, params, 'tools/call');
    if (!this.calls.isAccepting) {
      throw new ProtocolError(
        ErrorCode.UpstreamUnavailable,
        'taskgate is shutting down: it takes no new tasks',
      );
    }
    const policy = this.policy.forTool(call.name);
    const { task: _, ...plainParams } = call;
    const record = await this.tasks.create(
      {
        toolName: call.name,
        ttl: this.policy.ttlFor(policy, call.task.ttl),
        pollInterval: policy.pollInterval,
        ...(liveLimit === undefined ? {} : { liveLimit }),
      },
      (created) => this.start(created, plainParams, policy.timeout),
      TOOL_CALL,
      call.arguments,
      caller,
    );
    const result: JsonObject = { task: toWireTask(record) };
    if (policy.immediateResponse !== undefined) {
      result._meta = { [IMMEDIATE_RESPONSE_META]: policy.immediateResponse };
    }
    this.logger.debug({ taskId: record.taskId, tool: call.name }, 'task created');
    return result;
  }

  getTask(params: JsonObject | undefined, caller?: RequestCaller): Promise<JsonObject> {
    return this.tasks.get(params, caller);
  }

  taskResult(
    params: JsonObject | undefined,
    signal: AbortSignal,
    caller?: RequestCaller,
  ): Promise<ResultAnswer> {
    return this.tasks.result(params, signal, caller);
  }

  cancelTask(params: JsonObject | undefined, caller?: RequestCaller): Promise<JsonObject> {
    return this.tasks.cancel(params, caller);
  }

  /** tasks/list over both sides (task-list.ts). */
  async listTasks(
    params: JsonObject | undefined,
    upstreamLists: boolean,
    caller?: RequestCaller,
  ): Promise<JsonObject> {
    const listsOwn = this.listsOwnTasks(caller);
    if (!listsOwn && !upstreamLists) {
      throw methodNotFound(
        'tasks/list is not available: tasks here are not bound to an identity, so listing them is off (see the exposeList setting)',
      );
    }
    const { cursor } = parseParams(ListTasksParams, params, 'tasks/list');
    return listBothSides(
      {
        listsOwn,
        upstreamLists,
        ownPage: (from) => this.tasks.list(from, caller),
        callUpstream: (method, p) => this.host.callUpstream(method, p),
        pageSize: this.config.tasks.listPageSize,
      },
      cursor,
    );
  }

  /** The upstream asked the client something on the task's behalf: the task waits on input. */
  async inputRequested(taskId: string): Promise<void> {
    if (this.calls.inputOpened(taskId)) await this.tasks.move(taskId, 'working', 'input_required');
  }

  /** The client answered one of those requests; with none left open the task works again. */
  async inputAnswered(taskId: string): Promise<void> {
    if (this.calls.inputClosed(taskId)) await this.tasks.move(taskId, 'input_required', 'working');
  }

  /** Resolves once no task's call runs any more, or after `boundMs` at the latest. */
  idle(boundMs: number): Promise<void> {
    if (this.calls.size > 0) {
      this.logger.info({ running: this.calls.size }, 'client gone: keeping the upstream until its tasks end');
    }
    return this.calls.idle(boundMs);
  }

  /** The client left (`why`) while tasks run, and nobody could fetch their results: they end, saying so. */
  stopTasks(why: string): Promise<void> {
    return this.calls.stopAll(why, ErrorCode.ClientUnavailable);
  }

  close(): void {
    this.tasks.close();
  }

  private start(record: TaskRecord, params: JsonObject, timeoutMs: number | undefined): void {
    const { taskId } = record;
    // A task is for work that takes long: its call is bounded by the task's ttl, not the request timeout.
    const call = this.host.callUpstream('tools/call', params, record.ttl);
    const token = isObject(params._meta) ? params._meta.progressToken : undefined;
    this.calls.run(
      taskId,
      {
        wireId: call.wireId,
        ...((typeof token === 'string' || typeof token === 'number') && { progressToken: token }),
        ...(timeoutMs !== undefined && { timeoutMs }),
        stop: async (reason, code) => {
          if (await this.tasks.fail(taskId, reason, code)) this.host.cancelUpstream(call.wireId, reason);
        },
      },
      // .catch() never rejects; the runner's .then() after it, not a .finally(): finally() takes two more turns.
      call.done
        .then((answer) => answer && this.tasks.finish(taskId, answer, TOOL_CALL))
        .catch((error: unknown) => this.logger.error({ err: error, taskId }, 'task bookkeeping failed')),
    );
  }
}

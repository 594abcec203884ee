/**
 * Serving tasks that taskgate holds, for one requestor: tasks/get, tasks/result, tasks/cancel, its own
 * page of tasks/list, status notifications, and recording how the underlying request ended. The same
 * service serves tool tasks to a client (augment) and sampling/elicitation tasks to a server (client-side
 * tasks); only what runs the request differs.
 */
import type { Config } from '../config/schema.js';
import { NO_AUDIT, type AuditLog, type Caller } from './audit-log.js';
import { ErrorCode } from '../protocol/errors.js';
import type { RequestCaller } from '../protocol/caller.js';
import { RELATED_TASK_META, isObject, type JsonObject, type Response } from '../protocol/messages.js';
import { TaskLimitError, TaskNotFoundError } from './errors.js';
import { TaskIdParams, parseParams } from './params.js';
import {
  IllegalTransitionError,
  StaleStatusError,
  isTerminal,
  toWireTask,
  type TaskOutcome,
  type TaskRecord,
  type TaskStatus,
  type TransitionChange,
} from './state.js';
import type { Answer } from './own-call.js';
import { keptResultBytes, taggedResult, type ResultAnswer } from './result-bytes.js';
import { sessionTransitions } from './session-transitions.js';
import type { LiveLimit, TaskPage, TaskStore } from './store.js';

export interface Requester {
  sessionId: string;
  identity?: string;
  /** For the audit log: who the identity is (never a token). */
  subject?: string;
  /** Whose tasks these are for tasks/list: an identity, a session, or a session's upstream. */
  owner: string;
  /**
   * Each request may name its own caller (a bridge serving many): a task is then bound to, owned by and
   * checked against the identity of the request that made or names it, not the session's.
   */
  perRequest?: boolean;
  /** It may read and cancel any identity's task (auth.rules `tasks: all`), not only its own. */
  allTasks?: boolean;
}

/** What a TaskService reads of the Config. */
export type TaskServiceConfig = { tasks: Pick<Config['tasks'], 'statusNotifications' | 'listPageSize'> };

export const CANCELLED_BY_REQUEST = 'The task was cancelled by request.';

export class TaskService {
  private readonly unsubscribe: () => void;

  constructor(
    readonly store: TaskStore,
    private readonly config: TaskServiceConfig,
    private readonly requester: Requester,
    /** Sends a notification to the requestor. */
    notify: (method: string, params: JsonObject) => void,
    /**
     * Told when one of these tasks ended, by whomever and wherever (cancelled: its work is to stop), as
     * its status is notified.
     */
    onEnded: (record: TaskRecord) => void,
    private readonly audit: AuditLog = NO_AUDIT,
  ) {
    this.unsubscribe = sessionTransitions(store).on(requester.sessionId, (record) => {
      const owned =
        record.owner === requester.owner ||
        (requester.perRequest === true && record.identity !== undefined && record.owner === record.identity);
      if (!owned) return;
      if (config.tasks.statusNotifications) notify('notifications/tasks/status', toWireTask(record));
      // Whoever cancelled the task (this requestor, another session, another replica through the store),
      // its work stops here, where it runs.
      if (isTerminal(record.status)) onEnded(record);
    });
  }

  /**
   * Creates a task and starts its request with `start`. Whatever fails once the task exists (the audit
   * line, a request that cannot be sent) ends the task `failed`, saying so, and is then thrown: no task
   * stays live without its request on the way.
   */
  async create(
    init: { toolName: string; ttl: number; pollInterval: number; liveLimit?: LiveLimit },
    start: (record: TaskRecord) => void,
    describe: Describe,
    args?: unknown,
    caller?: RequestCaller,
  ): Promise<TaskRecord> {
    const requester = this.as(caller);
    const { sessionId, identity, owner } = requester;
    const record = await this.store.create({
      ...init,
      owner,
      sessionId,
      ...(identity === undefined ? {} : { identity }),
    });
    try {
      this.audit.created(record, auditCaller(requester), args);
      start(record);
    } catch (error) {
      // A store that cannot take the end now keeps it (see the store contract) and records it later.
      await this.fail(record.taskId, `${describe.what} could not be started; it never ran`).catch(
        () => undefined,
      );
      throw error;
    }
    return record;
  }

  /** Whether the task named in params is one of these that this requestor may see. */
  async knows(params: JsonObject | undefined, caller?: RequestCaller): Promise<boolean> {
    try {
      await this.visibleTask(params, 'tasks', this.as(caller));
      return true;
    } catch (error) {
      if (error instanceof TaskNotFoundError) return false;
      throw error;
    }
  }

  async get(params: JsonObject | undefined, caller?: RequestCaller): Promise<JsonObject> {
    return toWireTask(await this.visibleTask(params, 'tasks/get', this.as(caller)));
  }

  /** Blocks until the task is terminal, then answers exactly what the underlying request answered. */
  async result(
    params: JsonObject | undefined,
    signal: AbortSignal,
    caller?: RequestCaller,
  ): Promise<ResultAnswer> {
    const requester = this.as(caller);
    const { taskId } = await this.visibleTask(params, 'tasks/result', requester);
    const done = await this.store.waitForTerminal(taskId, signal);
    this.audit.resultRetrieved(taskId, auditCaller(requester), done.server);
    if (done.resultBytes !== undefined) return { resultBytes: taggedResult(done.resultBytes, taskId) };
    const outcome = done.outcome ?? cancelledOutcome(done);
    if ('error' in outcome) return { error: outcome.error };
    const meta = isObject(outcome.result._meta) ? outcome.result._meta : {};
    return { result: { ...outcome.result, _meta: { ...meta, [RELATED_TASK_META]: { taskId } } } };
  }

  list(cursor: string | undefined, caller?: RequestCaller): Promise<TaskPage> {
    return this.store.list(this.as(caller).owner, cursor, this.config.tasks.listPageSize);
  }

  async cancel(params: JsonObject | undefined, caller?: RequestCaller): Promise<JsonObject> {
    const requester = this.as(caller);
    const { taskId } = await this.visibleTask(params, 'tasks/cancel', requester);
    const cancelled = await this.store.update(taskId, {
      status: 'cancelled',
      statusMessage: CANCELLED_BY_REQUEST,
    });
    this.audit.cancelled(taskId, auditCaller(requester), cancelled.server);
    return toWireTask(cancelled);
  }

  /**
   * Records how the underlying request ended. A task already terminal (cancelled, timed out) stays as it
   * is; an outcome over the store's budget fails the task with a message that says so.
   */
  async finish(taskId: string, answer: Answer, describe: Describe): Promise<void> {
    const { bytes, raw } = answer;
    // Only an error, or a result not kept as bytes, reads `response`: an answer settled from its scan
    // (UpstreamSide) is parsed only then.
    const kept = raw === undefined ? undefined : keptResultBytes(raw, answer.scanned);
    const change: TransitionChange =
      kept === undefined
        ? outcomeChange(outcomeOf(answer.response), bytes, describe)
        : { status: 'completed', resultBytes: kept, outcomeBytes: bytes };
    try {
      await this.store.update(taskId, change);
    } catch (error) {
      if (!(error instanceof TaskLimitError)) return ignoreLostRace(error);
      await this.fail(taskId, error.message, ErrorCode.LimitExceeded);
    }
  }

  /** Fails a live task with a message; false when it was already terminal. */
  async fail(taskId: string, message: string, code: number = ErrorCode.InternalError): Promise<boolean> {
    try {
      await this.store.update(taskId, {
        status: 'failed',
        statusMessage: message,
        outcome: { error: { code, message } },
      });
      return true;
    } catch (error) {
      ignoreLostRace(error);
      return false;
    }
  }

  /**
   * Moves a task from one live status to another, unless something already moved it on: the store checks
   * the status and moves it in one step, so two moves issued back to back apply in order.
   */
  async move(taskId: string, from: TaskStatus, to: TaskStatus): Promise<void> {
    try {
      await this.store.update(taskId, { from, status: to });
    } catch (error) {
      ignoreLostRace(error);
    }
  }

  close(): void {
    this.unsubscribe();
  }

  /** The task named in params, as long as this requestor may see it; otherwise exactly "not found". */
  private async visibleTask(
    params: JsonObject | undefined,
    method: string,
    requester: Requester,
  ): Promise<TaskRecord> {
    const { taskId } = parseParams(TaskIdParams, params, method);
    try {
      const record = await this.store.get(taskId);
      if (record.identity !== undefined && record.identity !== requester.identity) {
        if (requester.allTasks !== true) throw new TaskNotFoundError(taskId);
        if (method !== 'tasks') this.audit.othersTask(taskId, method, auditCaller(requester), record.server);
      }
      return record;
    } catch (error) {
      if (error instanceof TaskNotFoundError && method !== 'tasks')
        this.audit.denied(taskId, method, auditCaller(requester));
      throw error;
    }
  }

  /** Who asks: the session's own requester, or (perRequest) the caller the request carries. */
  private as(caller: RequestCaller | undefined): Requester {
    const own = this.requester;
    if (caller === undefined || own.perRequest !== true) return own;
    const allTasks = caller.access?.allTasks === true;
    if (caller.identity === own.identity && caller.subject === own.subject && !allTasks) return own;
    const { identity, subject } = caller;
    return {
      sessionId: own.sessionId,
      ...(identity === undefined ? {} : { identity }),
      ...(subject === undefined ? {} : { subject }),
      owner: identity ?? own.owner,
      perRequest: true,
      ...(allTasks ? { allTasks } : {}),
    };
  }
}

function auditCaller({ subject, sessionId }: Requester): Caller {
  return subject === undefined ? { session: sessionId } : { subject, session: sessionId };
}

/** How a failed outcome is described in the task's statusMessage. */
export interface Describe {
  /** "Tool call", "Sampling request": what failed. */
  what: string;
}

/** The status a finished request leaves its task in: failed for a JSON-RPC error or an isError result. */
function outcomeOf(response: Response): TaskOutcome {
  return 'error' in response ? { error: response.error } : { result: response.result };
}

export function outcomeChange(outcome: TaskOutcome, bytes: number, describe: Describe): TransitionChange {
  if ('error' in outcome) {
    return {
      status: 'failed',
      statusMessage: `${describe.what} failed: ${outcome.error.message}`,
      outcome,
      outcomeBytes: bytes,
    };
  }
  if (outcome.result.isError === true) {
    return {
      status: 'failed',
      statusMessage: `${describe.what} failed: ${firstText(outcome.result) ?? 'it reported an error'}`,
      outcome,
      outcomeBytes: bytes,
    };
  }
  return { status: 'completed', outcome, outcomeBytes: bytes };
}

/** Losing a race to a cancellation, a completion, an expiry or another move is normal; anything else is not. */
function ignoreLostRace(error: unknown): void {
  const lost =
    error instanceof IllegalTransitionError ||
    error instanceof StaleStatusError ||
    error instanceof TaskNotFoundError;
  if (!lost) throw error;
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

/**
 * The tasks extension (`io.modelcontextprotocol/tasks`, ext-tasks specification/draft/tasks.md) for
 * 2026-07-28 clients, drawn from the 2025 tasks of the Session the bridge is a client of: whatever runs
 * a task there (taskgate's augment, or an upstream with 2025 tasks), the client sees the v2 face. The
 * Session is asked in 2025 terms (`tasks/get`, `tasks/result`, `tasks/cancel`); this module keeps, per
 * task, who created it, the input its server is waiting for (each under a key never reused), and a
 * `tasks/result` held open on the Session for as long as the task runs — it carries the server's input
 * requests (on its stream) and ends with the outcome that `tasks/get` inlines. With a store shared by
 * replicas, each task's creator and pending input are posted on the store's input board, so that any
 * replica serves its tasks/get and tasks/update; answers reach this one, which holds the server's requests.
 * The tasks remembered, and the bytes of their held input and outcomes, are shared by callers
 * (caller-shares.ts): past its share a caller's own oldest task is forgotten here (the store still has it),
 * input past the bytes is refused to the server, and an outcome past them is read again from the store.
 * What is kept of a task is extension-task-record.ts; how it reads on the wire, extension-task-wire.ts;
 * the clients' tasks/* requests, extension-task-requests.ts.
 */
import { ErrorCode } from '../protocol/errors.js';
import {
  errorResponse,
  isObject,
  successResponse,
  type JsonObject,
  type Request,
} from '../protocol/messages.js';
import { checkCapabilities, requiredForInputRequest } from '../protocol/modern/capabilities.js';
import type { RequestCaller } from '../protocol/caller.js';
import { callerOfExchange, type ModernAnswer, type ModernExchange } from '../protocol/modern/exchange.js';
import { AS_THE_CLIENT_REFUSES } from '../protocol/attribution.js';
import { CallerShares, type ShareLimits } from './caller-shares.js';
import type { ClientCapabilities } from '../protocol/modern/meta.js';
import type { Arrival } from '../transport/channel.js';
import { isTerminal, type TaskStatus } from '../tasks/state.js';
import type { PostedTask, TaskInputBoard } from '../tasks/store.js';
import { withoutRelatedTask } from '../tasks/unwrap.js';
import { telemetry } from '../telemetry/telemetry.js';
import type { TaskV1 } from '@modelcontextprotocol/ext-tasks/core/v1';
import {
  creator,
  openInputs,
  postedOf,
  weightOf,
  type ExtensionTask,
  newTask,
  type Outcome,
} from './extension-task-record.js';
import { startPromotion, takePromotion } from './extension-task-promotion.js';
import { createdResult, detailedTask, withoutTag } from './extension-task-wire.js';
import { TaskRequests, type SessionAccess } from './extension-task-requests.js';

/** How often a task's tasks/result that ended early is sent again before the task is only polled. */
const MAX_REFOLLOWS = 10;

export interface ExtensionTasksOptions {
  session: SessionAccess;
  /** Tasks remembered (and the bytes they keep) at most, and per caller. */
  shares: ShareLimits;
  now?: () => number;
  /** The server asked one of these tasks for input (listeners are told: tasks.md "Task Status Notifications"). */
  inputHeld?(taskId: string): void;
  /** The input board of a store shared by replicas. */
  board?: TaskInputBoard;
  /** Another replica announced a change of a task it holds (its listeners here are told). */
  changedElsewhere?(taskId: string): void;
  /** A caller named a task of another caller (for the audit log): it was told "not found". */
  denied?(taskId: string, method: string, subject: string | undefined): void;
}

export class ExtensionTasks {
  private readonly tasks = new Map<string, ExtensionTask>();
  private readonly shares: CallerShares<ExtensionTask>;
  private readonly byFollower = new Map<number, ExtensionTask>();
  private nextInputKey = 1;
  private readonly now: () => number;
  private closed = false;
  private readonly stopHearing: (() => void)[];
  /** The clients' tasks/get, tasks/update and tasks/cancel. */
  readonly requests: TaskRequests;

  constructor(private readonly options: ExtensionTasksOptions) {
    this.now = options.now ?? Date.now;
    this.shares = new CallerShares({
      limits: options.shares,
      what: 'tasks remembered',
      evictOwn: true,
      evicted: (task) => this.forget(task),
    });
    this.requests = new TaskRequests({
      session: options.session,
      board: options.board,
      denied: options.denied,
      host: {
        held: (taskId) => this.tasks.get(taskId),
        detailed: (v1, task, posted) => this.detailed(v1, task, posted),
        answerInputs: (task, responses) => this.answerInputs(task, responses),
        withdrawInputs: (task, reason) => this.withdrawInputs(task, reason),
      },
    });
    const board = options.board;
    this.stopHearing =
      board === undefined
        ? []
        : [
            board.onAnswer((taskId, responses) => {
              const task = this.tasks.get(taskId);
              if (task !== undefined) this.answerInputs(task, responses);
            }),
            board.onRelayed((relayed) => this.requests.serveRelayed(relayed)),
            board.onAnnounced((taskId) => {
              if (!this.tasks.has(taskId)) options.changedElsewhere?.(taskId);
            }),
          ];
  }

  /**
   * The Session answered a task-augmented tools/call with a 2025 CreateTaskResult: the client gets the v2
   * one now, or (promotion) the plain outcome if the task ends within `promoteAfterMs`.
   */
  created(
    exchange: ModernExchange,
    by: { declared: ClientCapabilities; quota: string },
    created: TaskV1,
    promoteAfterMs: number | undefined,
  ): Promise<ModernAnswer> | ModernAnswer {
    const { request } = exchange;
    const task = this.remember(created, callerOfExchange(exchange), by);
    // Not remembered (every caller within its share): the store serves it, as a task created before a restart.
    if (task === undefined) return this.answerCreated(request, created);
    this.follow(task);
    if (promoteAfterMs === undefined || task.outcome !== undefined) {
      const answer = () => this.answerCreated(request, created);
      // Another replica may be asked about the task as soon as its client has the id.
      return this.options.board === undefined ? answer() : this.post(task).then(answer);
    }
    void this.post(task);
    return new Promise<ModernAnswer>((resolve) => {
      task.promotion = startPromotion(exchange, created, promoteAfterMs, resolve, {
        due: () => this.promote(task),
        abandoned: () => this.promotionAbandoned(task),
      });
      if (exchange.signal.aborted) this.promotionAbandoned(task);
    });
  }

  /**
   * Holds a server-to-client request as input of a task it belongs to (protocol/attribution.ts). One the task's
   * client did not declare it can answer is refused to the server as that client would refuse it.
   */
  hold(task: ExtensionTask, request: Request, bytes: number): void {
    const required = requiredForInputRequest(request);
    if (required === undefined || !checkCapabilities(required, task.declared).ok) {
      return this.options.session.answerServer(errorResponse(request.id, AS_THE_CLIENT_REFUSES));
    }
    if (!this.shares.resize(task, weightOf(task) + bytes)) {
      return this.options.session.answerServer(
        errorResponse(request.id, {
          code: ErrorCode.LimitExceeded,
          message: `taskgate holds no more input for this caller's tasks (${this.options.shares.maxBytesPerCaller} bytes, ${this.options.shares.maxBytes} in all): ${request.method} was put to no client`,
        }),
      );
    }
    task.inputs.set(`input-${this.nextInputKey++}`, {
      serverRequestId: request.id,
      method: request.method,
      params: withoutRelatedTask(request.params),
      bytes,
    });
    void this.post(task);
    // A status the Session announced before this request reached here said no inputRequests yet.
    this.options.inputHeld?.(task.taskId);
    this.announce(task.taskId);
    // The client's request is still open as a plain call: it learns of the input from tasks/get.
    if (task.promotion !== undefined) this.promote(task);
  }

  /** The Session withdrew a request it had put to the client: it is no longer asked. */
  serverCancelled(requestId: unknown): void {
    for (const task of this.tasks.values()) {
      for (const [key, held] of task.inputs) {
        if (held.serverRequestId !== requestId) continue;
        task.inputs.delete(key);
        this.inputsChanged(task);
      }
    }
  }

  /**
   * A `notifications/tasks` for a 2025 status notification of one of these tasks, if `principal` may see
   * it: the full DetailedTask, as tasks/get would answer then (tasks.md "Task Status Notifications").
   */
  async statusChanged(v1: TaskV1, principal: string | undefined): Promise<JsonObject | undefined> {
    const task = this.tasks.get(v1.taskId);
    const posted = task === undefined ? await this.options.board?.read(v1.taskId) : undefined;
    const creator = task?.caller.identity ?? posted?.principal;
    if (task === undefined && posted === undefined ? principal !== undefined : creator !== principal) {
      return undefined;
    }
    const detailed = await this.detailed(v1, task, posted);
    if ('error' in detailed) return undefined;
    const { resultType: _resultType, ...params } = detailed.result;
    return params;
  }

  /** Whether `principal` created the task (held here, or posted by a replica): a listener hears only those. */
  async createdBy(taskId: string, principal: string | undefined): Promise<boolean> {
    const task = this.tasks.get(taskId);
    if (task !== undefined) return task.caller.identity === principal;
    const posted = await this.options.board?.read(taskId);
    return posted !== undefined && posted.principal === principal;
  }

  /** The Session told of a status change of a task: the replicas sharing the store are told, if it is held here. */
  announce(taskId: string): void {
    const board = this.options.board;
    if (board === undefined || !this.tasks.has(taskId)) return;
    board
      .announce(taskId)
      .catch((error: unknown) =>
        this.options.session.logger.warn(
          { taskId, err: (error as Error).message },
          'tasks extension: a status change could not be announced to the other replicas',
        ),
      );
  }

  /**
   * Who created a task, as the Session is asked about it: held here, posted by another replica, or (a task
   * this process never saw) nobody.
   */
  async creatorOf(taskId: string): Promise<RequestCaller> {
    const task = this.tasks.get(taskId);
    const posted =
      task === undefined ? await this.options.board?.read(taskId).catch(() => undefined) : undefined;
    return creator(task, posted);
  }

  /** The v2 DetailedTask of a task whose 2025 face the Session gave, with its outcome or pending input. */
  private async detailed(v1: TaskV1, task: ExtensionTask | undefined, posted?: PostedTask): Promise<Outcome> {
    let outcome: Outcome | undefined;
    if (isTerminal(v1.status as TaskStatus)) {
      const known = task?.outcome;
      const trusted =
        known !== undefined && ('result' in known || v1.status === 'failed') ? known : undefined;
      const by = creator(task, posted);
      outcome = v1.status === 'cancelled' ? undefined : (trusted ?? (await this.resultOf(v1.taskId, by)));
    } else if (task !== undefined) {
      // A tasks/result that ended early (the upstream's deadline) said nothing about the outcome.
      task.outcome = undefined;
      this.follow(task);
    }
    const open = task === undefined ? (posted?.inputRequests ?? {}) : openInputs(task);
    return detailedTask(v1, outcome, open);
  }

  /** Keys not outstanding (never issued, answered, or withdrawn) are ignored (tasks.md "Task Update Requests"). */
  private answerInputs(task: ExtensionTask, responses: Record<string, unknown>): void {
    let answered = false;
    for (const [key, response] of Object.entries(responses)) {
      const held = task.inputs.get(key);
      if (held === undefined) continue;
      task.inputs.delete(key);
      answered = true;
      this.options.session.answerServer(
        isObject(response)
          ? successResponse(held.serverRequestId, response)
          : errorResponse(held.serverRequestId, {
              code: ErrorCode.InvalidParams,
              message: `The client's answer to ${held.method} was not a result object`,
            }),
      );
    }
    if (answered) this.inputsChanged(task);
  }

  /** The Session is gone (its own requests were answered with the reason): nothing is followed again. */
  close(): void {
    this.closed = true;
    for (const stop of this.stopHearing) stop();
    this.tasks.clear();
    this.byFollower.clear();
  }

  private remember(
    created: TaskV1,
    caller: RequestCaller,
    by: { declared: ClientCapabilities; quota: string },
  ): ExtensionTask | undefined {
    this.forgetExpired();
    const task = newTask(created, caller, by.declared, this.now());
    const refused = this.shares.add(by.quota, task);
    if (refused !== undefined) {
      this.options.session.logger.warn(
        { taskId: created.taskId },
        `tasks extension: the task is not followed here (${refused.refused}); the store still serves it`,
      );
      return undefined;
    }
    this.tasks.set(created.taskId, task);
    return task;
  }

  private forgetExpired(): void {
    const now = this.now();
    for (const task of this.tasks.values()) {
      if (task.forgetAt > now) break;
      this.forget(task);
    }
  }

  private forget(task: ExtensionTask): void {
    this.tasks.delete(task.taskId);
    this.shares.remove(task);
    if (task.follower !== undefined) {
      this.byFollower.delete(task.follower);
      this.options.session.drop(task.follower, 'taskgate no longer follows the task');
      task.follower = undefined;
    }
    // The client still gets the task's id (its CreateTaskResult), though this process forgets it.
    if (task.promotion !== undefined) this.promote(task);
    this.withdrawInputs(task, 'taskgate no longer holds the task');
  }

  /** Holds a tasks/result open on the Session for the task, unless one is or the outcome is known. */
  private follow(task: ExtensionTask): void {
    if (task.follower !== undefined || task.outcome !== undefined || this.closed) return;
    const { id, answer } = this.options.session.ask('tasks/result', { taskId: task.taskId }, task.caller);
    task.follower = id;
    this.byFollower.set(id, task);
    void answer.then(async (outcome) => {
      this.byFollower.delete(id);
      if (task.follower !== id) return;
      task.follower = undefined;
      if ('error' in outcome && !(await this.hasEnded(task))) {
        // The wait ended early (the upstream's deadline, a limit): the task runs on, and is followed again.
        if (task.promotion !== undefined) this.promote(task);
        if (++task.refollows <= MAX_REFOLLOWS && this.tasks.get(task.taskId) === task) this.follow(task);
        return;
      }
      const ended = withoutTag(outcome);
      if (task.promotion !== undefined) this.endPromotion(task, ended);
      // Kept for tasks/get if its bytes have room; otherwise read again from the store then.
      const bytes = Buffer.byteLength(JSON.stringify(ended));
      if (this.shares.resize(task, weightOf(task) - task.outcomeBytes + bytes)) {
        task.outcome = ended;
        task.outcomeBytes = bytes;
      }
    });
  }

  /** Whether the Session says the task is over (or cannot say: then nothing more will come of it). */
  private async hasEnded(task: ExtensionTask): Promise<boolean> {
    const got = await this.options.session.ask('tasks/get', { taskId: task.taskId }, task.caller).answer;
    return 'error' in got || isTerminal((got.result as unknown as TaskV1).status as TaskStatus);
  }

  private async resultOf(taskId: string, creator: RequestCaller): Promise<Outcome> {
    return withoutTag(await this.options.session.ask('tasks/result', { taskId }, creator).answer);
  }

  /** The tasks whose call runs (their tasks/result is held open): each may ask for input. */
  running(): ExtensionTask[] {
    return [...this.byFollower.values()];
  }

  /** The task a server request says it is for: by the stream it came on, or its related-task tag. */
  taskOf(request: Request, arrival: Arrival | undefined): ExtensionTask | undefined {
    const onStreamOf = arrival?.onStreamOf;
    if (typeof onStreamOf === 'number') {
      const task = this.byFollower.get(onStreamOf);
      if (task !== undefined) return task;
    }
    const tag = request.params?._meta;
    const related = isObject(tag) ? tag['io.modelcontextprotocol/related-task'] : undefined;
    return isObject(related) && typeof related.taskId === 'string'
      ? this.tasks.get(related.taskId)
      : undefined;
  }

  /** Tells the replicas sharing the store what the task waits for (none: it is held by no other store). */
  private async post(task: ExtensionTask): Promise<void> {
    const board = this.options.board;
    if (board === undefined) return;
    try {
      await board.post(task.taskId, postedOf(task), Math.max(1, task.forgetAt - this.now()));
    } catch (error) {
      this.options.session.logger.warn(
        { taskId: task.taskId, err: (error as Error).message },
        'tasks extension: the task could not be posted for the other replicas; only this one serves its input',
      );
    }
  }

  private withdrawInputs(task: ExtensionTask, reason: string): void {
    if (task.inputs.size === 0) return;
    for (const held of task.inputs.values()) {
      this.options.session.answerServer(
        errorResponse(held.serverRequestId, { code: ErrorCode.ClientUnavailable, message: reason }),
      );
    }
    task.inputs.clear();
    this.inputsChanged(task);
  }

  /** Input answered or withdrawn: it no longer counts, and the replicas are told. */
  private inputsChanged(task: ExtensionTask): void {
    this.shares.resize(task, weightOf(task));
    void this.post(task);
  }

  private answerCreated(request: Request, created: TaskV1): ModernAnswer {
    return this.options.session.respond(request, createdResult(created));
  }

  /** The call did not end in time (or asked for input): the client gets its CreateTaskResult. */
  private promote(task: ExtensionTask): void {
    const promotion = takePromotion(task);
    if (promotion === undefined) return;
    telemetry().taskPromoted(task.taskId);
    promotion.resolve(this.answerCreated(promotion.request, promotion.created));
  }

  /** The call ended before it was promoted: the client gets exactly what a plain call would have. */
  private endPromotion(task: ExtensionTask, outcome: Outcome): void {
    const promotion = takePromotion(task)!;
    promotion.resolve(this.options.session.respond(promotion.request, outcome));
  }

  /** The client closed its plain call before the task was promoted: the task it never saw is cancelled. */
  private promotionAbandoned(task: ExtensionTask): void {
    const promotion = takePromotion(task);
    if (promotion === undefined) return;
    promotion.resolve(undefined);
    this.forget(task);
    this.options.session.ask('tasks/cancel', { taskId: task.taskId }, task.caller);
  }
}

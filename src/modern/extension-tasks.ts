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
 */
import type { Logger } from 'pino';
import { ErrorCode, type JsonRpcErrorObject } from '../protocol/errors.js';
import { toJsonRpcError } from '../tasks/wire-errors.js';
import {
  errorResponse,
  isObject,
  successResponse,
  type JsonObject,
  type Request,
  type RequestId,
} from '../protocol/messages.js';
import { checkCapabilities, requiredForInputRequest } from '../protocol/modern/capabilities.js';
import type { RequestCaller } from '../protocol/caller.js';
import { callerOfExchange, type ModernAnswer, type ModernExchange } from '../protocol/modern/exchange.js';
import { AS_THE_CLIENT_REFUSES } from './attribution.js';
import { CallerShares, type ShareLimits } from './caller-shares.js';
import { exchangeOf, relayedOf } from './relayed.js';
import { TaskNotFoundError } from '../tasks/errors.js';
import type { ClientCapabilities } from '../protocol/modern/meta.js';
import type { Arrival } from '../transport/channel.js';
import {
  factsFromV1,
  OutcomeRequiredError,
  toV2CreateTaskResult,
  toV2GetTaskResult,
} from '../tasks/generations.js';
import { isTerminal, type TaskOutcome, type TaskStatus } from '../tasks/state.js';
import type { PostedTask, RelayedRequest, TaskInputBoard } from '../tasks/store.js';
import { withoutRelatedTask } from '../tasks/unwrap.js';
import { toModernError, toModernResult } from '../protocol/modern/results.js';
import type { TaskV1 } from '@modelcontextprotocol/ext-tasks/core/v1';

export type Outcome = TaskOutcome;

/** What the bridge lends this module: requests of its own to the Session, and answers to the server. */
export interface SessionAccess {
  /**
   * Sends a request to the Session, made for `caller` (the Session checks the task it names against it);
   * `id` is the one it went with (messages on its stream name it).
   */
  ask(method: string, params: JsonObject, caller: RequestCaller): { id: number; answer: Promise<Outcome> };
  /** Gives up a request `ask` sent: the Session is told (notifications/cancelled), its answer never comes. */
  drop(id: number, reason: string): void;
  answerServer(response: object): void;
  /** The client's answer, decorated for a 2026-07-28 client. */
  respond(request: Request, outcome: Outcome): ModernAnswer;
  /** taskgate refuses the request itself. */
  refuse(request: Request, error: JsonRpcErrorObject): ModernAnswer;
  logger: Logger;
}

interface HeldInput {
  serverRequestId: RequestId;
  method: string;
  params: JsonObject | undefined;
  /** The size of the server's request, counted against the creator's share. */
  bytes: number;
}

/** A call answered plainly if it ends within its time, else with its CreateTaskResult then. */
interface Promotion {
  exchange: ModernExchange;
  request: Request;
  resolve(answer: ModernAnswer): void;
  timer: NodeJS.Timeout;
  stopListening(): void;
  created: TaskV1;
}

export interface ExtensionTask {
  taskId: string;
  /** Who created it (identity and subject): the Session is asked about the task as them. */
  caller: RequestCaller;
  /** What the creating request declared that the server may ask for (inputCapabilitiesOf): not the request. */
  declared: ClientCapabilities;
  /** Input the server asked for and the client has not answered, by key. */
  inputs: Map<string, HeldInput>;
  /** The id of the `tasks/result` held open on the Session, while it is. */
  follower: number | undefined;
  /** What that `tasks/result` answered: the outcome once the task is terminal, if its bytes had room. */
  outcome: Outcome | undefined;
  outcomeBytes: number;
  promotion: Promotion | undefined;
  /** How often its tasks/result ended early and was sent again. */
  refollows: number;
  /** Epoch ms after which the task is forgotten here (its ttl; the Session's store is the authority). */
  forgetAt: number;
}

/** Another caller's task is answered exactly as an unknown id is (the store's answer, as every era gets it). */
const TASK_NOT_FOUND = (taskId: string): Outcome => ({
  error: toJsonRpcError(new TaskNotFoundError(taskId)),
});

/** How often a task's tasks/result that ended early is sent again before the task is only polled. */
const MAX_REFOLLOWS = 10;

/** How long a replica waits for the one running a task to serve a request relayed to it. */
const RELAY_WITHIN_MS = 5_000;

/** Without a ttl, a task is remembered here this long. */
const UNLIMITED_TTL_REMEMBERED_MS = 24 * 60 * 60 * 1000;

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

/** A task a tasks/* request names: held here, or (`posted`) by another replica sharing the store. */
type FoundTask = { taskId: string; task: ExtensionTask | undefined; posted: PostedTask | undefined };

export class ExtensionTasks {
  private readonly tasks = new Map<string, ExtensionTask>();
  private readonly shares: CallerShares<ExtensionTask>;
  private readonly byFollower = new Map<number, ExtensionTask>();
  private nextInputKey = 1;
  private readonly now: () => number;
  private closed = false;
  private readonly stopHearing: (() => void)[];

  constructor(private readonly options: ExtensionTasksOptions) {
    this.now = options.now ?? Date.now;
    this.shares = new CallerShares({
      limits: options.shares,
      what: 'tasks remembered',
      evictOwn: true,
      evicted: (task) => this.forget(task),
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
            board.onRelayed((relayed) => this.serveRelayed(relayed)),
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
      const gaveUp = () => this.promotionAbandoned(task);
      exchange.signal.addEventListener('abort', gaveUp, { once: true });
      task.promotion = {
        exchange,
        request,
        resolve,
        created,
        timer: setTimeout(() => this.promote(task), promoteAfterMs),
        stopListening: () => exchange.signal.removeEventListener('abort', gaveUp),
      };
      if (exchange.signal.aborted) gaveUp();
    });
  }

  /**
   * Holds a server-to-client request as input of a task it belongs to (attribution.ts). One the task's
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

  async get(exchange: ModernExchange): Promise<ModernAnswer> {
    const { request } = exchange;
    const found = await this.find(exchange);
    if ('refused' in found) return found.refused;
    const asked = await this.options.session.ask(
      'tasks/get',
      { taskId: found.taskId },
      callerOfExchange(exchange),
    ).answer;
    if ('error' in asked)
      return (await this.relayToRunner(exchange, found)) ?? this.options.session.respond(request, asked);
    const detailed = await this.detailed(asked.result as unknown as TaskV1, found.task, found.posted);
    return this.options.session.respond(request, detailed);
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
    // A failed task's error is its outcome, whatever its code; only a store that cannot answer is not.
    if (outcome !== undefined && 'error' in outcome && outcome.error.code === ErrorCode.StoreUnavailable) {
      return outcome;
    }
    const open = task === undefined ? (posted?.inputRequests ?? {}) : openInputs(task);
    // Input the Session could not tie to the task (a 2025 stdio server does not say) is still its input.
    const waiting =
      v1.status === 'input_required' || (v1.status === 'working' && Object.keys(open).length > 0);
    const inputs = waiting ? (open as JsonObject) : undefined;
    const facts = factsFromV1(waiting ? { ...v1, status: 'input_required' } : v1, outcome, inputs);
    try {
      return { result: toV2GetTaskResult(facts) as JsonObject };
    } catch (error) {
      // A completed task whose result could not be had (the store refused tasks/result): said, not thrown.
      if (!(error instanceof OutcomeRequiredError)) throw error;
      return {
        error: {
          code: ErrorCode.InternalError,
          message: `Task ${v1.taskId} is ${v1.status}, but its outcome could not be read: try tasks/get again`,
        },
      };
    }
  }

  async update(exchange: ModernExchange): Promise<ModernAnswer> {
    const { request } = exchange;
    const found = await this.find(exchange);
    if ('refused' in found) return found.refused;
    const responses = request.params?.inputResponses;
    if (!isObject(responses)) {
      return this.options.session.refuse(request, {
        code: ErrorCode.InvalidParams,
        message:
          'Invalid params: tasks/update needs inputResponses, mapping keys of inputRequests to results',
      });
    }
    if (found.task !== undefined) this.answerInputs(found.task, responses);
    else if (found.posted !== undefined) {
      // Held by another replica: the answers go to it.
      try {
        await this.options.board!.answer(found.taskId, responses);
      } catch (error) {
        return this.options.session.refuse(request, toJsonRpcError(error));
      }
    }
    return this.options.session.respond(request, { result: {} });
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

  async cancel(exchange: ModernExchange): Promise<ModernAnswer> {
    const { request } = exchange;
    const found = await this.find(exchange);
    if ('refused' in found) return found.refused;
    const asked = await this.options.session.ask(
      'tasks/cancel',
      { taskId: found.taskId },
      callerOfExchange(exchange),
    ).answer;
    const relayed = 'error' in asked ? await this.relayToRunner(exchange, found) : undefined;
    if (relayed !== undefined) return relayed;
    // An already terminal task is acknowledged too (tasks.md "Task Cancellation"): the 2025 -32602 is not.
    if ('error' in asked && (found.task === undefined || asked.error.code !== ErrorCode.InvalidParams)) {
      return this.options.session.respond(request, asked);
    }
    if (found.task !== undefined) this.withdrawInputs(found.task, 'the task was cancelled');
    return this.options.session.respond(request, { result: {} });
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
    const ttl = created.ttl ?? UNLIMITED_TTL_REMEMBERED_MS;
    const task: ExtensionTask = {
      taskId: created.taskId,
      caller,
      declared: by.declared,
      inputs: new Map(),
      follower: undefined,
      outcome: undefined,
      outcomeBytes: 0,
      promotion: undefined,
      refollows: 0,
      forgetAt: this.now() + ttl,
    };
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

  /**
   * The task a tasks/* request names, if its caller may see it. A task this process does not hold is one
   * another replica posted (its creator is bound to it as here), or one created before a restart, still
   * served from the Session's store when callers are not identified.
   */
  private async find(exchange: ModernExchange): Promise<FoundTask | { refused: ModernAnswer }> {
    const { request } = exchange;
    const taskId = request.params?.taskId;
    if (typeof taskId !== 'string') {
      return {
        refused: this.options.session.refuse(request, {
          code: ErrorCode.InvalidParams,
          message: `Invalid params: ${request.method} needs a string taskId`,
        }),
      };
    }
    const task = this.tasks.get(taskId);
    let posted: PostedTask | undefined;
    if (task === undefined && this.options.board !== undefined) {
      try {
        posted = await this.options.board.read(taskId);
      } catch (error) {
        return { refused: this.options.session.refuse(request, toJsonRpcError(error)) };
      }
    }
    // A task this process does not hold is the Session's to find for this caller, as for any era's.
    if (task === undefined && posted === undefined) return { taskId, task, posted };
    const creator = task === undefined ? posted?.principal : task.caller.identity;
    // An operator (auth.rules `tasks: all`) reads and cancels any task; its input is its creator's to give.
    const operator = exchange.access?.allTasks === true && request.method !== 'tasks/update';
    if (creator !== exchange.principal && !operator) {
      this.options.denied?.(taskId, request.method, exchange.subject);
      return { refused: this.options.session.respond(request, TASK_NOT_FOUND(taskId)) };
    }
    return { taskId, task, posted };
  }

  /**
   * A task another replica posted that this one's Session does not know (a server's own task, behind that
   * replica's upstream): the request is served there. Undefined when it could not be (that replica is gone
   * or no longer holds the task): the local answer stands.
   */
  private async relayToRunner(exchange: ModernExchange, found: FoundTask): Promise<ModernAnswer> {
    const board = this.options.board;
    const runner = found.posted?.runner;
    if (board === undefined || runner === undefined || runner === board.self) return undefined;
    const relayed = relayedOf(exchange);
    return board.relay(runner, relayed, RELAY_WITHIN_MS).catch(() => undefined);
  }

  /** A request another replica relayed here, if it is about a task held here. */
  private async serveRelayed(relayed: RelayedRequest): Promise<ModernAnswer> {
    const taskId = relayed.request.params?.taskId;
    if (typeof taskId !== 'string' || !this.tasks.has(taskId)) return undefined;
    const exchange: ModernExchange = exchangeOf(relayed, RELAY_WITHIN_MS);
    const method = relayed.request.method;
    const answer =
      method === 'tasks/get'
        ? await this.get(exchange)
        : method === 'tasks/cancel'
          ? await this.cancel(exchange)
          : undefined;
    return answer;
  }

  /** Tells the replicas sharing the store what the task waits for (none: it is held by no other store). */
  private async post(task: ExtensionTask): Promise<void> {
    const board = this.options.board;
    if (board === undefined) return;
    const posted: PostedTask = {
      ...(task.caller.identity === undefined ? {} : { principal: task.caller.identity }),
      inputRequests: openInputs(task),
    };
    try {
      await board.post(task.taskId, posted, Math.max(1, task.forgetAt - this.now()));
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
    return this.options.session.respond(request, {
      result: toV2CreateTaskResult(factsFromV1(created)) as JsonObject,
    });
  }

  /** The call did not end in time (or asked for input): the client gets its CreateTaskResult. */
  private promote(task: ExtensionTask): void {
    const promotion = task.promotion;
    if (promotion === undefined) return;
    this.stopPromotion(task, promotion);
    promotion.resolve(this.answerCreated(promotion.request, promotion.created));
  }

  /** The call ended before it was promoted: the client gets exactly what a plain call would have. */
  private endPromotion(task: ExtensionTask, outcome: Outcome): void {
    const promotion = task.promotion!;
    this.stopPromotion(task, promotion);
    promotion.resolve(this.options.session.respond(promotion.request, outcome));
  }

  private stopPromotion(task: ExtensionTask, promotion: Promotion): void {
    task.promotion = undefined;
    clearTimeout(promotion.timer);
    promotion.stopListening();
  }

  /** The client closed its plain call before the task was promoted: the task it never saw is cancelled. */
  private promotionAbandoned(task: ExtensionTask): void {
    const promotion = task.promotion;
    if (promotion === undefined) return;
    this.stopPromotion(task, promotion);
    promotion.resolve(undefined);
    this.forget(task);
    this.options.session.ask('tasks/cancel', { taskId: task.taskId }, task.caller);
  }
}

/**
 * The outcome as the client sees it, inline or as the answer of a call that was not promoted: a 2026-07-28
 * tools/call result (`resultType: "complete"`, no related-task tag; tasks.md "exactly what the underlying
 * request would have returned").
 */
const withoutTag = (outcome: Outcome): Outcome =>
  'result' in outcome
    ? { result: toModernResult('tools/call', outcome.result) }
    : { error: toModernError('tools/call', outcome.error) };

/** The input a task held here waits for, as tasks/get inlines it. */
function openInputs(task: ExtensionTask): JsonObject {
  const inputRequests: JsonObject = {};
  for (const [key, held] of task.inputs) {
    inputRequests[key] =
      held.params === undefined ? { method: held.method } : { method: held.method, params: held.params };
  }
  return inputRequests;
}

/** The bytes a task keeps: its held input and its outcome. */
function weightOf(task: ExtensionTask): number {
  let bytes = task.outcomeBytes;
  for (const held of task.inputs.values()) bytes += held.bytes;
  return bytes;
}

const creator = (task: ExtensionTask | undefined, posted: PostedTask | undefined): RequestCaller =>
  task?.caller ?? (posted?.principal === undefined ? {} : { identity: posted.principal });

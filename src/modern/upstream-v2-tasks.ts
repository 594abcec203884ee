/**
 * The tasks extension of a 2026-07-28 upstream (v2, ext-tasks specification/draft/tasks.md), shown to the
 * Session as the 2025-11-25 tasks it expects (v1): direction ① of docs/eras.md. The translator hands this
 * the answers to task-augmented calls and the Session's tasks/*; this keeps an index of the tasks made
 * through it (v2 has no tasks/list), serves blocking tasks/result by following the upstream task with
 * tasks/get, puts each new input request of the task to the Session as a 2025 request and sends its answer
 * upstream as tasks/update, and wraps a plain answer to a task-augmented call as a task it holds itself.
 *
 * Everything held is bounded: the index (oldest out first, and by each task's ttl), the input keys asked
 * per task, every wait (a poll interval between MIN and MAX_POLL_MS, cancellable by the Session, ended
 * by the task's ttl and by the upstream going away).
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { isCreateTaskResultV2, isDetailedTaskV2 } from '@modelcontextprotocol/ext-tasks/core/v2';
import type { CreateTaskResultV2, DetailedTaskV2 } from '@modelcontextprotocol/ext-tasks/core/v2';
import type { Logger } from 'pino';
import { ErrorCode, invalidParams, ProtocolError, type JsonRpcErrorObject } from '../protocol/errors.js';
import { toJsonRpcError } from '../tasks/wire-errors.js';
import {
  errorResponse,
  idKey,
  isObject,
  RELATED_TASK_META,
  successResponse,
  withMeta,
  type JsonObject,
  type Request,
  type RequestId,
  type Response,
} from '../protocol/messages.js';
import { toLegacyResult } from '../protocol/modern/results.js';
import { CursorCodec } from '../tasks/cursor.js';
import { TaskNotFoundError } from '../tasks/errors.js';
import {
  factsFromV2,
  toV1CreateTaskResult,
  toV1Task,
  toV1TaskResult,
  type TaskFacts,
} from '../tasks/generations.js';
import { IllegalTransitionError, isTerminal, type TaskOutcome } from '../tasks/state.js';

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

/** Tasks the index holds at most; past that the oldest is forgotten (its upstream task lives on). */
const MAX_HELD_TASKS = 1_000;
/** Input requests one task may put to the client over its life; past that taskgate cancels it. */
const MAX_INPUT_KEYS = 64;
const MIN_POLL_MS = 50;
const MAX_POLL_MS = 5_000;
/** When the upstream suggests no interval. */
const DEFAULT_POLL_MS = 500;
/** A plain answer wrapped as a task is held this long unless the client asked for another ttl. */
const DEFAULT_LOCAL_TTL_MS = 60_000;
const MAX_LOCAL_TTL_MS = 3_600_000;
/** After tasks/cancel, how long tasks/get is asked for the cancelled status v1 answers with. */
const CANCEL_SETTLE_MS = 2_000;
const LIST_PAGE_SIZE = 50;
const CURSOR_OWNER = 'v2-upstream-tasks';

export interface V2TasksHost {
  /** One request of taskgate's own upstream, declaring the extension; its answer, or an error on timeout or close. */
  call(method: string, params: JsonObject): Promise<TaskOutcome>;
  /** A message to the Session; `onStreamOf`: the Session's request it belongs with. */
  toSession(message: object, onStreamOf?: RequestId): void;
  now(): number;
  logger: Logger;
  /** Status changes are announced with notifications/tasks/status (`tasks.statusNotifications`). */
  statusNotifications: boolean;
}

interface Held {
  seq: number;
  /** The last the upstream said of it (for a held-here task, all there is). */
  facts: TaskFacts;
  /** Asked for by the Session (not a task followed for a plain call): listed, and announced on change. */
  visible: boolean;
  /** A plain answer wrapped as a task: served here, the upstream never had it. */
  local: boolean;
  /** Epoch ms after which it is forgotten; undefined: unlimited (the index bound still applies). */
  expiresAt: number | undefined;
  /** Input request keys put to the Session: never twice (tasks.md "Task Update Requests"). */
  asked: Set<string>;
}

/** The Session request a follow answers. */
interface Asker {
  sessionId: RequestId;
  /**
   * A tasks/result: its input requests carry `related-task` (2025-11-25 "Input Required Status" 2).
   * Otherwise a plain call taskgate runs as a task, whose client never heard of the task.
   */
  tagged: boolean;
}

class FollowAborted extends Error {}

export class V2UpstreamTasks {
  private readonly held = new Map<string, Held>();
  private seq = 0;
  /** Follows of upstream tasks (tasks/result, an unwrapped plain call) by the Session's request id. */
  private readonly follows = new Map<
    string | number,
    { controller: AbortController; asker: Asker; taskId: string }
  >();
  /** Input requests put to the Session, by the id they went with. */
  private readonly questions = new Map<string, { taskId: string; key: string }>();
  private nextQuestion = 1;
  private readonly cursors = new CursorCodec();

  constructor(private readonly host: V2TasksHost) {}

  /** What the Session's initialize answer declares: 2025 tasks for tools/call. */
  static readonly capability: JsonObject = { list: {}, cancel: {}, requests: { tools: { call: {} } } };

  /** Each tool may be called as a task, unless the upstream's tool says otherwise: the v2 server decides. */
  listTools(result: JsonObject): JsonObject {
    if (!Array.isArray(result.tools)) return result;
    const tools = result.tools.map((tool: unknown) => {
      if (!isObject(tool)) return tool;
      const execution = isObject(tool.execution) ? tool.execution : {};
      if (typeof execution.taskSupport === 'string') return tool;
      return { ...tool, execution: { ...execution, taskSupport: 'optional' } };
    });
    return { ...result, tools };
  }

  /** The answer to a task-augmented tools/call, sent upstream declaring the extension. */
  created(sessionId: RequestId, params: JsonObject | undefined, answer: TaskOutcome): void {
    if ('error' in answer) return this.answer(sessionId, answer);
    const { result } = answer;
    if (result.resultType === 'task') {
      const facts = this.createdFacts(result);
      if (facts === undefined) return this.answer(sessionId, badAnswer('tools/call', 'a CreateTaskResult'));
      this.hold(facts, { visible: true, local: false });
      return this.answer(sessionId, { result: toV1CreateTaskResult(facts) });
    }
    // The server chose not to make a task. v1 tasks begin in working (2025-11-25 "Task Status
    // Lifecycle" 1): created so, and completed at once, which the Session hears of at once.
    const now = new Date(this.host.now()).toISOString();
    const facts: TaskFacts = {
      taskId: randomUUID(),
      status: 'completed',
      createdAt: now,
      lastUpdatedAt: now,
      ttlMs: localTtl(params?.task),
      outcome: { result: toLegacyResult(result) },
    };
    this.hold(facts, { visible: true, local: true });
    this.answer(sessionId, { result: toV1CreateTaskResult({ ...facts, status: 'working' }) });
    this.announce(facts);
  }

  /**
   * The answer to a plain tools/call sent again declaring the extension, after the server said it can
   * only run it as a task (-32021): a task is followed to its end, and the call answered with exactly
   * its result or error.
   */
  unwrapCreated(sessionId: RequestId, answer: TaskOutcome): void {
    if ('error' in answer) return this.answer(sessionId, answer);
    const { result } = answer;
    if (result.resultType !== 'task') return this.answer(sessionId, { result: toLegacyResult(result) });
    const facts = this.createdFacts(result);
    if (facts === undefined) return this.answer(sessionId, badAnswer('tools/call', 'a CreateTaskResult'));
    this.hold(facts, { visible: false, local: false });
    this.runFollow({ sessionId, tagged: false }, facts.taskId, (outcome) => {
      if ('error' in outcome) return outcome;
      const { [RELATED_TASK_META]: _tag, ...meta } = isObject(outcome.result._meta)
        ? outcome.result._meta
        : {};
      const { _meta: _old, ...plain } = outcome.result;
      return { result: Object.keys(meta).length === 0 ? plain : { ...plain, _meta: meta } };
    });
  }

  /** Serves the Session's tasks/* request; false for any other method. */
  serve(request: Request): boolean {
    const { id, method, params } = request;
    if (method === 'tasks/list') {
      this.settle(id, this.list(params?.cursor));
      return true;
    }
    if (method !== 'tasks/get' && method !== 'tasks/cancel' && method !== 'tasks/result') return false;
    const taskId = params?.taskId;
    if (typeof taskId !== 'string') {
      this.answer(id, { error: invalidParams(`Invalid params: ${method} needs a string taskId`).toJson() });
    } else if (method === 'tasks/get') this.settle(id, this.getTask(taskId));
    else if (method === 'tasks/cancel') this.settle(id, this.cancelTask(taskId));
    else this.runFollow({ sessionId: id, tagged: true }, taskId, (outcome) => outcome);
    return true;
  }

  /**
   * The Session cancelled one of its requests: a follow for it stops. A tasks/result leaves the task
   * running (2025-11-25: notifications/cancelled does not cancel a task); a plain call that taskgate runs
   * as a task is the task, which is cancelled with it.
   */
  cancelled(sessionId: unknown): boolean {
    if (typeof sessionId !== 'string' && typeof sessionId !== 'number') return false;
    const follow = this.follows.get(idKey(sessionId));
    if (follow === undefined) return false;
    follow.controller.abort();
    if (!follow.asker.tagged) void this.host.call('tasks/cancel', { taskId: follow.taskId });
    return true;
  }

  /** The Session's answer to an input request of a task: upstream as tasks/update. False if not one. */
  inputAnswered(response: Response): boolean {
    const question = this.questions.get(String(response.id));
    if (question === undefined) return false;
    this.questions.delete(String(response.id));
    const { taskId, key } = question;
    if ('error' in response) {
      // v2 input responses are results only: a task whose question cannot be answered cannot go on.
      this.host.logger.warn(
        { taskId, key, error: response.error },
        'the client could not answer an input request of an upstream task: taskgate cancels the task',
      );
      void this.host.call('tasks/cancel', { taskId });
      return true;
    }
    void this.host
      .call('tasks/update', { taskId, inputResponses: { [key]: response.result } })
      .then((done) => {
        if ('error' in done)
          this.host.logger.warn({ taskId, key, error: done.error }, 'tasks/update refused');
      });
    return true;
  }

  /**
   * An upstream notifications/tasks (a full DetailedTask): the Session hears notifications/tasks/status
   * on a change. Only for tasks made through taskgate: taskgate never subscribes, so news of any other is
   * nothing the client asked about.
   */
  notified(params: JsonObject | undefined): void {
    if (!isDetailedTaskV2(params)) return;
    const facts = factsFromV2(params as DetailedTaskV2);
    const held = this.held.get(facts.taskId);
    if (held !== undefined && !held.local) this.observe(held, facts);
  }

  /** The upstream went away (or is being restarted, without its tasks): follows end, unanswered. */
  closed(): void {
    for (const follow of this.follows.values()) follow.controller.abort();
    this.follows.clear();
    this.questions.clear();
    for (const [taskId, held] of this.held) if (!held.local) this.held.delete(taskId);
  }

  // ── tasks/* ──────────────────────────────────────────────────────────────────────────────────────

  private async getTask(taskId: string): Promise<JsonObject> {
    const held = this.lookup(taskId);
    if (held?.local) return toV1Task(held.facts);
    return toV1Task(await this.fetch(taskId));
  }

  /** v1 cancel: the Task, in `cancelled`; a task already terminal is refused (-32602), as v1 requires. */
  private async cancelTask(taskId: string): Promise<JsonObject> {
    const held = this.lookup(taskId);
    const before = held?.local ? held.facts : await this.fetch(taskId);
    if (isTerminal(before.status)) {
      throw new IllegalTransitionError(taskId, toV1Task(before).status, 'cancelled');
    }
    const ack = await this.host.call('tasks/cancel', { taskId });
    if ('error' in ack) throw wireError(ack.error);
    // v2 cancellation is eventually consistent; v1 answers with the task once cancelled.
    const deadline = this.host.now() + CANCEL_SETTLE_MS;
    for (;;) {
      const facts = await this.fetch(taskId);
      if (isTerminal(facts.status) || this.host.now() >= deadline) return toV1Task(facts);
      await sleep(pollDelay(facts));
    }
  }

  private async list(cursor: unknown): Promise<JsonObject> {
    if (cursor !== undefined && typeof cursor !== 'string') {
      throw invalidParams('Invalid params: cursor must be a string');
    }
    const after = cursor === undefined ? -1 : this.cursors.decode(CURSOR_OWNER, cursor);
    this.purge();
    const page = [...this.held.values()].filter((held) => held.visible && held.seq > after);
    const shown = page.slice(0, LIST_PAGE_SIZE);
    const tasks = await Promise.all(
      shown.map(async (held) => {
        if (held.local || isTerminal(held.facts.status)) return toV1Task(held.facts);
        // A task still running may have moved since it was last seen; the last sighting if it cannot be asked.
        return toV1Task(await this.fetch(held.facts.taskId).catch(() => held.facts));
      }),
    );
    const last = shown.at(-1);
    return page.length > shown.length && last !== undefined
      ? { tasks, nextCursor: this.cursors.encode(CURSOR_OWNER, last.seq) }
      : { tasks };
  }

  // ── following a task ─────────────────────────────────────────────────────────────────────────────

  /** Follows the task for the Session's request and answers it with `finish` of the outcome. */
  private runFollow(asker: Asker, taskId: string, finish: (outcome: TaskOutcome) => TaskOutcome): void {
    const key = idKey(asker.sessionId);
    const controller = new AbortController();
    const follow = { controller, asker, taskId };
    this.follows.set(key, follow);
    this.follow(asker, taskId, controller.signal)
      .then(
        (outcome) => this.answer(asker.sessionId, finish(outcome)),
        (error: unknown) => {
          // A cancelled request gets no answer; one for a gone upstream is the Session's to answer.
          if (controller.signal.aborted) return;
          this.answer(asker.sessionId, { error: toJsonRpcError(error) });
        },
      )
      .finally(() => {
        if (this.follows.get(key) === follow) this.follows.delete(key);
      });
  }

  /** Polls tasks/get until the task is terminal, asking the Session for each new input request. */
  private async follow(asker: Asker, taskId: string, signal: AbortSignal): Promise<TaskOutcome> {
    for (;;) {
      const held = this.lookup(taskId);
      const facts = held?.local ? held.facts : await this.fetch(taskId);
      if (signal.aborted) throw new FollowAborted();
      if (isTerminal(facts.status)) return toV1TaskResult(facts);
      if (facts.status === 'input_required' && !this.ask(asker, facts)) {
        void this.host.call('tasks/cancel', { taskId });
        throw new ProtocolError(
          ErrorCode.InternalError,
          `The upstream asked for more than ${MAX_INPUT_KEYS} inputs for task ${taskId}: taskgate cancelled it`,
        );
      }
      // tasks.md "Task Polling": past createdAt + ttlMs a client may take the task as no longer usable.
      const expiresAt = endOf(facts);
      if (expiresAt !== undefined && this.host.now() >= expiresAt) throw new TaskNotFoundError(taskId);
      try {
        await sleep(pollDelay(facts), undefined, { signal });
      } catch {
        throw new FollowAborted();
      }
    }
  }

  /** Puts each input request not asked before to the Session; false once the task asked too many. */
  private ask(asker: Asker, facts: TaskFacts): boolean {
    // A task the index no longer holds (or never did) is held from now on, so that no key is asked twice.
    const held = this.held.get(facts.taskId) ?? this.hold(facts, { visible: false, local: false });
    for (const [key, input] of Object.entries(facts.inputRequests ?? {})) {
      if (held.asked.has(key)) continue;
      if (held.asked.size >= MAX_INPUT_KEYS) return false;
      held.asked.add(key);
      if (!isObject(input) || typeof input.method !== 'string') {
        this.host.logger.warn({ taskId: facts.taskId, key }, 'an upstream input request without a method');
        continue;
      }
      const id = `taskgate-task-input-${this.nextQuestion++}`;
      this.questions.set(id, { taskId: facts.taskId, key });
      const params = isObject(input.params) ? input.params : {};
      this.host.toSession(
        {
          jsonrpc: '2.0',
          id,
          method: input.method,
          params: asker.tagged ? withMeta(params, RELATED_TASK_META, { taskId: facts.taskId }) : params,
        },
        asker.sessionId,
      );
    }
    return true;
  }

  /** The upstream's tasks/get of the task, as facts; what it says is noted in the index. */
  private async fetch(taskId: string): Promise<TaskFacts> {
    const answer = await this.host.call('tasks/get', { taskId });
    if ('error' in answer) {
      if (answer.error.code === ErrorCode.InvalidParams) this.forget(taskId);
      throw wireError(answer.error);
    }
    if (!isDetailedTaskV2(answer.result)) throw wireError(badAnswer('tasks/get', 'a DetailedTask').error);
    const facts = factsFromV2(answer.result as DetailedTaskV2);
    const held = this.held.get(taskId);
    if (held !== undefined) this.observe(held, facts);
    return facts;
  }

  // ── the index ────────────────────────────────────────────────────────────────────────────────────

  private createdFacts(result: JsonObject): TaskFacts | undefined {
    return isCreateTaskResultV2(result) ? factsFromV2(result as CreateTaskResultV2) : undefined;
  }

  private hold(facts: TaskFacts, how: { visible: boolean; local: boolean }): Held {
    const held: Held = { seq: this.seq++, facts, ...how, expiresAt: endOf(facts), asked: new Set() };
    this.held.set(facts.taskId, held);
    while (this.held.size > MAX_HELD_TASKS) {
      const oldest = this.held.keys().next().value;
      if (oldest === undefined) break;
      this.forget(oldest);
    }
    return held;
  }

  /** The index's entry, unless its ttl is over: then it is forgotten (a held-here task is gone). */
  private lookup(taskId: string): Held | undefined {
    const held = this.held.get(taskId);
    if (held?.expiresAt === undefined || this.host.now() < held.expiresAt) return held;
    this.forget(taskId);
    if (held.local) throw new TaskNotFoundError(taskId);
    return undefined;
  }

  private purge(): void {
    const now = this.host.now();
    for (const [taskId, held] of this.held) {
      if (held.expiresAt !== undefined && now >= held.expiresAt) this.forget(taskId);
    }
  }

  /** Notes what the upstream said of a task; a new status is announced to the Session. */
  private observe(held: Held, facts: TaskFacts): void {
    const before = toV1Task(held.facts).status;
    held.facts = facts;
    if (held.visible && toV1Task(facts).status !== before) this.announce(facts);
    if (isTerminal(facts.status)) this.dropQuestions(facts.taskId);
  }

  private forget(taskId: string): void {
    this.held.delete(taskId);
    this.dropQuestions(taskId);
  }

  /** Questions of a task that ended or is forgotten: a late answer to one goes nowhere. */
  private dropQuestions(taskId: string): void {
    for (const [id, question] of this.questions) if (question.taskId === taskId) this.questions.delete(id);
  }

  private announce(facts: TaskFacts): void {
    if (!this.host.statusNotifications) return;
    this.host.toSession({ jsonrpc: '2.0', method: 'notifications/tasks/status', params: toV1Task(facts) });
  }

  // ── answers ──────────────────────────────────────────────────────────────────────────────────────

  private settle(sessionId: RequestId, work: Promise<unknown>): void {
    work.then(
      (result) => this.answer(sessionId, { result: result as JsonObject }),
      (error: unknown) => this.answer(sessionId, { error: toJsonRpcError(error) }),
    );
  }

  private answer(sessionId: RequestId, outcome: TaskOutcome): void {
    this.host.toSession(
      'error' in outcome
        ? errorResponse(sessionId, outcome.error)
        : successResponse(sessionId, outcome.result),
    );
  }
}

/** When the task's ttl ends (epoch ms); undefined when unlimited or its createdAt is unreadable. */
function endOf(facts: TaskFacts): number | undefined {
  const created = Date.parse(facts.createdAt);
  return facts.ttlMs === null || !Number.isFinite(created) ? undefined : created + facts.ttlMs;
}

function pollDelay(facts: TaskFacts): number {
  const suggested = facts.pollIntervalMs ?? DEFAULT_POLL_MS;
  return Math.min(MAX_POLL_MS, Math.max(MIN_POLL_MS, suggested));
}

/** The ttl of a plain answer wrapped as a task: the client's `task.ttl`, within taskgate's bounds. */
function localTtl(task: unknown): number {
  const asked = isObject(task) ? task.ttl : undefined;
  if (typeof asked !== 'number' || !Number.isSafeInteger(asked) || asked < 0) return DEFAULT_LOCAL_TTL_MS;
  return Math.min(asked, MAX_LOCAL_TTL_MS);
}

/** An upstream's JSON-RPC error, passed on as it is. */
const wireError = (error: JsonRpcErrorObject): ProtocolError =>
  new ProtocolError(error.code, error.message, error.data);

const badAnswer = (method: string, expected: string): { error: JsonRpcErrorObject } => ({
  error: {
    code: ErrorCode.InternalError,
    message: `The upstream server answered ${method} with something that is not ${expected}`,
  },
});

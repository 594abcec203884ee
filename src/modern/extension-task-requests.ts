/**
 * The tasks/* requests of 2026-07-28 clients about the tasks extension's tasks (extension-tasks.ts):
 * tasks/get, tasks/update and tasks/cancel, asked of the Session for the caller that created the task;
 * another caller's task is "not found". A task another replica holds is read from the store's input
 * board, and a request this replica's Session cannot serve is relayed to the one running the task; those
 * relayed here are served here.
 */
import type { Logger } from 'pino';
import type { TaskV1 } from '@modelcontextprotocol/ext-tasks/core/v1';
import type { RequestCaller } from '../protocol/caller.js';
import { ErrorCode, type JsonRpcErrorObject } from '../protocol/errors.js';
import { isObject, type JsonObject, type Request } from '../protocol/messages.js';
import { callerOfExchange, type ModernAnswer, type ModernExchange } from '../protocol/modern/exchange.js';
import type { PostedTask, RelayedAnswer, RelayedRequest, TaskInputBoard } from '../tasks/store.js';
import { toJsonRpcError } from '../tasks/wire-errors.js';
import type { ExtensionTask, Outcome } from './extension-task-record.js';
import { TASK_NOT_FOUND } from './extension-task-wire.js';
import { exchangeOf, relayedAnswer, relayedOf } from './relayed.js';

/** What the bridge lends the tasks extension: requests of its own to the Session, and answers to the server. */
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

/** How long a replica waits for the one running a task to serve a request relayed to it. */
const RELAY_WITHIN_MS = 5_000;

/** A task a tasks/* request names: held here, or (`posted`) by another replica sharing the store. */
type FoundTask = { taskId: string; task: ExtensionTask | undefined; posted: PostedTask | undefined };

/** What the tasks held here lend the requests (extension-tasks.ts). */
export interface TaskRequestsHost {
  /** The task of this id, if it is held here. */
  held(taskId: string): ExtensionTask | undefined;
  /** The v2 DetailedTask of a task whose 2025 face the Session gave. */
  detailed(v1: TaskV1, task: ExtensionTask | undefined, posted: PostedTask | undefined): Promise<Outcome>;
  answerInputs(task: ExtensionTask, responses: Record<string, unknown>): void;
  withdrawInputs(task: ExtensionTask, reason: string): void;
}

export interface TaskRequestsOptions {
  session: SessionAccess;
  /** The input board of a store shared by replicas. */
  board?: TaskInputBoard | undefined;
  /** A caller named a task of another caller (for the audit log): it was told "not found". */
  denied?: ((taskId: string, method: string, subject: string | undefined) => void) | undefined;
  host: TaskRequestsHost;
}

export class TaskRequests {
  constructor(private readonly options: TaskRequestsOptions) {}

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
    const detailed = await this.options.host.detailed(
      asked.result as unknown as TaskV1,
      found.task,
      found.posted,
    );
    return this.options.session.respond(request, detailed);
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
    if (found.task !== undefined) this.options.host.answerInputs(found.task, responses);
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
    if (found.task !== undefined) this.options.host.withdrawInputs(found.task, 'the task was cancelled');
    return this.options.session.respond(request, { result: {} });
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
    const task = this.options.host.held(taskId);
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
  async serveRelayed(relayed: RelayedRequest): Promise<RelayedAnswer | undefined> {
    const taskId = relayed.request.params?.taskId;
    if (typeof taskId !== 'string' || this.options.host.held(taskId) === undefined) return undefined;
    const exchange: ModernExchange = exchangeOf(relayed, RELAY_WITHIN_MS);
    const method = relayed.request.method;
    const answer =
      method === 'tasks/get'
        ? await this.get(exchange)
        : method === 'tasks/cancel'
          ? await this.cancel(exchange)
          : undefined;
    return relayedAnswer(answer);
  }
}

/**
 * The tasks a server runs itself, reached from every replica sharing the store (issue 32). Each replica
 * has its own process of each server, so a task only the server knows lives where it was made: that
 * replica posts it on the store's board (its creator bound to it) before the client hears of it, and a
 * tasks/get, tasks/result or tasks/cancel another replica's server cannot serve is carried to it
 * (`TaskInputBoard.relay`) and asked of the session that made it. A session of this replica that did not
 * make it is served from here alike. Another identity is given the answer for an unknown id; the tasks of a
 * caller without identity are not posted, they stay its session's as taskgate's own do. A tasks/result
 * relayed while the task waits for input carries the requests its server sends on it back to the session
 * that asked, and their answers to the server. Each session marks its servers' own task ids, since two
 * processes of one server may mint the same ones (`SessionServerTasks.taskIds`).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { RequestCaller } from '../protocol/caller.js';
import { Correlation } from '../protocol/correlation.js';
import { ErrorCode, ProtocolError } from '../protocol/errors.js';
import {
  errorResponse,
  isObject,
  RELATED_TASK_META,
  successResponse,
  type JsonObject,
  type Request,
  type RequestId,
  type Response,
} from '../protocol/messages.js';
import type {
  IndexedPage,
  IndexPlace,
  RelayedAnswer,
  RelayedRequest,
  TaskInputBoard,
} from '../tasks/store.js';
import type { Outcome } from './member.js';
import type { Names } from './names.js';
import { withOuterRelatedTaskId, type TaskIdNames } from './task-ids.js';

/** What a request the aggregator routed to one server was about (aggregator.ts `Routed`). */
export type RoutedAbout = { method: 'tools/call' } | { method: string; taskId: string; request: Request };

/** An aggregator, as the one holding a server's own task: it asks the task's server. */
export interface TaskHolder {
  /** `method` (tasks/get, tasks/result, tasks/cancel) of the task `taskId` names, both as the client sees them. */
  askTask(method: string, taskId: string): Promise<Outcome>;
  /**
   * A server's `request` carried from where its task is held, asked of the client with its request `about`;
   * withdrawn from the client once `signal` aborts (undefined then).
   */
  askClient(request: Request, about: RequestId, signal: AbortSignal): Promise<Response | undefined>;
}

/** How a session asks its client a server's request carried to it: the client's answer. */
type InputAsker = (request: Request) => Promise<Response>;

/** How long a replica waits for the one holding a task to serve one request relayed to it. */
const RELAY_WITHIN_MS = 5_000;
/**
 * How long a tasks/result that may ask for input, and each request for input, are waited for when relayed:
 * a person may be asked. A replica that goes away meanwhile is noticed by the polls beside it.
 */
const INPUT_WITHIN_MS = 60 * 60 * 1_000;
/** How long a server's own task without a ttl stays reachable from other replicas. */
const UNLIMITED_TTL_MS = 24 * 60 * 60 * 1_000;
/** Held tasks past which the expired ones are dropped before one more is held. */
const PRUNE_PAST = 10_000;
/** Tasks of other sessions a page of tasks/list names at most. */
const LISTED_PER_PAGE = 100;
/** How long tasks/list reads on past pages of the index that name none of the caller's live tasks. */
const READ_PAST_WITHIN_MS = 1_000;
const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

interface Held {
  holder: TaskHolder;
  identity: string;
  until: number;
}

/** One per process: the server's own tasks its sessions hold, and the requests other replicas relay here. */
export class ReplicaTasks {
  private readonly held = new Map<string, Held>();
  /** Where the requests a server sends on a tasks/result relayed here go, by its task (as the client sees it). */
  private readonly inputTo = new Map<string, { replica: string; asker: string; principal?: string }>();
  /** The sessions here whose relayed tasks/result may bring requests for input, by the token it carried. */
  private readonly askers = new Map<string, InputAsker>();
  private readonly stopServing: () => void;

  constructor(
    private readonly board: TaskInputBoard,
    readonly logger: Logger,
  ) {
    this.stopServing = board.onRelayed((relayed) => this.serve(relayed));
  }

  /** What one session (its aggregator and its servers' Sessions, for `caller`) does with these tasks. */
  session(caller: RequestCaller, names: Names): SessionServerTasks {
    return new SessionServerTasks(this, caller, names);
  }

  async post(taskId: string, ttl: unknown, holder: TaskHolder, identity: string): Promise<void> {
    const ttlMs = typeof ttl === 'number' && ttl > 0 ? ttl : UNLIMITED_TTL_MS;
    if (this.held.size >= PRUNE_PAST) this.prune();
    this.held.set(taskId, { holder, identity, until: Date.now() + ttlMs });
    await this.board.index(identity, taskId, ttlMs);
    await this.board.post(taskId, { principal: identity, inputRequests: {} }, ttlMs);
  }

  /** Its server forgot the task: it is no longer served from here. */
  unhold(taskId: string, identity: string): void {
    if (this.held.get(taskId)?.identity === identity) this.held.delete(taskId);
  }

  /** The session closed: its tasks are no longer served from here. */
  forget(holder: TaskHolder): void {
    for (const [taskId, held] of this.held) if (held.holder === holder) this.held.delete(taskId);
  }

  /**
   * The answer to `request` (about `taskId`, as the client sees it) from the session holding the task, on
   * this replica or another; undefined when none holds it for `caller`.
   */
  async elsewhere(
    request: Request,
    taskId: string,
    caller: RequestCaller,
    self: TaskHolder,
    signal: AbortSignal,
    input: InputAsker,
  ): Promise<Response | undefined> {
    const posted = await this.board.read(taskId).catch(() => undefined);
    const runner = posted?.runner;
    if (
      runner === undefined ||
      posted?.principal === undefined ||
      (posted.principal !== caller.identity && caller.access?.allTasks !== true)
    ) {
      return undefined;
    }
    if (runner === this.board.self && this.held.get(taskId)?.holder === self) return undefined;
    const relayed = (method: string): Promise<Outcome | undefined> =>
      this.ask(runner, method, taskId, caller);
    const answer = (outcome: Outcome | undefined): Response =>
      outcome === undefined
        ? errorResponse(request.id, {
            code: ErrorCode.UpstreamUnavailable,
            message: `The taskgate replica running task ${taskId} did not answer: it may have stopped`,
          })
        : outcome.ok
          ? successResponse(request.id, outcome.result)
          : errorResponse(request.id, outcome.error);
    if (request.method !== 'tasks/result') {
      const outcome = await relayed(request.method);
      return outcome === undefined ? undefined : answer(outcome);
    }
    // The result waits for the task's end: polled (each poll bounded), so a replica that went away is
    // noticed within seconds instead of holding the request for the task's whole life. A server asks for
    // input on a tasks/result: one is relayed then, and the polls go on beside it until it is answered.
    let withInput: Promise<Outcome | undefined> | undefined;
    for (let first = true; ; first = false) {
      const got = await relayed('tasks/get');
      if (got === undefined && first) return undefined;
      if (got === undefined || !got.ok) return answer(got);
      const status = String(got.result.status);
      if (TERMINAL.has(status)) return answer(await relayed('tasks/result'));
      if (status === 'input_required') withInput ??= this.resultWithInput(runner, taskId, caller, input);
      const every = typeof got.result.pollInterval === 'number' ? got.result.pollInterval : 500;
      const pause = new AbortController();
      const slept = delay(Math.min(Math.max(every, 50), 2_000), undefined, {
        signal: AbortSignal.any([signal, pause.signal]),
      }).then(
        () => undefined,
        () => (signal.aborted ? ('aborted' as const) : undefined),
      );
      let waited = await Promise.race([
        slept,
        ...(withInput === undefined ? [] : [withInput.then((outcome) => outcome ?? ('lost' as const))]),
      ]);
      // A relayed tasks/result that got no answer is asked again after the pause, not at once.
      if (waited === 'lost') {
        withInput = undefined;
        waited = await slept;
      }
      pause.abort();
      if (waited === 'aborted') return undefined;
      if (waited !== undefined) return answer(waited);
    }
  }

  /** The task's tasks/result relayed to its runner, the requests its server sends on it asked by `input`. */
  private async resultWithInput(
    runner: string,
    taskId: string,
    caller: RequestCaller,
    input: InputAsker,
  ): Promise<Outcome | undefined> {
    const asker = randomUUID();
    this.askers.set(asker, input);
    try {
      return await this.ask(runner, 'tasks/result', taskId, caller, { inputTo: asker });
    } finally {
      this.askers.delete(asker);
    }
  }

  /**
   * A request a server sent for its task `taskId` (as the client sees it) on a tasks/result relayed here:
   * relayed back to the session that asked, and its answer given to `reply`. False for any other request.
   */
  carryInput(taskId: string, request: Request, reply: (response: Response) => void): boolean {
    const to = this.inputTo.get(taskId);
    if (to === undefined) return false;
    const carried: RelayedRequest = {
      request: request as RelayedRequest['request'],
      inputFor: to.asker,
      ...(to.principal === undefined ? {} : { principal: to.principal }),
    };
    void this.relayTo(to.replica, carried, INPUT_WITHIN_MS).then((answer) => {
      const outcome = outcomeOf(answer?.response);
      reply(
        outcome === undefined
          ? errorResponse(request.id, {
              code: ErrorCode.UpstreamUnavailable,
              message: 'The client asking for the task through another taskgate session did not answer',
            })
          : outcome.ok
            ? successResponse(request.id, outcome.result)
            : errorResponse(request.id, outcome.error),
      );
    });
    return true;
  }

  /**
   * A page of the caller's tasks that servers run themselves for its sessions other than `self`'s (on this
   * replica or another), as tasks/get gives them, from `cursor` (a page's `next`); none for a caller without
   * identity (its tasks are its session's).
   */
  async listedElsewhere(
    caller: RequestCaller,
    self: TaskHolder,
    cursor: string | undefined,
  ): Promise<{ tasks: JsonObject[]; next?: string }> {
    const principal = caller.identity;
    if (principal === undefined) return { tasks: [] };
    let from = cursor === undefined ? undefined : placeOf(cursor);
    const until = Date.now() + READ_PAST_WITHIN_MS;
    for (;;) {
      const page = await this.board
        .indexed(principal, LISTED_PER_PAGE, from)
        .catch((): IndexedPage => ({ taskIds: [] }));
      const tasks = await Promise.all(
        page.taskIds
          .filter((taskId) => this.held.get(taskId)?.holder !== self)
          .map(async (taskId) => {
            const posted = await this.board.read(taskId).catch(() => undefined);
            if (posted?.runner === undefined || posted.principal !== principal) return undefined;
            const got = await this.ask(posted.runner, 'tasks/get', taskId, caller);
            return got?.ok === true ? got.result : undefined;
          }),
      );
      const listed = tasks.filter((task) => task !== undefined);
      if (page.next === undefined) return { tasks: listed };
      // A page naming none while more follow is read past (a client may take it for the end), but not for
      // long: each task of a replica gone away waits out its relay, and thousands of them would take minutes.
      if (listed.length > 0 || Date.now() >= until)
        return { tasks: listed, next: `${page.next.until}.${page.next.skip}` };
      from = page.next;
    }
  }

  close(): void {
    this.stopServing();
    this.held.clear();
  }

  /** `method` of the task, asked of the replica running it (served here when that is this one). */
  private async ask(
    runner: string,
    method: string,
    taskId: string,
    caller: RequestCaller,
    input?: { inputTo: string },
  ): Promise<Outcome | undefined> {
    const asked: RelayedRequest = {
      request: { jsonrpc: '2.0', id: 0, method, params: { taskId } },
      ...(caller.identity === undefined ? {} : { principal: caller.identity }),
      ...(caller.subject === undefined ? {} : { subject: caller.subject }),
      ...(caller.access?.allTasks === true ? { allTasks: true as const } : {}),
      ...input,
    };
    const answer = await this.relayTo(runner, asked, input === undefined ? RELAY_WITHIN_MS : INPUT_WITHIN_MS);
    return outcomeOf(answer?.response);
  }

  private async relayTo(
    replica: string,
    relayed: RelayedRequest,
    withinMs: number,
  ): Promise<RelayedAnswer | undefined> {
    if (replica === this.board.self) return this.serve({ ...relayed, from: replica });
    return this.board.relay(replica, relayed, withinMs).catch(() => undefined);
  }

  /**
   * A request another replica relayed (or a session here asked): served by the session holding its task;
   * or a server's request for input carried back from there, asked of the session here that relayed.
   */
  private async serve(relayed: RelayedRequest): Promise<RelayedAnswer | undefined> {
    const { request } = relayed;
    if (relayed.inputFor !== undefined) {
      const asker = this.askers.get(relayed.inputFor);
      return asker === undefined ? undefined : { response: await asker(request as Request) };
    }
    const taskId = request.params?.taskId;
    const held = typeof taskId === 'string' ? this.held.get(taskId) : undefined;
    if (held === undefined || (held.identity !== relayed.principal && relayed.allTasks !== true))
      return undefined;
    const input =
      request.method === 'tasks/result' && relayed.inputTo !== undefined && relayed.from !== undefined
        ? { replica: relayed.from, asker: relayed.inputTo, principal: held.identity }
        : undefined;
    if (input !== undefined) this.inputTo.set(taskId as string, input);
    try {
      const outcome = await held.holder.askTask(request.method, taskId as string);
      this.logger.debug({ taskId, method: request.method }, 'served a server-run task for another session');
      return {
        response: outcome.ok
          ? successResponse(request.id, outcome.result)
          : errorResponse(request.id, outcome.error),
      };
    } finally {
      if (input !== undefined && this.inputTo.get(taskId as string) === input)
        this.inputTo.delete(taskId as string);
    }
  }

  private prune(): void {
    const now = Date.now();
    for (const [taskId, held] of this.held) if (held.until <= now) this.held.delete(taskId);
  }
}

/**
 * One session's part: which of its tasks the servers run themselves (their Sessions say so as they see
 * them), posted when created, and the requests its servers could not serve, asked where the task is held.
 */
export class SessionServerTasks {
  /** Its servers' own tasks, by the id the client sees. */
  private readonly own = new Set<string>();
  /**
   * tasks/* requests asked where their task is held, by the client's request id: its cancellation withdraws
   * the one it names (the first of two sent with one id), and one that ends takes out only its own entry.
   */
  private readonly asking = new Correlation<AbortController>();
  /**
   * Put before the id of each of its servers' own tasks: another process of the same server (on another
   * replica, or for another session) may mint the same ids, which are then told apart on the board.
   */
  private readonly mark = `${randomBytes(6).toString('hex')}.`;
  /** Its servers' task ids as the client sees them, its servers' own tasks' marked, and back. */
  readonly taskIds: TaskIdNames;

  constructor(
    private readonly replicas: ReplicaTasks,
    private readonly caller: RequestCaller,
    private readonly names: Names,
  ) {
    this.taskIds = {
      taskId: (server, id) => {
        const marked = names.taskId(server, this.mark + id);
        return this.own.has(marked) ? marked : names.taskId(server, id);
      },
      // Another session's mark stays: its server does not know that id, and the task is asked where it is held.
      innerTaskId: (id, servers) => {
        const found = names.innerTaskId(id, servers);
        if (!found?.name.startsWith(this.mark)) return found;
        return { server: found.server, name: found.name.slice(this.mark.length) };
      },
    };
  }

  /** A server's Session saw one of its server's own tasks (`taskId` as the server gave it). */
  sighted(server: string, taskId: string): void {
    this.own.add(this.names.taskId(server, this.mark + taskId));
  }

  forgotten(server: string, taskId: string): void {
    const outer = this.names.taskId(server, this.mark + taskId);
    this.own.delete(outer);
    if (this.caller.identity !== undefined) this.replicas.unhold(outer, this.caller.identity);
  }

  /**
   * A server's answer about a task, before the client gets it (`deliver`): a task its server runs itself
   * is posted first, so that another replica asked next knows where it is; a tasks/* request the server
   * could not serve is asked where the task is held, and that answer goes instead (`answer`), if any.
   */
  answered(
    holder: TaskHolder,
    about: RoutedAbout,
    response: Response,
    created: unknown,
    deliver: () => void,
    answer: (response: Response) => void,
  ): void {
    if ('taskId' in about) {
      if ('error' in response) void this.askElsewhere(holder, about, deliver, answer);
      else deliver();
      return;
    }
    const identity = this.caller.identity;
    // A caller without identity: its tasks are its session's, as taskgate's own are.
    if (identity === undefined || !isObject(created) || typeof created.taskId !== 'string') return deliver();
    if (!this.own.has(created.taskId)) return deliver();
    this.replicas
      .post(created.taskId, created.ttl, holder, identity)
      .catch((error: unknown) =>
        this.replicas.logger.warn(
          { error: String(error) },
          'a server-run task could not be posted for the other replicas',
        ),
      )
      .finally(deliver);
  }

  /**
   * A request of `server`'s for one of its own tasks whose tasks/result another session asked (on this
   * replica or another): carried there, its answer given to `reply`. False for any other request.
   */
  carried(server: string, request: Request, reply: (response: Response) => void): boolean {
    const meta = request.params?._meta;
    const related = isObject(meta) ? meta[RELATED_TASK_META] : undefined;
    if (!isObject(related) || typeof related.taskId !== 'string') return false;
    const params = withOuterRelatedTaskId(request.params!, server, this.taskIds);
    const taskId = this.taskIds.taskId(server, related.taskId);
    return this.replicas.carryInput(taskId, { ...request, ...(params && { params }) }, reply);
  }

  /** The client cancelled its request `id`: it is no longer asked elsewhere. */
  cancelled(id: RequestId): void {
    this.asking.withdraw(id)?.[1].abort();
  }

  listedElsewhere(
    self: TaskHolder,
    cursor: string | undefined,
  ): Promise<{ tasks: JsonObject[]; next?: string }> {
    return this.replicas.listedElsewhere(this.caller, self, cursor);
  }

  close(holder: TaskHolder): void {
    for (const asking of this.asking.drain()) asking.abort();
    this.replicas.forget(holder);
    this.own.clear();
  }

  private async askElsewhere(
    holder: TaskHolder,
    { request, taskId }: { request: Request; taskId: string },
    deliver: () => void,
    answer: (response: Response) => void,
  ): Promise<void> {
    const asking = new AbortController();
    const key = this.asking.forward(request.id, asking);
    // What the server asks on the way is asked of the client until it is no longer waiting.
    const input = async (asked: Request): Promise<Response> =>
      (asking.signal.aborted ? undefined : await holder.askClient(asked, request.id, asking.signal)) ??
      errorResponse(asked.id, {
        code: ErrorCode.ClientUnavailable,
        message: "The client that asked for the task's result is no longer waiting",
      });
    const got = await this.replicas
      .elsewhere(request, taskId, this.caller, holder, asking.signal, input)
      .catch(() => undefined);
    // Withdrawn by a cancellation, its key may be another request's by now.
    if (this.asking.get(key) === asking) this.asking.take(key);
    if (asking.signal.aborted) return;
    if (got === undefined) deliver();
    else answer(got);
  }
}

/** The place in the index a cursor's `next` names; a ProtocolError (-32602) for one taskgate did not give. */
function placeOf(cursor: string): IndexPlace {
  const place = /^(\d+)\.(\d+)$/.exec(cursor);
  if (place === null) throw new ProtocolError(ErrorCode.InvalidParams, 'Invalid cursor');
  return { until: Number(place[1]), skip: Number(place[2]) };
}

/** The outcome a relayed response carries; undefined when it is no response. */
function outcomeOf(response: object | undefined): Outcome | undefined {
  if (!isObject(response)) return undefined;
  if (isObject(response.result)) return { ok: true, result: response.result };
  const error = response.error;
  if (isObject(error) && typeof error.code === 'number' && typeof error.message === 'string') {
    return {
      ok: false,
      error: {
        code: error.code,
        message: error.message,
        ...(error.data === undefined ? {} : { data: error.data }),
      },
    };
  }
  return undefined;
}

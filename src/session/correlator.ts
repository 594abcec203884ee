/**
 * Which client request, or which task, a message from the upstream belongs with: by the stream it came on,
 * the progress token it carries, the task it names, or (a server-to-client request during a task) the one
 * task it can only be about. Over Streamable HTTP the answer picks the stream a message goes on.
 */
import { ProgressTokens } from '../protocol/correlation.js';
import {
  RELATED_TASK_META,
  idKey,
  isObject,
  metaOf,
  type JsonObject,
  type RequestId,
} from '../protocol/messages.js';
import { isTerminal, type TaskStatus } from '../tasks/state.js';
import type { Arrival, Route } from '../transport/channel.js';

/** What the correlator asks of the session's other parts. */
export interface CorrelatorLookups {
  /** The client request a request forwarded upstream (by the id the upstream knows it by) stands for. */
  clientRequestOf(wireId: RequestId): RequestId | undefined;
  /** The client's tools/call answered by following an upstream task (unwrap). */
  unwrappedCallOf(taskId: string): RequestId | undefined;
  /** The task of taskgate's own whose upstream call has this id. */
  taskOfCall(wireId: RequestId): string | undefined;
  /** The only task of taskgate's own running, if exactly one runs. */
  soleRunningTask(): string | undefined;
}

/** How many tokens of the upstream's own tasks are remembered at most. */
const TOKENS_KEPT = 1024;

/** The server-to-client requests a task's call makes for input. */
const TASK_INPUT_METHODS = new Set(['elicitation/create', 'sampling/createMessage']);

export class Correlator {
  /**
   * Progress token → the client request that gave it, while that request is in flight; and the tokens
   * whose request was answered or cancelled, or whose task ended: the client hears no more progress of them.
   */
  private readonly progress = new ProgressTokens<RequestId>();
  /** The other way round: client request → its progress token, to forget it in one step when answered. */
  private readonly progressTokenOf = new Map<string | number, string | number>();
  /** Task → the client's open tasks/result of it, where related messages belong. */
  private readonly openTaskResults = new Map<string, RequestId>();
  /** Ids of plain tools/call requests in flight upstream, to know when an upstream request is unambiguous. */
  private readonly plainToolCalls = new Set<string | number>();
  /** The upstream's own tasks made by a client request with a progress token: its progress lasts as long as they run. */
  private readonly tokenOfTask = new Map<string, string | number>();
  private readonly taskOfToken = new Map<string | number, string>();

  constructor(private readonly lookups: CorrelatorLookups) {}

  /** A client request arrived: its progress token, if it gave one, now routes to it. */
  requestOpened(id: RequestId, params: JsonObject | undefined): void {
    const token = metaOf(params)?.progressToken;
    if (typeof token !== 'string' && typeof token !== 'number') return;
    this.progress.open(token, id);
    this.progressTokenOf.set(idKey(id), token);
  }

  /** The client request is answered or cancelled: its token routes nowhere now. */
  requestAnswered(id: RequestId): void {
    if (this.progressTokenOf.size === 0) return;
    const token = this.progressTokenOf.get(idKey(id));
    if (token === undefined) return;
    this.progressTokenOf.delete(idKey(id));
    this.progress.end(token, id);
  }

  /**
   * The client request `id`, still open, made the upstream's task `taskId` (passed through): its progress
   * token stays the task's until the task ends (spec: Progress, for tasks).
   */
  upstreamTaskMade(id: RequestId, taskId: string): void {
    const token = this.progressTokenOf.get(idKey(id));
    if (token === undefined) return;
    if (this.tokenOfTask.size >= TOKENS_KEPT) this.upstreamTaskEnded(this.tokenOfTask.keys().next().value!);
    this.tokenOfTask.set(taskId, token);
    this.taskOfToken.set(idKey(token), taskId);
  }

  /** A description of an upstream task went by: once it is terminal, so is its progress. */
  upstreamTaskSeen(task: unknown): void {
    if (this.tokenOfTask.size === 0 || !isObject(task) || typeof task.taskId !== 'string') return;
    if (typeof task.status === 'string' && isTerminal(task.status as TaskStatus)) {
      this.upstreamTaskEnded(task.taskId);
    }
  }

  /** The upstream's task ended (or its end was learnt otherwise, as by its tasks/result). */
  upstreamTaskEnded(taskId: string): void {
    const token = this.tokenOfTask.get(taskId);
    if (token === undefined) return;
    this.tokenOfTask.delete(taskId);
    if (this.taskOfToken.get(idKey(token)) === taskId) this.taskOfToken.delete(idKey(token));
    // Still the request's while it is open: its end ends the token.
    if (this.progress.ownerOf(token) === undefined) this.progress.end(token);
  }

  /** Whether progress with this token comes after the end of what it reported on, so nobody is to hear it. */
  progressIsOver(token: string | number): boolean {
    return this.progress.isOver(token) && !this.taskOfToken.has(idKey(token));
  }

  /** @internal How many client requests' progress tokens are held (tests: none once all are answered). */
  get tokensHeld(): number {
    return this.progressTokenOf.size + this.progress.size;
  }

  /** The client's tasks/result of a task is open; the returned function closes it. */
  taskResultOpened(taskId: string, id: RequestId): () => void {
    this.openTaskResults.set(taskId, id);
    return () => {
      if (this.openTaskResults.get(taskId) === id) this.openTaskResults.delete(taskId);
    };
  }

  plainCallSent(wireId: RequestId): void {
    this.plainToolCalls.add(idKey(wireId));
  }

  plainCallEnded(wireId: RequestId): void {
    this.plainToolCalls.delete(idKey(wireId));
  }

  /** The upstream went away: none of its plain calls is in flight any more. */
  plainCallsLost(): void {
    this.plainToolCalls.clear();
  }

  /** The upstream went away: none of its tasks runs any more. */
  upstreamTasksLost(): void {
    for (const taskId of [...this.tokenOfTask.keys()]) this.upstreamTaskEnded(taskId);
  }

  /**
   * The client request an upstream message belongs with, for a transport with several streams: the
   * request whose upstream stream carried it, or the one whose progress token it carries, or for a task,
   * the client's open tasks/result of it.
   */
  routeFor(params: JsonObject | undefined, arrival: Arrival | undefined): Route | undefined {
    const onStreamOf = arrival?.onStreamOf;
    if (onStreamOf !== undefined) {
      const clientId = this.lookups.clientRequestOf(onStreamOf);
      if (clientId !== undefined) return { relatedTo: clientId };
    }
    const token = metaOf(params)?.progressToken ?? params?.progressToken;
    if (typeof token === 'string' || typeof token === 'number') {
      const owner = this.progress.ownerOf(token)?.owner;
      if (owner !== undefined) return { relatedTo: owner };
    }
    const tag = metaOf(params)?.[RELATED_TASK_META];
    return isObject(tag) && typeof tag.taskId === 'string' ? this.routeForTask(tag.taskId) : undefined;
  }

  /**
   * An untagged log message while exactly one plain tools/call is in flight upstream (over stdio nothing
   * says more): that call's, so that a front that sends logs only with their request (2026-07-28) has one.
   */
  routeForLog(): Route | undefined {
    if (this.plainToolCalls.size !== 1) return undefined;
    const [wireId] = this.plainToolCalls;
    const clientId = wireId === undefined ? undefined : this.lookups.clientRequestOf(wireId);
    return clientId === undefined ? undefined : { relatedTo: clientId };
  }

  /** A message about a task goes on the client's open tasks/result of it, or its unwrapped call. */
  routeForTask(taskId: string): Route | undefined {
    const waiting = this.openTaskResults.get(taskId) ?? this.lookups.unwrappedCallOf(taskId);
    return waiting === undefined ? undefined : { relatedTo: waiting };
  }

  /**
   * The task of taskgate's own an untagged upstream request is made for: the one whose call's stream
   * carried it (Streamable HTTP); else, for a request for input, the sole running task while no plain
   * call could have made it.
   */
  taskOfRequest(method: string, arrival: Arrival | undefined): string | undefined {
    const onStreamOf = arrival?.onStreamOf;
    const onStream = onStreamOf === undefined ? undefined : this.lookups.taskOfCall(onStreamOf);
    if (onStream !== undefined) return onStream;
    return TASK_INPUT_METHODS.has(method) && this.plainToolCalls.size === 0
      ? this.lookups.soleRunningTask()
      : undefined;
  }
}

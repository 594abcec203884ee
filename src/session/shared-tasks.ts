/**
 * Which client session owns each of a shared upstream server's own tasks (`upstream.sharing: shared` and
 * `pool`): the multiplexer (src/transport/shared-upstream.ts) asks here whom a task's messages go to and
 * whether a session may ask about a task, so that each session sees only its own tasks, as on a server
 * of its own.
 */
import { errorResponse, isObject, metaOf, RELATED_TASK_META } from '../protocol/messages.js';
import type { JsonObject, Request, Response } from '../protocol/messages.js';
import { TaskNotFoundError } from '../tasks/errors.js';
import { ALLOWED_TRANSITIONS, isTerminal, type TaskStatus } from '../tasks/state.js';
import { toJsonRpcError } from '../tasks/wire-errors.js';
import type { SharedPort, SharedTaskRules, TaskHost, WireToken } from '../transport/shared-rules.js';

/** The session a server-side task is routed to, until `expires` (on the `now` clock). */
interface TaskOwner {
  port: SharedPort;
  /** The task's ttl as the server last gave it, in ms; null: unlimited. */
  ttl: number | null;
  expires: number;
}

/** The fewest task owners held before expired ones are swept out. */
const TASK_SWEEP_FLOOR = 64;

export class SharedTasks implements SharedTaskRules {
  /**
   * Which session owns each task. Not dropped when the task ends: a terminal task's tasks/get and
   * tasks/result are still answered by the server until its ttl (2025-11-25 tasks: the result may be
   * fetched again), and only this record keeps them the owner's and out of other sessions' reach (their
   * tasks/get, tasks/result, tasks/list), as on a server of its own. So it is held until the task's ttl
   * has passed since it was last seen (created, a status, an answer about it: an SDK server keeps a task
   * its ttl from its end), when the server may have deleted it, whatever its status; a task with no ttl
   * (null, unlimited) is held for the session's life. A record outlives its session's close until its
   * ttl (the server still answers for the task, and only the record keeps it from other sessions): it is
   * a tombstone then, whose port is closed and is routed nothing (routedTo). Expired records are dropped
   * when read, and swept out whenever the map has doubled since the last sweep, so it holds at most twice
   * the live ones.
   */
  private readonly owners = new Map<string, TaskOwner>();
  private sweepAt = TASK_SWEEP_FLOOR;
  /** The wire progress token of each task still running that was created with one. */
  private readonly progress = new Map<string, WireToken>();
  private host: TaskHost | undefined;

  constructor(
    /** A monotonic clock in ms, for the tasks' ttl. */
    private readonly now: () => number = () => performance.now(),
  ) {}

  bind(host: TaskHost): void {
    this.host = host;
  }

  /** How many task owners are held (tests: the map is bounded). */
  get held(): number {
    return this.owners.size;
  }

  /**
   * Only the session's own tasks reach the server. Any other id (another session's, a closed one's, one
   * never seen or forgotten) gets one answer from here, so it tells nothing of which it is.
   */
  refusal(port: SharedPort, request: Request): Response | undefined {
    const taskId = request.params?.taskId;
    if (typeof taskId !== 'string' || this.ownerOf(taskId) === port) return undefined;
    return errorResponse(request.id, toJsonRpcError(new TaskNotFoundError(taskId)));
  }

  answered(
    port: SharedPort | undefined,
    method: string,
    result: JsonObject | undefined,
    progress: WireToken | undefined,
  ): { keepsProgress: boolean; result?: JsonObject } {
    const task = isObject(result?.task) ? result.task : undefined;
    let keepsProgress = false;
    if (typeof task?.taskId === 'string' && port !== undefined) {
      this.owned(task.taskId, port, task);
      // The progress of a task goes on after its creation is answered, until the task ends.
      if (progress !== undefined) {
        this.progress.set(task.taskId, progress);
        keepsProgress = true;
      }
      if (endsTask(task.status)) this.ended(task.taskId);
    }
    const aboutTask = method.startsWith('tasks/');
    if (aboutTask && typeof result?.taskId === 'string') this.seen(result.taskId, result);
    if (method === 'tasks/result' || (aboutTask && endsTask(result?.status))) {
      if (typeof result?.taskId === 'string') this.ended(result.taskId);
      const related = metaOf(result)?.[RELATED_TASK_META];
      if (isObject(related) && typeof related.taskId === 'string') {
        this.seen(related.taskId);
        this.ended(related.taskId);
      }
    }
    if (method === 'tasks/list' && port !== undefined && Array.isArray(result?.tasks)) {
      const own = result.tasks.filter((listed: unknown) => this.owns(port, listed));
      return { keepsProgress, result: { ...result, tasks: own } };
    }
    return { keepsProgress };
  }

  /**
   * The session a server's message about `taskId` goes to: its owner's; a reason when the owner's session
   * has closed (nobody else may answer for it); undefined when no session owns it.
   */
  routeOf(taskId: string): SharedPort | string | undefined {
    const owner = this.ownerOf(taskId);
    if (owner === undefined) return undefined;
    this.seen(taskId);
    return this.routedTo(owner) ?? `the client session of task ${taskId} has closed`;
  }

  /** A notifications/tasks/status: the port it goes to, if its task's session is here. */
  status(params: JsonObject): SharedPort | undefined {
    const taskId = params.taskId;
    if (typeof taskId !== 'string') return undefined;
    const owner = this.ownerOf(taskId);
    this.seen(taskId, params);
    if (endsTask(params.status)) this.ended(taskId);
    return owner === undefined ? undefined : this.routedTo(owner);
  }

  /**
   * A port closed. A task within its ttl stays the closed session's (a tombstone: nothing is routed to
   * it, other sessions are still told it is not found) until it expires. One with no ttl would be held
   * forever: it is let go.
   */
  detached(port: SharedPort): void {
    for (const [taskId, owner] of this.owners) {
      if (owner.port !== port) continue;
      this.progress.delete(taskId);
      if (owner.ttl === null) this.owners.delete(taskId);
    }
  }

  /** The upstream went away: no task of its has progress to route any more. */
  upstreamClosed(): void {
    this.progress.clear();
  }

  private owns(port: SharedPort, task: unknown): boolean {
    if (!isObject(task) || typeof task.taskId !== 'string' || this.ownerOf(task.taskId) !== port)
      return false;
    this.seen(task.taskId, task);
    return true;
  }

  private owned(taskId: string, port: SharedPort, task: JsonObject): void {
    const ttl = ttlOf(task) ?? null;
    this.owners.set(taskId, { port, ttl, expires: this.expiry(ttl) });
    if (this.owners.size < this.sweepAt) return;
    const now = this.now();
    for (const [id, owner] of this.owners) if (owner.expires <= now) this.forgotten(id);
    this.sweepAt = Math.max(TASK_SWEEP_FLOOR, 2 * this.owners.size);
  }

  /** The port a task is routed to, unless there is none or its ttl has passed. */
  private ownerOf(taskId: string): SharedPort | undefined {
    const owner = this.owners.get(taskId);
    if (owner === undefined) return undefined;
    if (owner.expires > this.now()) return owner.port;
    this.forgotten(taskId);
    return undefined;
  }

  /** The task owner's port if messages may go to it: not one that has closed (a tombstone's). */
  private routedTo(owner: SharedPort): SharedPort | undefined {
    return this.host?.isOpen(owner) === true ? owner : undefined;
  }

  /** The server spoke of the task: it holds it for its ttl from now at least. */
  private seen(taskId: string, task?: JsonObject): void {
    const owner = this.owners.get(taskId);
    if (owner === undefined || owner.expires <= this.now()) return;
    const ttl = task === undefined ? undefined : ttlOf(task);
    if (ttl !== undefined) owner.ttl = ttl;
    owner.expires = this.expiry(owner.ttl);
  }

  private expiry(ttl: number | null): number {
    return ttl === null ? Infinity : this.now() + ttl;
  }

  /** A task that ended has no more progress to route. */
  private ended(taskId: string): void {
    const token = this.progress.get(taskId);
    if (token === undefined) return;
    this.progress.delete(taskId);
    this.host?.progressEnded(token);
  }

  private forgotten(taskId: string): void {
    this.owners.delete(taskId);
    this.ended(taskId);
  }
}

/** A Task's ttl: ms, null for unlimited; undefined when it gives none that can be read. */
const ttlOf = (task: JsonObject): number | null | undefined => {
  const ttl = task.ttl;
  if (ttl === null) return null;
  return typeof ttl === 'number' && Number.isFinite(ttl) && ttl >= 0 ? ttl : undefined;
};

const endsTask = (status: unknown): boolean =>
  typeof status === 'string' &&
  Object.hasOwn(ALLOWED_TRANSITIONS, status) &&
  isTerminal(status as TaskStatus);

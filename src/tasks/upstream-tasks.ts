/**
 * Tasks the upstream runs itself, passed through to the client. The upstream holds them, so when it goes
 * away they would vanish mid-work; taskgate keeps the last word it saw on each live one, and then turns
 * them into `failed` with the reason, answered here until their ttl runs out (docs/design.md: nothing lost).
 */
import { isObject, type JsonObject } from '../protocol/messages.js';
import { canTransition, isTerminal, type TaskStatus } from './state.js';

/** Live upstream tasks followed at most (past that, new ones are not), and failed ones kept (oldest go). */
const MAX_TRACKED = 10_000;
const STATUSES = new Set<string>(['working', 'input_required', 'completed', 'failed', 'cancelled']);

interface LostTask {
  task: JsonObject;
  /** Epoch ms after which it is forgotten (its ttl from creation); undefined: kept while there is room. */
  expiresAt: number | undefined;
}

export class UpstreamTaskWatch {
  private readonly live = new Map<string, JsonObject>();
  private readonly lost = new Map<string, LostTask>();

  /** A task as the upstream described it (a CreateTaskResult's task, a tasks/get answer, a status notification). */
  saw(task: unknown): void {
    if (!isObject(task) || typeof task.taskId !== 'string' || !isStatus(task.status)) return;
    // A restarted upstream that counts its task ids from the start again: the new task is the one meant.
    this.lost.delete(task.taskId);
    if (isTerminal(task.status)) {
      this.live.delete(task.taskId);
    } else if (this.live.has(task.taskId) || this.roomForOneMore()) {
      this.live.set(task.taskId, task);
    }
  }

  /** Whether another live task can be followed, once those whose ttl has ended are let go. */
  private roomForOneMore(now = Date.now()): boolean {
    if (this.live.size < MAX_TRACKED) return true;
    for (const [taskId, task] of this.live) {
      if ((expiryOf(task) ?? Infinity) <= now) this.live.delete(taskId);
    }
    return this.live.size < MAX_TRACKED;
  }

  /**
   * The task is not live any more (the client has its outcome, or taskgate follows it itself). Returns
   * it as last seen live, if it was.
   */
  ended(taskId: unknown): JsonObject | undefined {
    if (typeof taskId !== 'string') return undefined;
    const task = this.live.get(taskId);
    this.live.delete(taskId);
    return task;
  }

  /** The upstream went away: its live tasks fail with `statusMessage`. Returns them as they now are. */
  lose(statusMessage: string, now = Date.now()): JsonObject[] {
    const failed: JsonObject[] = [];
    for (const task of this.live.values()) {
      if (!isStatus(task.status) || !canTransition(task.status, 'failed')) continue;
      if ((expiryOf(task) ?? Infinity) <= now) continue;
      const lost = { ...task, status: 'failed', statusMessage, lastUpdatedAt: new Date(now).toISOString() };
      failed.push(lost);
      this.remember(lost, now);
    }
    this.live.clear();
    return failed;
  }

  /** A task the gone upstream left failed, while its ttl lasts. */
  lostTask(taskId: unknown, now = Date.now()): JsonObject | undefined {
    if (typeof taskId !== 'string') return undefined;
    const lost = this.lost.get(taskId);
    if (lost?.expiresAt !== undefined && lost.expiresAt <= now) {
      this.lost.delete(taskId);
      return undefined;
    }
    return lost?.task;
  }

  private remember(task: JsonObject, now: number): void {
    const expiresAt = expiryOf(task);
    if (expiresAt !== undefined && expiresAt <= now) return;
    this.lost.set(task.taskId as string, { task, expiresAt });
    // Map order is insertion order: past the bound, the oldest losses go first.
    while (this.lost.size > MAX_TRACKED) this.lost.delete(this.lost.keys().next().value!);
  }
}

/** Epoch ms when the task's ttl, counted from its creation, ends; undefined when it has none. */
function expiryOf(task: JsonObject): number | undefined {
  const created = typeof task.createdAt === 'string' ? Date.parse(task.createdAt) : NaN;
  return typeof task.ttl === 'number' && Number.isFinite(created) ? created + task.ttl : undefined;
}

const isStatus = (value: unknown): value is TaskStatus => typeof value === 'string' && STATUSES.has(value);

/**
 * The Redis store's input board (store.ts `TaskInputBoard`): what an extension task waits for is a key
 * `<prefix>input:<taskId>` (JSON, expiring with the task), and the client's answers go out on the
 * `<prefix>inputs` channel to every replica, where the one holding the task acts on them. A relayed
 * request goes to its runner's own channel with the relaying replica's name; the runner says at once that
 * it took it (a replica that is not there is given up on within seconds, not the whole wait), and the
 * answer comes back on the relaying one's channel, with no response when no handler holds the task.
 */
import { isObject } from '../protocol/messages.js';
import { relayChannelOf, type RedisLink } from './redis-link.js';
import type {
  IndexedPage,
  IndexPlace,
  PostedTask,
  RelayedAnswer,
  RelayedRequest,
  RelayHandler,
  TaskInputBoard,
} from './store.js';

type AnswerListener = (taskId: string, inputResponses: Record<string, unknown>) => void;

/** Relayed requests awaiting their answer at most; beyond it a relay gives up at once. */
const MAX_RELAYS_IN_FLIGHT = 10_000;

/** How long a relay waits to hear the runner took its request, so a runner that is gone costs seconds. */
export const RELAY_TAKEN_WITHIN_MS = 3_000;

interface PendingRelay {
  resolve(answer: RelayedAnswer | undefined): void;
  timer: NodeJS.Timeout;
  /** The whole wait, once the runner said it took the request. */
  timeoutMs: number;
}

export class RedisInputBoard implements TaskInputBoard {
  private readonly listeners = new Set<AnswerListener>();
  private readonly announced = new Set<(taskId: string) => void>();
  private readonly handlers = new Set<RelayHandler>();
  private readonly relays = new Map<number, PendingRelay>();
  private nextRelay = 1;

  constructor(
    private readonly link: RedisLink,
    private readonly prefix: string,
    readonly self: string,
    private readonly takenWithinMs = RELAY_TAKEN_WITHIN_MS,
  ) {}

  async post(taskId: string, posted: PostedTask, ttlMs: number): Promise<void> {
    const ttl = String(Math.max(1, Math.ceil(ttlMs)));
    const stamped = JSON.stringify({ ...posted, runner: this.self });
    await this.link.redis(() => this.link.cmd.set(this.key(taskId), stamped, 'PX', ttl));
  }

  async read(taskId: string): Promise<PostedTask | undefined> {
    const stored = await this.link.redis(() => this.link.cmd.get(this.key(taskId)));
    return stored === null ? undefined : asPosted(parse(stored));
  }

  async answer(taskId: string, inputResponses: Record<string, unknown>): Promise<void> {
    const message = JSON.stringify({ taskId, inputResponses });
    await this.link.redis(() => this.link.cmd.publish(this.link.inputChannel, message));
  }

  onAnswer(listener: AnswerListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async announce(taskId: string): Promise<void> {
    const message = JSON.stringify({ taskId, changed: true });
    await this.link.redis(() => this.link.cmd.publish(this.link.inputChannel, message));
  }

  onAnnounced(listener: (taskId: string) => void): () => void {
    this.announced.add(listener);
    return () => this.announced.delete(listener);
  }

  async relay(
    runner: string,
    relayed: RelayedRequest,
    timeoutMs: number,
  ): Promise<RelayedAnswer | undefined> {
    if (this.relays.size >= MAX_RELAYS_IN_FLIGHT) return undefined;
    const id = this.nextRelay++;
    const answered = new Promise<RelayedAnswer | undefined>((resolve) => {
      const timer = setTimeout(() => this.settle(id, undefined), Math.min(this.takenWithinMs, timeoutMs));
      this.relays.set(id, { resolve, timer, timeoutMs });
    });
    const message = JSON.stringify({ ...relayed, kind: 'request', id, from: this.self });
    try {
      await this.link.redis(() => this.link.cmd.publish(relayChannelOf(this.prefix, runner), message));
    } catch (error) {
      this.settle(id, undefined);
      throw error;
    }
    return answered;
  }

  onRelayed(handler: RelayHandler): () => void {
    this.handlers.add(handler);
    return () => this.handlers.delete(handler);
  }

  async index(principal: string, taskId: string, ttlMs: number): Promise<void> {
    const key = this.indexKey(principal);
    const until = Date.now() + ttlMs;
    const last = await this.link.redis(() =>
      this.link.cmd
        .multi()
        .zadd(key, String(until), taskId)
        .zremrangebyscore(key, '-inf', String(Date.now()))
        .zrange(key, '-1', '-1', 'WITHSCORES')
        .exec(),
    );
    // The set lives as long as its longest-lived task; expired ones go as others are indexed.
    const [, scores] = last?.[2] ?? [];
    const longest = Array.isArray(scores) ? Number(scores[1]) : until;
    await this.link.redis(() => this.link.cmd.pexpireat(key, Math.max(until, longest || until)));
  }

  async indexed(principal: string, limit: number, from?: IndexPlace): Promise<IndexedPage> {
    const key = this.indexKey(principal);
    // The place kept by expiry and a count, not an offset: tasks expiring before it do not shift it.
    const now = Date.now();
    const { until, skip } = from !== undefined && from.until >= now ? from : { until: now, skip: 0 };
    const got = await this.link.redis(() =>
      this.link.cmd.zrangebyscore(key, String(until), '+inf', 'WITHSCORES', 'LIMIT', skip, limit + 1),
    );
    const taskIds: string[] = [];
    const scores: number[] = [];
    for (let at = 0; at + 1 < got.length && taskIds.length < limit; at += 2) {
      taskIds.push(got[at]!);
      scores.push(Number(got[at + 1]));
    }
    if (got.length <= 2 * limit) return { taskIds };
    const last = scores.at(-1)!;
    const atLast = scores.filter((score) => score === last).length + (last === until ? skip : 0);
    return { taskIds, next: { until: last, skip: atLast } };
  }

  /** A message on this replica's own channel: a request relayed to it, or the answer to one it relayed. */
  relayed(message: string): void {
    const got = parse(message);
    if (!isObject(got) || typeof got.id !== 'number') return;
    if (got.kind === 'reply') {
      const answer = isObject(got.response)
        ? { response: got.response, refused: got.refused === true }
        : undefined;
      return this.settle(got.id, answer);
    }
    if (got.kind === 'taken') return this.taken(got.id);
    const request = got.request;
    if (got.kind !== 'request' || typeof got.from !== 'string' || !isObject(request)) return;
    const to = relayChannelOf(this.prefix, got.from);
    const taken = JSON.stringify({ kind: 'taken', id: got.id });
    this.link.redis(() => this.link.cmd.publish(to, taken)).catch(() => undefined);
    const relayed: RelayedRequest = {
      request: request as RelayedRequest['request'],
      ...(typeof got.principal === 'string' ? { principal: got.principal } : {}),
      ...(typeof got.subject === 'string' ? { subject: got.subject } : {}),
      ...(typeof got.caller === 'string' ? { caller: got.caller } : {}),
      ...(got.allTasks === true ? { allTasks: true as const } : {}),
      from: got.from,
      ...(typeof got.inputTo === 'string' ? { inputTo: got.inputTo } : {}),
      ...(typeof got.inputFor === 'string' ? { inputFor: got.inputFor } : {}),
    };
    void this.serve(relayed)
      .then((answer) => {
        const reply = JSON.stringify({ kind: 'reply', id: got.id, ...answer });
        return this.link.redis(() => this.link.cmd.publish(to, reply));
      })
      .catch(() => undefined);
  }

  /** Closing: every relay still waiting gives up. */
  stop(): void {
    for (const id of [...this.relays.keys()]) this.settle(id, undefined);
  }

  private async serve(relayed: RelayedRequest): Promise<RelayedAnswer | undefined> {
    for (const handler of this.handlers) {
      try {
        const answer = await handler(relayed);
        if (answer !== undefined) return answer;
      } catch (error) {
        process.emitWarning(error as Error);
      }
    }
    return undefined;
  }

  /** The runner is there and took the request: the wait runs to its whole time. */
  private taken(id: number): void {
    const pending = this.relays.get(id);
    if (pending === undefined) return;
    clearTimeout(pending.timer);
    pending.timer = setTimeout(() => this.settle(id, undefined), pending.timeoutMs);
  }

  private settle(id: number, answer: RelayedAnswer | undefined): void {
    const pending = this.relays.get(id);
    if (pending === undefined) return;
    this.relays.delete(id);
    clearTimeout(pending.timer);
    pending.resolve(answer);
  }

  /** A message on the inputs channel (a replica sharing the prefix published it): answers, or a change. */
  heard(message: string): void {
    const heard = parse(message);
    if (!isObject(heard) || typeof heard.taskId !== 'string') return;
    const { taskId, inputResponses } = heard;
    const told =
      heard.changed === true
        ? [...this.announced].map((listener) => () => listener(taskId))
        : isObject(inputResponses)
          ? [...this.listeners].map((listener) => () => listener(taskId, inputResponses))
          : [];
    for (const tell of told) {
      try {
        tell();
      } catch (error) {
        process.emitWarning(error as Error);
      }
    }
  }

  private key(taskId: string): string {
    return `${this.prefix}input:${taskId}`;
  }

  /** The sorted set of a principal's indexed tasks, scored by when each expires. */
  private indexKey(principal: string): string {
    return `${this.prefix}indexed:${principal}`;
  }
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function asPosted(value: unknown): PostedTask | undefined {
  if (!isObject(value) || !isObject(value.inputRequests)) return undefined;
  const { principal, runner } = value;
  return {
    ...(typeof runner === 'string' ? { runner } : {}),
    ...(typeof principal === 'string' ? { principal } : {}),
    inputRequests: value.inputRequests,
  };
}

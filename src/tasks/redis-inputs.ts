/**
 * The Redis store's input board (store.ts `TaskInputBoard`): what an extension task waits for is a key
 * `<prefix>input:<taskId>` (JSON, expiring with the task), and the client's answers go out on the
 * `<prefix>inputs` channel to every replica, where the one holding the task acts on them.
 */
import type { RedisLink } from './redis-link.js';
import type { PostedTask, TaskInputBoard } from './store.js';

type AnswerListener = (taskId: string, inputResponses: Record<string, unknown>) => void;

export class RedisInputBoard implements TaskInputBoard {
  private readonly listeners = new Set<AnswerListener>();

  constructor(
    private readonly link: RedisLink,
    private readonly prefix: string,
  ) {}

  async post(taskId: string, posted: PostedTask, ttlMs: number): Promise<void> {
    const ttl = String(Math.max(1, Math.ceil(ttlMs)));
    await this.link.redis(() => this.link.cmd.set(this.key(taskId), JSON.stringify(posted), 'PX', ttl));
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

  /** A message on the inputs channel (a replica sharing the prefix published it). */
  heard(message: string): void {
    const answer = parse(message);
    if (!isRecord(answer) || typeof answer.taskId !== 'string' || !isRecord(answer.inputResponses)) return;
    for (const listener of this.listeners) {
      try {
        listener(answer.taskId, answer.inputResponses);
      } catch (error) {
        process.emitWarning(error as Error);
      }
    }
  }

  private key(taskId: string): string {
    return `${this.prefix}input:${taskId}`;
  }
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function asPosted(value: unknown): PostedTask | undefined {
  if (!isRecord(value) || !isRecord(value.inputRequests)) return undefined;
  const principal = typeof value.principal === 'string' ? value.principal : undefined;
  return { ...(principal === undefined ? {} : { principal }), inputRequests: value.inputRequests };
}

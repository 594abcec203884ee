/**
 * A span for each task an upstream server runs (`mcp.task.runner=server`), seen on taskgate's channel to
 * it: from the answer that created it (a 2025 CreateTaskResult, a 2026-07-28 `resultType: task`), a child
 * of taskgate's CLIENT span of that call, to the first terminal status the server gives (a
 * `notifications/tasks/status`, or its answer to a `tasks/get`), each status an event. Until the client
 * is answered with the task it is `unwrap` (taskgate follows it for a client that asked for no task); once
 * the client gets it, `pass-through` when the client and the server are of one era, else `translated`.
 *
 * A short task can end before the client is answered with it (that answer takes the hops of a translation;
 * the server's status notification does not): its span then waits up to UNSHOWN_GRACE_MS for that answer,
 * and ends at the time its end was heard, as the answer says, or as `unwrap` when none came.
 */
import { SpanKind, SpanStatusCode, type Context, type Span, type Tracer } from '@opentelemetry/api';
import { MODERN_VERSIONS } from '../protocol/modern/meta.js';
import { isTerminal, type TaskStatus } from '../tasks/state.js';
import {
  TASK_ID,
  TASK_MODE,
  TASK_RUNNER,
  TASK_STATUS,
  TASK_STATUS_MESSAGE,
  TASK_TOOL,
  type TaskState,
} from './attributes.js';

/** Server tasks whose span is open; past it the oldest is ended untold. */
const MAX_OPEN = 10_000;
/**
 * How long a task that ended before its client was answered with it waits for that answer: past it, taskgate
 * unwrapped it (or its client went away), and its span ends as it is.
 */
export const UNSHOWN_GRACE_MS = 5_000;

interface Followed {
  span: Span;
  status: string;
  /** The upstream's protocol version: with the client's, whether the task is passed through or translated. */
  serverVersion: string | undefined;
  /** The client was answered with the task: its mode is known. */
  shown: boolean;
  /** Its terminal state, when it was heard (performance.now(), which the SDK puts on the span's clock), and the wait for the client's answer. */
  ended?: { state: TaskState; at: number; grace: NodeJS.Timeout };
}

const eraOf = (version: string | undefined): string =>
  version !== undefined && MODERN_VERSIONS.includes(version) ? 'modern' : 'legacy';

export class ServerTaskSpans {
  private readonly open = new Map<string, Followed>();

  constructor(
    private readonly tracer: Tracer,
    /** Tells the task spans of this process the new span, for the links of later tasks/* about it. */
    private readonly remember: (taskId: string, span: Span) => void,
  ) {}

  /** The server answered `tool`'s call, sent in `parent`, with a task. */
  created(
    state: TaskState,
    tool: string | undefined,
    parent: Context,
    serverVersion: string | undefined,
  ): void {
    if (this.open.has(state.taskId)) return this.changed(state);
    const span = this.tracer.startSpan(
      tool === undefined ? 'task' : `task ${tool}`,
      {
        kind: SpanKind.INTERNAL,
        attributes: {
          [TASK_ID]: state.taskId,
          [TASK_STATUS]: state.status,
          [TASK_RUNNER]: 'server',
          [TASK_MODE]: 'unwrap',
          ...(tool === undefined ? {} : { [TASK_TOOL]: tool }),
        },
      },
      parent,
    );
    span.addEvent('mcp.task.status', eventOf(state));
    this.remember(state.taskId, span);
    const followed: Followed = { span, status: state.status, serverVersion, shown: false };
    this.open.set(state.taskId, followed);
    if (isTerminal(state.status as TaskStatus)) this.heardEnd(state.taskId, followed, state);
    if (this.open.size <= MAX_OPEN) return;
    const [oldest, left] = this.open.entries().next().value as [string, Followed];
    this.open.delete(oldest);
    this.end(left);
  }

  /** A status the server gave of a task (a notification, an answer to tasks/get). */
  changed(state: TaskState): void {
    const followed = this.open.get(state.taskId);
    if (followed === undefined || followed.status === state.status) return;
    followed.status = state.status;
    followed.span.addEvent('mcp.task.status', eventOf(state));
    followed.span.setAttribute(TASK_STATUS, state.status);
    if (isTerminal(state.status as TaskStatus)) this.heardEnd(state.taskId, followed, state);
  }

  /** The client was answered with the task, in its era: passed through, or translated to it. */
  shown(taskId: string, clientVersion: string | undefined): void {
    const followed = this.open.get(taskId);
    if (followed === undefined) return;
    const same = eraOf(clientVersion) === eraOf(followed.serverVersion);
    followed.span.setAttribute(TASK_MODE, same ? 'pass-through' : 'translated');
    followed.shown = true;
    if (followed.ended !== undefined) this.close(taskId);
  }

  endAll(): void {
    for (const followed of this.open.values()) this.end(followed);
    this.open.clear();
  }

  private heardEnd(taskId: string, followed: Followed, state: TaskState): void {
    if (followed.shown) {
      this.open.delete(taskId);
      return this.finish(followed.span, state);
    }
    const grace = setTimeout(() => this.close(taskId), UNSHOWN_GRACE_MS).unref();
    followed.ended = { state, at: performance.now(), grace };
  }

  private close(taskId: string): void {
    const followed = this.open.get(taskId);
    if (followed === undefined) return;
    this.open.delete(taskId);
    this.end(followed);
  }

  private end({ span, ended }: Followed): void {
    if (ended === undefined) return span.end();
    clearTimeout(ended.grace);
    this.finish(span, ended.state, ended.at);
  }

  private finish(span: Span, state: TaskState, at?: number): void {
    if (state.status === 'failed') {
      span.setAttribute('error.type', 'task_failed');
      span.setStatus({
        code: SpanStatusCode.ERROR,
        ...(state.statusMessage === undefined ? {} : { message: state.statusMessage }),
      });
    }
    span.end(at);
  }
}

function eventOf(state: TaskState): Record<string, string> {
  return {
    [TASK_STATUS]: state.status,
    ...(state.statusMessage === undefined ? {} : { [TASK_STATUS_MESSAGE]: state.statusMessage }),
  };
}

/**
 * A span for each task's whole life, from its creation to its terminal status, a child of the request
 * that made it; each status change is an event on it, with its statusMessage. The spans of later
 * requests about a task (tasks/get, tasks/result, tasks/cancel, tasks/update) link to it.
 *
 * With replicas sharing a Redis store, the span belongs to the replica that created the task: a span is
 * exported whole, once, by the process that started it, so no other process can add to it or end it.
 * Its traceparent travels in the task record instead; another replica's tasks/* spans link to it when
 * they read the record, and the creating replica, which the store tells of the end of a task it runs
 * whoever made it (a tasks/cancel served elsewhere), ends it. A creator that dies takes its open span with
 * it; the task then fails as executor lost, which the other replicas' spans show.
 */
import {
  SpanKind,
  SpanStatusCode,
  context,
  createContextKey,
  isSpanContextValid,
  trace,
  type Span,
  type SpanContext,
  type Context,
  type Tracer,
} from '@opentelemetry/api';
import { LRUCache } from 'lru-cache';
import { isObject, type JsonObject } from '../protocol/messages.js';
import { isTerminal, type TaskRecord } from '../tasks/state.js';
import { EXECUTOR_LOST, type NewTask } from '../tasks/store.js';
import {
  SERVER,
  TASK_ID,
  TASK_MODE,
  TASK_POLL_INTERVAL,
  TASK_RUNNER,
  TASK_SESSION,
  TASK_STATUS,
  TASK_STATUS_MESSAGE,
  TASK_TOOL,
  TASK_TTL,
} from './attributes.js';
import { ServerTaskSpans } from './server-task-spans.js';

/** Tasks whose span is still open, and finished ones still linked to: as many as a store holds. */
const MAX_TASKS = 10_000;

/** The protocol version of the request being served, in its context: a task it creates is of that era. */
const SERVED_VERSION = createContextKey('mcp-taskgate served protocol version');

/** `into` with the version of the request served in it, if known. */
export function withServedVersion(into: Context, version: string | undefined): Context {
  return version === undefined ? into : into.setValue(SERVED_VERSION, version);
}

export class TaskSpans {
  private readonly open = new Map<string, Span>();
  private readonly known = new LRUCache<string, SpanContext>({ max: MAX_TASKS });
  /** tasks/* spans begun with no link (the task began on another replica): the task they are about. */
  private readonly awaiting = new WeakMap<Span, string>();
  /** The tasks upstream servers run, which taskgate only follows. */
  readonly server: ServerTaskSpans;

  constructor(private readonly tracer: Tracer) {
    this.server = new ServerTaskSpans(tracer, (taskId, span) => this.known.set(taskId, span.spanContext()));
  }

  /**
   * The span opens before the task exists, so that its context is written with the record in the same
   * step (another replica may read the task the moment it is created).
   */
  async create(task: NewTask, create: (task: NewTask) => Promise<TaskRecord>): Promise<TaskRecord> {
    const creating = context.active();
    const version = creating.getValue(SERVED_VERSION);
    const span = this.tracer.startSpan(
      `task ${task.toolName}`,
      {
        kind: SpanKind.INTERNAL,
        attributes: {
          [TASK_TTL]: task.ttl,
          [TASK_POLL_INTERVAL]: task.pollInterval,
          [TASK_TOOL]: task.toolName,
          [TASK_SESSION]: task.sessionId,
          // A task in the store is one taskgate runs itself: its augment, whatever the creator's era.
          [TASK_RUNNER]: 'taskgate',
          [TASK_MODE]: 'augment',
          ...(task.server === undefined ? {} : { [SERVER]: task.server }),
          ...(typeof version === 'string' ? { 'mcp.protocol.version': version } : {}),
        },
      },
      creating,
    );
    let record: TaskRecord;
    try {
      record = await create(span.isRecording() ? { ...task, traceparent: traceparentOf(span) } : task);
    } catch (error) {
      span.setAttribute('error.type', error instanceof Error ? error.name : '_OTHER');
      span.setStatus({ code: SpanStatusCode.ERROR, message: `no task was created: ${String(error)}` });
      span.end();
      throw error;
    }
    span.setAttributes({ [TASK_ID]: record.taskId, [TASK_STATUS]: record.status });
    span.addEvent('mcp.task.status', statusOf(record));
    this.known.set(record.taskId, span.spanContext());
    if (isTerminal(record.status)) {
      this.finish(span, record);
      return record;
    }
    this.open.set(record.taskId, span);
    if (this.open.size > MAX_TASKS) {
      const [oldest, left] = this.open.entries().next().value as [string, Span];
      this.open.delete(oldest);
      left.end();
    }
    return record;
  }

  changed(record: TaskRecord): void {
    const span = this.open.get(record.taskId);
    if (span === undefined) return;
    span.addEvent('mcp.task.status', statusOf(record));
    span.setAttribute(TASK_STATUS, record.status);
    if (!isTerminal(record.status)) return;
    this.open.delete(record.taskId);
    this.finish(span, record);
  }

  /** The task span a tasks/* request is about, when this process knows it. */
  linkOf(method: string, params: JsonObject | undefined): SpanContext | undefined {
    if (!method.startsWith('tasks/') || !isObject(params) || typeof params.taskId !== 'string')
      return undefined;
    return this.known.get(params.taskId);
  }

  /** Marks a tasks/* span that began with no link: the task's record, once read, gives it one. */
  awaitRecord(span: Span, method: string, params: JsonObject | undefined): void {
    if (method.startsWith('tasks/') && isObject(params) && typeof params.taskId === 'string') {
      this.awaiting.set(span, params.taskId);
    }
  }

  /**
   * A task read while a request is served: the request's span, if it waits for this task, links to the
   * task's span from the record (a task begun on another replica, whose span that replica owns).
   */
  seen(record: TaskRecord): void {
    if (record.traceparent === undefined) return;
    const span = trace.getActiveSpan();
    if (span === undefined || this.awaiting.get(span) !== record.taskId) return;
    this.awaiting.delete(span);
    const task = spanContextOf(record.traceparent);
    if (task === undefined) return;
    span.addLink({ context: task });
    this.known.set(record.taskId, task);
  }

  /** An extension task's call (promoteAfter) was not over in time: its client is answered with the task. */
  promoted(taskId: string): void {
    this.open.get(taskId)?.addEvent('mcp.task.promoted');
  }

  /** The process stops with these tasks live: whatever runs them here stops with it. */
  endAll(): void {
    this.server.endAll();
    for (const span of this.open.values()) {
      span.addEvent('mcp.task.executor_lost');
      span.setAttribute('error.type', 'executor_lost');
      span.setStatus({ code: SpanStatusCode.ERROR, message: EXECUTOR_LOST });
      span.end();
    }
    this.open.clear();
  }

  private finish(span: Span, record: TaskRecord): void {
    if (record.status === 'failed' && record.statusMessage === EXECUTOR_LOST) {
      span.setAttribute('error.type', 'executor_lost');
      span.setStatus({ code: SpanStatusCode.ERROR, message: EXECUTOR_LOST });
    } else if (record.status === 'failed') {
      span.setAttribute('error.type', 'task_failed');
      span.setStatus({ code: SpanStatusCode.ERROR, ...messageOf(record) });
    } else if (record.outcome !== undefined && 'error' in record.outcome) {
      span.setAttribute('error.type', String(record.outcome.error.code));
      span.setStatus({ code: SpanStatusCode.ERROR, message: record.outcome.error.message });
    } else if (record.outcome?.result.isError === true) {
      span.setAttribute('error.type', 'tool_error');
      span.setStatus({ code: SpanStatusCode.ERROR, message: 'tool_error' });
    }
    span.end();
  }
}

const messageOf = (record: TaskRecord): { message?: string } =>
  record.statusMessage === undefined ? {} : { message: record.statusMessage };

function traceparentOf(span: Span): string {
  const { traceId, spanId, traceFlags } = span.spanContext();
  return `00-${traceId}-${spanId}-${traceFlags.toString(16).padStart(2, '0')}`;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

function spanContextOf(traceparent: string): SpanContext | undefined {
  const parts = TRACEPARENT.exec(traceparent);
  if (parts === null) return undefined;
  const found = {
    traceId: parts[1]!,
    spanId: parts[2]!,
    traceFlags: parseInt(parts[3]!, 16),
    isRemote: true,
  };
  return isSpanContextValid(found) ? found : undefined;
}

function statusOf(record: TaskRecord): Record<string, string> {
  return {
    [TASK_STATUS]: record.status,
    ...(record.statusMessage === undefined ? {} : { [TASK_STATUS_MESSAGE]: record.statusMessage }),
  };
}

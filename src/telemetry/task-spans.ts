/**
 * A span for each task's whole life, from its creation to its terminal status, a child of the request
 * that made it; each status change is an event on it, with its statusMessage. The spans of later
 * requests about a task (tasks/get, tasks/result, tasks/cancel, tasks/update) link to it.
 */
import {
  SpanKind,
  SpanStatusCode,
  context,
  type Span,
  type SpanContext,
  type Tracer,
} from '@opentelemetry/api';
import { LRUCache } from 'lru-cache';
import { isObject, type JsonObject } from '../protocol/messages.js';
import { isTerminal, type TaskRecord } from '../tasks/state.js';
import { TASK_ID, TASK_POLL_INTERVAL, TASK_SESSION, TASK_STATUS, TASK_TOOL, TASK_TTL } from './attributes.js';

/** Tasks whose span is still open, and finished ones still linked to: as many as a store holds. */
const MAX_TASKS = 10_000;

export class TaskSpans {
  private readonly open = new Map<string, Span>();
  private readonly known = new LRUCache<string, SpanContext>({ max: MAX_TASKS });

  constructor(private readonly tracer: Tracer) {}

  created(record: TaskRecord): void {
    const span = this.tracer.startSpan(
      `task ${record.toolName}`,
      {
        kind: SpanKind.INTERNAL,
        attributes: {
          [TASK_ID]: record.taskId,
          [TASK_STATUS]: record.status,
          [TASK_TTL]: record.ttl,
          [TASK_POLL_INTERVAL]: record.pollInterval,
          [TASK_TOOL]: record.toolName,
          [TASK_SESSION]: record.sessionId,
        },
        startTime: record.createdAt,
      },
      context.active(),
    );
    span.addEvent('mcp.task.status', statusOf(record), record.createdAt);
    this.known.set(record.taskId, span.spanContext());
    if (isTerminal(record.status)) return this.finish(span, record);
    this.open.set(record.taskId, span);
    if (this.open.size > MAX_TASKS) {
      const [oldest, left] = this.open.entries().next().value as [string, Span];
      this.open.delete(oldest);
      left.end();
    }
  }

  changed(record: TaskRecord): void {
    const span = this.open.get(record.taskId);
    if (span === undefined) return;
    span.addEvent('mcp.task.status', statusOf(record), record.lastUpdatedAt);
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

  endAll(): void {
    for (const span of this.open.values()) span.end();
    this.open.clear();
  }

  private finish(span: Span, record: TaskRecord): void {
    if (record.status === 'failed') {
      span.setAttribute('error.type', 'task_failed');
      span.setStatus({ code: SpanStatusCode.ERROR, ...messageOf(record) });
    } else if (record.outcome !== undefined && 'error' in record.outcome) {
      span.setAttribute('error.type', String(record.outcome.error.code));
      span.setStatus({ code: SpanStatusCode.ERROR, message: record.outcome.error.message });
    } else if (record.outcome?.result.isError === true) {
      span.setAttribute('error.type', 'tool_error');
      span.setStatus({ code: SpanStatusCode.ERROR, message: 'tool_error' });
    }
    span.end(record.lastUpdatedAt);
  }
}

const messageOf = (record: TaskRecord): { message?: string } =>
  record.statusMessage === undefined ? {} : { message: record.statusMessage };

function statusOf(record: TaskRecord): Record<string, string> {
  return {
    [TASK_STATUS]: record.status,
    ...(record.statusMessage === undefined ? {} : { 'mcp.task.status_message': record.statusMessage }),
  };
}

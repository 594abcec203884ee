/**
 * A task's span (src/telemetry/task-spans.ts) with the real OpenTelemetry SDK, its spans kept in memory:
 * who runs the task and how, the era of the request that created it, promotion as an event, and executor
 * lost, whether the store says it (a Redis store closing releases its live tasks so) or the process stops
 * with the span still open (issue 30).
 */
import { context, trace } from '@opentelemetry/api';
import {
  InMemorySpanExporter,
  NodeTracerProvider,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-node';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { TaskRecord } from '../../src/tasks/state.js';
import { EXECUTOR_LOST, type NewTask } from '../../src/tasks/store.js';
import { UNSHOWN_GRACE_MS } from '../../src/telemetry/server-task-spans.js';
import { TaskSpans, withServedVersion } from '../../src/telemetry/task-spans.js';

const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
// Registered for its context manager: a task span's parent and era are read from the active context.
provider.register();
const tracer = provider.getTracer('test');
afterEach(() => exporter.reset());

const NEW: NewTask = { owner: 'o', sessionId: 's', toolName: 'sleep', ttl: 60_000, pollInterval: 1_000 };

function record(taskId: string, change: Partial<TaskRecord> = {}): TaskRecord {
  return {
    taskId,
    status: 'working',
    createdAt: 0,
    lastUpdatedAt: 0,
    ttl: NEW.ttl,
    pollInterval: NEW.pollInterval,
    owner: NEW.owner,
    sessionId: NEW.sessionId,
    toolName: NEW.toolName,
    outcomeBytes: 0,
    ...change,
  };
}

const ended = (): ReadableSpan[] => exporter.getFinishedSpans();

describe('a task span', () => {
  it('taskgate runs it (augment), of the era of the request served when it was created', async () => {
    const spans = new TaskSpans(tracer);
    const call = tracer.startSpan('tools/call sleep');
    const served = withServedVersion(trace.setSpan(context.active(), call), '2026-07-28');
    await context.with(served, () => spans.create(NEW, async () => record('t1')));
    spans.changed(record('t1', { status: 'completed' }));
    const [span] = ended();
    expect(span!.parentSpanContext?.spanId).toBe(call.spanContext().spanId);
    expect(span!.attributes).toMatchObject({
      'mcp.task.runner': 'taskgate',
      'mcp.task.mode': 'augment',
      'mcp.protocol.version': '2026-07-28',
      'mcp.task.status': 'completed',
    });
  });

  it('promoted: an event on it while it is open', async () => {
    const spans = new TaskSpans(tracer);
    await spans.create(NEW, async () => record('t2'));
    spans.promoted('t2');
    spans.changed(record('t2', { status: 'completed' }));
    expect(ended()[0]!.events.map((event) => event.name)).toEqual([
      'mcp.task.status',
      'mcp.task.promoted',
      'mcp.task.status',
    ]);
  });

  it('failed as executor lost (a store releasing the tasks of a replica that stops): error.type executor_lost', async () => {
    const spans = new TaskSpans(tracer);
    await spans.create(NEW, async () => record('t3'));
    spans.changed(record('t3', { status: 'failed', statusMessage: EXECUTOR_LOST }));
    const [span] = ended();
    expect(span!.attributes['error.type']).toBe('executor_lost');
    expect(span!.status).toEqual({ code: 2, message: EXECUTOR_LOST });
  });

  it('still open when the process stops: ended as executor lost, an event saying so', async () => {
    const spans = new TaskSpans(tracer);
    await spans.create(NEW, async () => record('t4'));
    await spans.create(NEW, async () => record('t5'));
    spans.changed(record('t5', { status: 'completed' }));
    spans.endAll();
    const lost = ended().find((span) => span.attributes['mcp.task.id'] === 't4')!;
    expect(lost.attributes).toMatchObject({ 'error.type': 'executor_lost', 'mcp.task.status': 'working' });
    expect(lost.events.map((event) => event.name)).toContain('mcp.task.executor_lost');
    const done = ended().find((span) => span.attributes['mcp.task.id'] === 't5')!;
    expect(done.attributes).not.toHaveProperty('error.type');
  });
});

describe('a task an upstream server runs (mcp.task.runner=server)', () => {
  const working = (taskId: string) => ({ taskId, status: 'working' });
  const completed = (taskId: string) => ({ taskId, status: 'completed' });
  const modeOf = (taskId: string) =>
    ended().find((span) => span.attributes['mcp.task.id'] === taskId)?.attributes['mcp.task.mode'];

  it('ended before the client is answered with it, takes the mode of that answer and ends when the end was heard', async () => {
    const spans = new TaskSpans(tracer);
    spans.server.created(working('s1'), 'sleep', context.active(), '2025-11-25');
    spans.server.changed(completed('s1'));
    expect(ended()).toEqual([]);
    const heardEnd = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 20));
    spans.server.shown('s1', '2026-07-28');
    const [span] = ended();
    expect(span!.attributes).toMatchObject({ 'mcp.task.mode': 'translated', 'mcp.task.status': 'completed' });
    const endMs = span!.endTime[0] * 1_000 + span!.endTime[1] / 1e6;
    expect(endMs).toBeLessThan(heardEnd + 15);
  });

  it('created already ended: the same, passed through to a client of its era', () => {
    const spans = new TaskSpans(tracer);
    spans.server.created(completed('s2'), 'sleep', context.active(), '2025-11-25');
    expect(ended()).toEqual([]);
    spans.server.shown('s2', undefined);
    expect(modeOf('s2')).toBe('pass-through');
  });

  it('unwrapped (no client is answered with it): ends once the wait for that answer is over, at the time its end was heard', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const spans = new TaskSpans(tracer);
      spans.server.created(working('s3'), 'sleep', context.active(), '2025-11-25');
      const heardEnd = Date.now();
      spans.server.changed(completed('s3'));
      vi.advanceTimersByTime(UNSHOWN_GRACE_MS - 1);
      expect(ended()).toEqual([]);
      vi.advanceTimersByTime(1);
      expect(modeOf('s3')).toBe('unwrap');
      const [span] = ended();
      expect(span!.endTime[0] * 1_000 + span!.endTime[1] / 1e6).toBeLessThan(heardEnd + 15);
      // Answered with it after all: too late to change a span already ended, and nothing fails.
      spans.server.shown('s3', '2026-07-28');
      expect(modeOf('s3')).toBe('unwrap');
    } finally {
      vi.useRealTimers();
    }
  });

  it('shown first, ends at its terminal status; one held at the stop still ends', () => {
    const spans = new TaskSpans(tracer);
    spans.server.created(working('s6'), 'sleep', context.active(), '2025-11-25');
    spans.server.shown('s6', undefined);
    spans.server.changed(completed('s6'));
    expect(modeOf('s6')).toBe('pass-through');
    spans.server.created(working('s7'), 'sleep', context.active(), '2025-11-25');
    spans.server.changed(completed('s7'));
    spans.endAll();
    expect(modeOf('s7')).toBe('unwrap');
  });
});

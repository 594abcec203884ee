/**
 * One channel, traced: each request that arrives on it is a SERVER span (its parent the trace context
 * in its `_meta`, else the one the transport carried, an HTTP `traceparent`), each request sent on it a
 * CLIENT span, child of whatever is being handled, whose context goes out in the request's `_meta`
 * (`traceparent`, `tracestate`, `baggage`: the MCP conventions for 2025, the reserved keys of
 * 2026-07-28). A response ends its request's span. What arrives is handed on inside its span's context,
 * so that what taskgate sends because of it, upstream or to the client, is that span's child.
 *
 * A request an upstream server sends (elicitation, sampling, roots) with no trace context of its own is
 * the child of the request of taskgate's it came during: the one whose HTTP stream carried it, or on
 * stdio, where nothing says, the one request taskgate has in flight there, if there is just one. So the
 * elicitation of a tool call is in the call's trace, and so is taskgate asking the client for it. When
 * the answer to it comes from another request (a 2026-07-28 client's MRTR retry), that request's span
 * links to it.
 *
 * Each request's time also goes to the conventions' operation histograms, and a 2025 session's (the
 * channel's life) to the session ones, when metrics are on.
 */
import {
  ROOT_CONTEXT,
  SpanKind,
  context,
  propagation,
  trace,
  type Context,
  type Link,
  type Tracer,
} from '@opentelemetry/api';
import { hasAlias, serialize } from '../protocol/exact-ids.js';
import {
  classify,
  idKey,
  isObject,
  type JsonObject,
  type Message,
  type RequestId,
} from '../protocol/messages.js';
import { readHanded } from '../protocol/read-message.js';
import { MODERN_VERSIONS } from '../protocol/modern/meta.js';
import type { Arrival, Channel, ChannelHandlers, Route } from '../transport/channel.js';
import { requestAttributes, spanName, statedVersion, taskStateOf, toolArgumentsOf } from './attributes.js';
import { Operation } from './operation.js';
import type { OperationMetrics } from './operation-metrics.js';
import { withServedVersion, type TaskSpans } from './task-spans.js';
import type { ChannelFacts } from './telemetry.js';

/** What a server says of its tasks' status unasked: 2025-11-25's notification, the extension's. */
const TASK_STATUS_NOTIFICATIONS = new Set(['notifications/tasks/status', 'notifications/tasks']);

/** Requests in flight with a span, each way; past it the oldest span is ended untold. */
const MAX_OPEN_SPANS = 10_000;

interface Open {
  operation: Operation;
  method: string;
  /** The tool of a tools/call: the name of the task span if the server answers with a task. */
  tool?: string;
  /** Where the request was sent from: its answer is handled there. */
  origin: Context;
}

/** Which end of taskgate the channel is: a client's (taskgate serves it) or an upstream's. */
export type Side = 'front' | 'upstream';

export class TracedChannel implements Channel {
  private readonly asked = new Map<string | number, Open>();
  private readonly serving = new Map<string | number, Operation>();
  private version: string | undefined;
  private readonly opened = performance.now();
  private sessionEnded = false;

  constructor(
    private readonly inner: Channel,
    private readonly tracer: Tracer,
    private readonly facts: ChannelFacts,
    private readonly tasks: TaskSpans,
    private readonly side: Side,
    private readonly metrics: OperationMetrics | undefined,
    /** telemetry.toolContent: a tools/call's arguments and result on its spans. */
    private readonly toolContent = false,
  ) {}

  get takesCallerCapabilities(): boolean {
    return this.inner.takesCallerCapabilities === true;
  }

  get outlivesClose(): boolean {
    return this.inner.outlivesClose === true;
  }

  get wireVersion(): string | undefined {
    return this.inner.wireVersion;
  }

  /** The version the peer is spoken to in: a translated upstream's own, not its 2025 face's. */
  private get spokenVersion(): string | undefined {
    return this.inner.wireVersion ?? this.version;
  }

  start(handlers: ChannelHandlers): void {
    this.inner.start({
      message: (raw, arrival, parsed) => {
        const into = this.arrived(readHanded(raw, parsed, 'the peer'), arrival);
        context.with(into, () => handlers.message(raw, arrival, parsed));
      },
      malformed: (error, id) => handlers.malformed(error, id),
      closed: (info) => {
        if (info.reopening !== true) {
          this.endAll('connection_closed');
          // An upstream that goes away by itself ends its session in error; a client that leaves does not.
          this.endSession(this.side === 'upstream' ? 'connection_closed' : undefined);
        }
        handlers.closed(info);
      },
      ...(handlers.reopened === undefined ? {} : { reopened: () => handlers.reopened?.() }),
      ...(handlers.streamPaused === undefined
        ? {}
        : { streamPaused: (id, retryMs) => handlers.streamPaused?.(id, retryMs) }),
    });
  }

  pauseStream(requestId: RequestId, retryMs: number | undefined): Promise<void> | undefined {
    return this.inner.pauseStream?.(requestId, retryMs);
  }

  sendRaw(raw: Buffer | string, route?: Route, parsed?: object): void {
    const read = readHanded(typeof raw === 'string' ? Buffer.from(raw) : raw, parsed, 'taskgate');
    const carried = read.ok ? this.leaving(read.message) : undefined;
    if (carried === undefined) return this.inner.sendRaw(raw, route, parsed);
    this.inner.sendRaw(serialize(carried), route, hasAlias(carried) ? undefined : carried);
  }

  send(message: object, route?: Route): void {
    const carried = this.leaving(classified(message));
    this.inner.send(carried ?? message, route);
  }

  close(): Promise<void> {
    this.endAll('connection_closed');
    this.endSession(undefined);
    return this.inner.close();
  }

  /** The context to hand an arriving message on in. */
  private arrived(read: ReturnType<typeof readHanded>, arrival: Arrival | undefined): Context {
    if (!read.ok) return ROOT_CONTEXT;
    const message = read.message;
    if (message.kind === 'response') {
      const id = message.msg.id;
      const open = id === null ? undefined : this.take(this.asked, id);
      if (open === undefined) return ROOT_CONTEXT;
      this.learnVersion(message.msg as unknown as JsonObject);
      open.operation.answered(message.msg as unknown as JsonObject);
      if (this.side === 'upstream') this.serverTaskAnswered(open, message.msg as unknown as JsonObject);
      return open.origin;
    }
    if (
      message.kind === 'notification' &&
      this.side === 'upstream' &&
      TASK_STATUS_NOTIFICATIONS.has(message.msg.method)
    ) {
      const state = isObject(message.msg.params) ? taskStateOf(message.msg.params) : undefined;
      if (state !== undefined) this.tasks.server.changed(state);
    }
    if (message.kind !== 'request') return ROOT_CONTEXT;
    const { method, id, params } = message.msg;
    if (method === 'initialize') this.version = text(params?.protocolVersion) ?? this.version;
    const ambient = context.active();
    const carried = extracted(params);
    const parent = carried ?? this.duringOf(method, arrival) ?? ambient;
    const links: Link[] = [];
    const ambientSpan = trace.getSpanContext(ambient);
    if (carried !== undefined && ambientSpan !== undefined) links.push({ context: ambientSpan });
    const task = this.tasks.linkOf(method, params);
    if (task !== undefined) links.push({ context: task });
    const version = statedVersion(params) ?? this.spokenVersion;
    const attributes = requestAttributes(method, id, params, this.facts, version);
    const content = this.toolContent && method === 'tools/call';
    const span = this.tracer.startSpan(
      spanName(method, params),
      {
        kind: SpanKind.SERVER,
        attributes: content ? { ...attributes, ...toolArgumentsOf(method, params) } : attributes,
        links,
      },
      parent,
    );
    if (task === undefined) this.tasks.awaitRecord(span, method, params);
    this.hold(this.serving, id, new Operation(span, 'server', attributes, this.metrics, content));
    return withServedVersion(trace.setSpan(parent, span), version);
  }

  /**
   * The request of taskgate's an upstream's request came during, as the context to be its parent: the
   * one whose stream carried it, else the only one in flight on this channel.
   */
  private duringOf(method: string, arrival: Arrival | undefined): Context | undefined {
    if (this.side !== 'upstream' || method === 'ping') return undefined;
    let during: Open | undefined;
    if (arrival?.onStreamOf !== undefined) during = this.asked.get(idKey(arrival.onStreamOf));
    else {
      for (const open of this.asked.values()) {
        if (open.method === 'ping') continue;
        if (during !== undefined) return undefined;
        during = open;
      }
    }
    return during === undefined ? undefined : trace.setSpan(during.origin, during.operation.span);
  }

  /** A message going out: ends the span it answers, or opens one for the request it is (and carries it). */
  private leaving(message: Message | undefined): object | undefined {
    if (message === undefined) return undefined;
    if (message.kind === 'response') {
      const id = message.msg.id;
      const served = id === null ? undefined : this.take(this.serving, id);
      this.learnVersion(message.msg as unknown as JsonObject);
      if (served === undefined) return undefined;
      // Answered from within another request (an MRTR retry bringing the client's input): that one links here.
      const answering = trace.getActiveSpan();
      const own = served.span.spanContext();
      if (answering !== undefined && answering.spanContext().spanId !== own.spanId && answering.isRecording())
        answering.addLink({ context: own });
      served.answered(message.msg as unknown as JsonObject);
      if (this.side === 'front') this.serverTaskShown(served, message.msg as unknown as JsonObject);
      return undefined;
    }
    if (message.kind !== 'request') return undefined;
    const { method, id, params } = message.msg;
    if (method === 'initialize') this.version = text(params?.protocolVersion) ?? this.version;
    const origin = context.active();
    const attributes = requestAttributes(
      method,
      id,
      params,
      this.facts,
      statedVersion(params) ?? this.spokenVersion,
    );
    const content = this.toolContent && method === 'tools/call';
    const span = this.tracer.startSpan(
      spanName(method, params),
      {
        kind: SpanKind.CLIENT,
        attributes: content ? { ...attributes, ...toolArgumentsOf(method, params) } : attributes,
      },
      origin,
    );
    const tool = method === 'tools/call' ? text(params?.name) : undefined;
    this.hold(this.asked, id, {
      operation: new Operation(span, 'client', attributes, this.metrics, content),
      method,
      origin,
      ...(tool === undefined ? {} : { tool }),
    });
    const carrier: Record<string, string> = {};
    propagation.inject(trace.setSpan(origin, span), carrier);
    const meta = isObject(params?._meta) ? params._meta : {};
    return { ...message.msg, params: { ...params, _meta: { ...meta, ...carrier } } };
  }

  /** The server's answer to taskgate's request states a task: one it created (tools/call), or its status. */
  private serverTaskAnswered(open: Open, response: JsonObject): void {
    const state = isObject(response.result) ? taskStateOf(response.result) : undefined;
    if (state === undefined) return;
    if (open.method !== 'tools/call') return this.tasks.server.changed(state);
    const parent = trace.setSpan(open.origin, open.operation.span);
    const version = open.operation.attributes['mcp.protocol.version'];
    this.tasks.server.created(state, open.tool, parent, typeof version === 'string' ? version : undefined);
  }

  /** The client is answered with a task: if it is a server's, it is passed through or translated. */
  private serverTaskShown(served: Operation, response: JsonObject): void {
    const state = isObject(response.result) ? taskStateOf(response.result) : undefined;
    const version = served.attributes['mcp.protocol.version'];
    if (state !== undefined)
      this.tasks.server.shown(state.taskId, typeof version === 'string' ? version : undefined);
  }

  private learnVersion(response: JsonObject): void {
    const result = isObject(response.result) ? response.result : undefined;
    const version = text(result?.protocolVersion);
    if (version !== undefined && isObject(result?.capabilities)) this.version = version;
  }

  private hold<T extends Operation | Open>(table: Map<string | number, T>, id: RequestId, value: T): void {
    const key = idKey(id);
    const earlier = table.get(key);
    if (earlier !== undefined) operationOf(earlier).dropped();
    table.set(key, value);
    if (table.size <= MAX_OPEN_SPANS) return;
    const [oldest, open] = table.entries().next().value as [string | number, T];
    table.delete(oldest);
    operationOf(open).dropped();
  }

  private take<T>(table: Map<string | number, T>, id: RequestId): T | undefined {
    const key = idKey(id);
    const value = table.get(key);
    if (value !== undefined) table.delete(key);
    return value;
  }

  private endAll(why: string): void {
    const operations = [...this.serving.values(), ...[...this.asked.values()].map((open) => open.operation)];
    this.serving.clear();
    this.asked.clear();
    for (const operation of operations) operation.failed(why, why);
  }

  /** The channel's life as a 2025 session's (2026-07-28 has no sessions), once. */
  private endSession(errorType: string | undefined): void {
    if (this.sessionEnded || this.metrics === undefined) return;
    this.sessionEnded = true;
    const version = this.spokenVersion;
    if (version === undefined || MODERN_VERSIONS.includes(version)) return;
    const attributes = requestAttributes('initialize', 0, undefined, this.facts, version);
    this.metrics.session(
      this.side === 'front' ? 'server' : 'client',
      (performance.now() - this.opened) / 1000,
      errorType === undefined ? attributes : { ...attributes, 'error.type': errorType },
    );
  }
}

function classified(value: object): Message | undefined {
  try {
    return classify(value);
  } catch {
    return undefined;
  }
}

const operationOf = (value: Operation | Open): Operation => ('origin' in value ? value.operation : value);

const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

/** The trace context a request carries in `_meta`, if any. */
export function extracted(params: JsonObject | undefined): Context | undefined {
  const meta = params?._meta;
  if (!isObject(meta) || typeof meta.traceparent !== 'string') return undefined;
  const found = propagation.extract(ROOT_CONTEXT, meta);
  return trace.getSpanContext(found) === undefined ? undefined : found;
}

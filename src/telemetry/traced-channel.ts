/**
 * One channel, traced: each request that arrives on it is a SERVER span (its parent the trace context
 * in its `_meta`, else the one the transport carried, an HTTP `traceparent`), each request sent on it a
 * CLIENT span, child of whatever is being handled, whose context goes out in the request's `_meta`
 * (`traceparent`, `tracestate`, `baggage`: the MCP conventions for 2025, the reserved keys of
 * 2026-07-28). A response ends its request's span. What arrives is handed on inside its span's context,
 * so that what taskgate sends because of it, upstream or to the client, is that span's child.
 */
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  context,
  propagation,
  trace,
  type Context,
  type Link,
  type Span,
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
import type { Channel, ChannelHandlers, Route } from '../transport/channel.js';
import { requestAttributes, responseOutcome, spanName, statedVersion } from './attributes.js';
import type { TaskSpans } from './task-spans.js';
import type { ChannelFacts } from './telemetry.js';

/** Requests in flight with a span, each way; past it the oldest span is ended untold. */
const MAX_OPEN_SPANS = 10_000;

interface Open {
  span: Span;
  /** Where the request was sent from: its answer is handled there. */
  origin: Context;
}

export class TracedChannel implements Channel {
  private readonly asked = new Map<string | number, Open>();
  private readonly serving = new Map<string | number, Span>();
  private version: string | undefined;

  constructor(
    private readonly inner: Channel,
    private readonly tracer: Tracer,
    private readonly facts: ChannelFacts,
    private readonly tasks: TaskSpans,
  ) {}

  get takesCallerCapabilities(): boolean {
    return this.inner.takesCallerCapabilities === true;
  }

  get outlivesClose(): boolean {
    return this.inner.outlivesClose === true;
  }

  start(handlers: ChannelHandlers): void {
    this.inner.start({
      message: (raw, arrival, parsed) => {
        const into = this.arrived(readHanded(raw, parsed, 'the peer'));
        context.with(into, () => handlers.message(raw, arrival, parsed));
      },
      malformed: (error, id) => handlers.malformed(error, id),
      closed: (info) => {
        if (info.reopening !== true) this.endAll('connection_closed');
        handlers.closed(info);
      },
      ...(handlers.reopened === undefined ? {} : { reopened: () => handlers.reopened?.() }),
    });
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
    return this.inner.close();
  }

  /** The context to hand an arriving message on in. */
  private arrived(read: ReturnType<typeof readHanded>): Context {
    if (!read.ok) return ROOT_CONTEXT;
    const message = read.message;
    if (message.kind === 'response') {
      const id = message.msg.id;
      const open = id === null ? undefined : this.take(this.asked, id);
      if (open === undefined) return ROOT_CONTEXT;
      this.learnVersion(message.msg as unknown as JsonObject);
      end(open.span, message.msg as unknown as JsonObject);
      return open.origin;
    }
    if (message.kind !== 'request') return ROOT_CONTEXT;
    const { method, id, params } = message.msg;
    if (method === 'initialize') this.version = text(params?.protocolVersion) ?? this.version;
    const ambient = context.active();
    const carried = extracted(params);
    const parent = carried ?? ambient;
    const links: Link[] = [];
    const ambientSpan = trace.getSpanContext(ambient);
    if (carried !== undefined && ambientSpan !== undefined) links.push({ context: ambientSpan });
    const task = this.tasks.linkOf(method, params);
    if (task !== undefined) links.push({ context: task });
    const span = this.tracer.startSpan(
      spanName(method, params),
      {
        kind: SpanKind.SERVER,
        attributes: requestAttributes(method, id, params, this.facts, statedVersion(params) ?? this.version),
        links,
      },
      parent,
    );
    if (task === undefined) this.tasks.awaitRecord(span, method, params);
    this.hold(this.serving, id, span);
    return trace.setSpan(parent, span);
  }

  /** A message going out: ends the span it answers, or opens one for the request it is (and carries it). */
  private leaving(message: Message | undefined): object | undefined {
    if (message === undefined) return undefined;
    if (message.kind === 'response') {
      const id = message.msg.id;
      const span = id === null ? undefined : this.take(this.serving, id);
      this.learnVersion(message.msg as unknown as JsonObject);
      if (span !== undefined) end(span, message.msg as unknown as JsonObject);
      return undefined;
    }
    if (message.kind !== 'request') return undefined;
    const { method, id, params } = message.msg;
    if (method === 'initialize') this.version = text(params?.protocolVersion) ?? this.version;
    const origin = context.active();
    const span = this.tracer.startSpan(
      spanName(method, params),
      {
        kind: SpanKind.CLIENT,
        attributes: requestAttributes(method, id, params, this.facts, statedVersion(params) ?? this.version),
      },
      origin,
    );
    this.hold(this.asked, id, { span, origin });
    const carrier: Record<string, string> = {};
    propagation.inject(trace.setSpan(origin, span), carrier);
    const meta = isObject(params?._meta) ? params._meta : {};
    return { ...message.msg, params: { ...params, _meta: { ...meta, ...carrier } } };
  }

  private learnVersion(response: JsonObject): void {
    const result = isObject(response.result) ? response.result : undefined;
    const version = text(result?.protocolVersion);
    if (version !== undefined && isObject(result?.capabilities)) this.version = version;
  }

  private hold<T extends Span | Open>(table: Map<string | number, T>, id: RequestId, value: T): void {
    const key = idKey(id);
    const earlier = table.get(key);
    if (earlier !== undefined) spanOf(earlier).end();
    table.set(key, value);
    if (table.size <= MAX_OPEN_SPANS) return;
    const [oldest, open] = table.entries().next().value as [string | number, T];
    table.delete(oldest);
    spanOf(open).end();
  }

  private take<T>(table: Map<string | number, T>, id: RequestId): T | undefined {
    const key = idKey(id);
    const value = table.get(key);
    if (value !== undefined) table.delete(key);
    return value;
  }

  private endAll(why: string): void {
    const spans = [...this.serving.values(), ...[...this.asked.values()].map((open) => open.span)];
    this.serving.clear();
    this.asked.clear();
    for (const span of spans) {
      span.setAttribute('error.type', why);
      span.setStatus({ code: SpanStatusCode.ERROR, message: why });
      span.end();
    }
  }
}

function classified(value: object): Message | undefined {
  try {
    return classify(value);
  } catch {
    return undefined;
  }
}

const spanOf = (value: Span | Open): Span => ('origin' in value ? value.span : value);

const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

/** The trace context a request carries in `_meta`, if any. */
export function extracted(params: JsonObject | undefined): Context | undefined {
  const meta = params?._meta;
  if (!isObject(meta) || typeof meta.traceparent !== 'string') return undefined;
  const found = propagation.extract(ROOT_CONTEXT, meta);
  return trace.getSpanContext(found) === undefined ? undefined : found;
}

/** Ends a request's span with what its response says. */
export function end(span: Span, response: JsonObject): void {
  const outcome = responseOutcome(response);
  span.setAttributes(outcome.attributes);
  if (outcome.error !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.error });
  span.end();
}

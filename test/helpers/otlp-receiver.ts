/**
 * A real OTLP/HTTP receiver for tests: an HTTP server taking what the official exporters POST to
 * /v1/traces and /v1/metrics. JSON bodies (http/json) are decoded into spans and histogram points;
 * protobuf bodies are kept as bytes. It can refuse every export (503) or hang on each one (never answer),
 * as a collector that is down would.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** 1 internal, 2 server, 3 client (OTLP SpanKind). */
  kind: number;
  attributes: Record<string, unknown>;
  events: { name: string; attributes: Record<string, unknown> }[];
  links: { traceId: string; spanId: string }[];
  status: { code?: number; message?: string };
  service: string;
}

/** One data point of a histogram, as the last export that had it said (cumulative: the latest wins). */
export interface ReceivedPoint {
  metric: string;
  unit: string;
  description: string;
  attributes: Record<string, unknown>;
  count: number;
  sum: number;
  explicitBounds: number[];
  bucketCounts: number[];
  service: string;
}

/** How long a test waits for an export by default: a batch is due in 50 ms, a loaded machine is slow. */
const WAIT_MS = 20_000;

export const SERVER = 2;
export const CLIENT = 3;
export const INTERNAL = 1;

type Behaviour = 'accept' | 'refuse' | 'hang';

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
  arrayValue?: { values?: OtlpValue[] };
}
interface OtlpAttribute {
  key: string;
  value: OtlpValue;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: OtlpAttribute[];
  events?: { name: string; attributes?: OtlpAttribute[] }[];
  links?: { traceId: string; spanId: string }[];
  status?: { code?: number; message?: string };
}
interface OtlpMetrics {
  resourceMetrics?: {
    resource?: { attributes?: OtlpAttribute[] };
    scopeMetrics?: {
      metrics?: {
        name: string;
        unit?: string;
        description?: string;
        histogram?: {
          dataPoints?: {
            attributes?: OtlpAttribute[];
            count?: string | number;
            sum?: number;
            explicitBounds?: number[];
            bucketCounts?: (string | number)[];
          }[];
        };
      }[];
    }[];
  }[];
}
interface OtlpRequest {
  resourceSpans?: {
    resource?: { attributes?: OtlpAttribute[] };
    scopeSpans?: { spans?: OtlpSpan[] }[];
  }[];
}

/** The environment that points taskgate's exporters at `receiver` over http/json, spans sent every 50 ms. */
export const otlpEnv = (
  receiver: OtlpReceiver,
  extra: Record<string, string> = {},
): Record<string, string> => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
  OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
  OTEL_BSP_SCHEDULE_DELAY: '50',
  ...extra,
});

const valueOf = (value: OtlpValue): unknown =>
  value.stringValue ??
  (value.intValue === undefined ? undefined : Number(value.intValue)) ??
  value.boolValue ??
  value.doubleValue ??
  value.arrayValue?.values?.map(valueOf);

const attributesOf = (list: OtlpAttribute[] = []): Record<string, unknown> =>
  Object.fromEntries(list.map(({ key, value }) => [key, valueOf(value)]));

export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  readonly protobufBodies: Buffer[] = [];
  /** Each export's histogram points, in the order they came. */
  readonly points: ReceivedPoint[] = [];
  readonly protobufMetricBodies: Buffer[] = [];
  /** The paths exports were POSTed to. */
  readonly paths: string[] = [];
  /** Export requests received, whatever the answer. */
  posts = 0;
  private waiters: (() => void)[] = [];
  private readonly hanging: ServerResponse[] = [];

  private constructor(
    private readonly server: ReturnType<typeof createServer>,
    readonly url: string,
    private readonly behaviour: Behaviour,
  ) {}

  static async start(behaviour: Behaviour = 'accept'): Promise<OtlpReceiver> {
    const holder: { receiver?: OtlpReceiver } = {};
    const server = createServer((req, res) => void holder.receiver?.take(req, res));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    holder.receiver = new OtlpReceiver(server, `http://127.0.0.1:${port}`, behaviour);
    return holder.receiver;
  }

  /** Resolves with the spans once `found` returns some; fails after `withinMs`. */
  async until<T>(found: (spans: ReceivedSpan[]) => T | undefined, withinMs = WAIT_MS): Promise<T> {
    return this.waitFor(
      () => found(this.spans),
      withinMs,
      () => `spans: ${this.spans.map((s) => s.name).join(', ')}`,
    );
  }

  /** Resolves once `found` returns something of the points received so far; fails after `withinMs`. */
  async untilPoints<T>(found: (points: ReceivedPoint[]) => T | undefined, withinMs = WAIT_MS): Promise<T> {
    return this.waitFor(
      () => found(this.points),
      withinMs,
      () => `points: ${this.points.map((p) => `${p.metric} ${JSON.stringify(p.attributes)}`).join('\n')}`,
    );
  }

  private async waitFor<T>(found: () => T | undefined, withinMs: number, seen: () => string): Promise<T> {
    const deadline = Date.now() + withinMs;
    for (;;) {
      const result = found();
      if (result !== undefined) return result;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`not received within ${withinMs} ms; ${seen()}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** Resolves once `count` export requests have arrived. */
  async posted(count: number, withinMs = WAIT_MS): Promise<void> {
    await this.until(() => (this.posts >= count ? true : undefined), withinMs);
  }

  async stop(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.server.closeAllConnections();
    this.server.close();
    await once(this.server, 'close');
  }

  private async take(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    this.posts += 1;
    this.paths.push(req.url ?? '');
    const json = /json/.test(req.headers['content-type'] ?? '');
    if (req.url === '/v1/traces' && this.behaviour === 'accept') {
      if (json) this.decode(JSON.parse(body.toString()) as OtlpRequest);
      else this.protobufBodies.push(body);
    }
    if (req.url === '/v1/metrics' && this.behaviour === 'accept') {
      if (json) this.decodeMetrics(JSON.parse(body.toString()) as OtlpMetrics);
      else this.protobufMetricBodies.push(body);
    }
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
    if (this.behaviour === 'hang') return void this.hanging.push(res);
    if (this.behaviour === 'refuse') return void res.writeHead(503).end();
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  }

  private decode(request: OtlpRequest): void {
    for (const resourceSpans of request.resourceSpans ?? []) {
      const service = String(attributesOf(resourceSpans.resource?.attributes)['service.name']);
      for (const scope of resourceSpans.scopeSpans ?? []) {
        for (const span of scope.spans ?? []) {
          this.spans.push({
            traceId: span.traceId,
            spanId: span.spanId,
            parentSpanId: span.parentSpanId ?? '',
            name: span.name,
            kind: span.kind,
            attributes: attributesOf(span.attributes),
            events: (span.events ?? []).map((event) => ({
              name: event.name,
              attributes: attributesOf(event.attributes),
            })),
            links: span.links ?? [],
            status: span.status ?? {},
            service,
          });
        }
      }
    }
  }

  private decodeMetrics(request: OtlpMetrics): void {
    for (const resourceMetrics of request.resourceMetrics ?? []) {
      const service = String(attributesOf(resourceMetrics.resource?.attributes)['service.name']);
      for (const scope of resourceMetrics.scopeMetrics ?? []) {
        for (const metric of scope.metrics ?? []) {
          for (const point of metric.histogram?.dataPoints ?? []) {
            this.points.push({
              metric: metric.name,
              unit: metric.unit ?? '',
              description: metric.description ?? '',
              attributes: attributesOf(point.attributes),
              count: Number(point.count ?? 0),
              sum: point.sum ?? 0,
              explicitBounds: point.explicitBounds ?? [],
              bucketCounts: (point.bucketCounts ?? []).map(Number),
              service,
            });
          }
        }
      }
    }
  }
}

/** A receiver that the test file's cleanups (run after each test) stop. */
export async function receiverStoppedBy(cleanups: (() => Promise<void>)[]): Promise<OtlpReceiver> {
  const started = await OtlpReceiver.start();
  cleanups.push(() => started.stop());
  return started;
}

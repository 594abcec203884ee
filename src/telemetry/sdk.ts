/**
 * OpenTelemetry itself, loaded only when telemetry is on (start.ts): a Node tracer provider with the
 * standard environment (OTEL_TRACES_SAMPLER and _ARG, OTEL_BSP_* for the batch processor's bounded queue,
 * OTEL_EXPORTER_OTLP_* for the exporter, OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES), exporting over
 * OTLP/HTTP in protobuf or JSON; and when metrics are on, the metrics SDK (metrics-sdk.ts, loaded only
 * then). Exports happen off the calls' path: a collector that is down or hangs costs a dropped batch,
 * never a call's time. With traces off (metrics only) no tracer provider is registered: the spans are the
 * API's non-recording ones, and only their timing reaches the histograms.
 */
import { createRequire } from 'node:module';
import {
  DiagLogLevel,
  SpanKind,
  context,
  diag,
  propagation,
  trace,
  type DiagLogger,
} from '@opentelemetry/api';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import {
  defaultResource,
  detectResources,
  envDetector,
  resourceFromAttributes,
} from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import type { IncomingMessage } from 'node:http';
import type { Logger } from 'pino';
import { isObject, type JsonObject } from '../protocol/messages.js';
import {
  SERVER,
  requestAttributes,
  spanName,
  statedVersion,
  taskStateOf,
  toolArgumentsOf,
} from './attributes.js';
import type { OpenMetrics } from './metrics-sdk.js';
import { Operation } from './operation.js';
import { TaskSpans, withServedVersion } from './task-spans.js';
import type { TelemetrySettings } from './settings.js';
import type { Telemetry } from './telemetry.js';
import type { ModernServe } from '../protocol/modern/exchange.js';
import { TracedChannel, extracted } from './traced-channel.js';

/** How long shutdown waits for the last spans to go out: a collector that hangs must not hold the exit. */
const SHUTDOWN_WAIT_MS = 2_000;
/** An exporter that keeps failing is said once a minute, not once a batch. */
const DIAG_QUIET_MS = 60_000;

export async function openTelemetry(settings: TelemetrySettings, logger: Logger): Promise<Telemetry> {
  const log = logger.child({ component: 'telemetry' });
  diag.setLogger(quietDiag(log), DiagLogLevel.WARN);
  if (settings.unsupportedProtocol !== undefined) {
    log.warn(`OTLP protocol ${settings.unsupportedProtocol} is not supported: exporting http/protobuf`);
  }
  const { version } = createRequire(import.meta.url)('../../package.json') as { version: string };
  const resource = defaultResource()
    .merge(
      resourceFromAttributes({ [ATTR_SERVICE_NAME]: settings.serviceName, [ATTR_SERVICE_VERSION]: version }),
    )
    .merge(detectResources({ detectors: [envDetector] }));
  const traces = settings.traces;
  let provider: NodeTracerProvider | undefined;
  if (traces !== undefined) {
    const options = traces.url === undefined ? {} : { url: traces.url };
    const exporter =
      traces.protocol === 'http/json' ? new JsonExporter(options) : new ProtobufExporter(options);
    provider = new NodeTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(exporter)] });
    provider.register();
    log.info({ protocol: traces.protocol, ...options }, 'exporting OpenTelemetry traces over OTLP/HTTP');
  }
  let opened: OpenMetrics | undefined;
  if (settings.metrics !== undefined) {
    const { openMetrics } = await import('./metrics-sdk.js');
    opened = openMetrics(settings.metrics, resource, version);
    const { protocol, url, intervalMs } = settings.metrics;
    log.info(
      { protocol, ...(url === undefined ? {} : { url }), intervalMs },
      'exporting OpenTelemetry metrics over OTLP/HTTP',
    );
  }
  const metrics = opened?.metrics;
  const tracer = trace.getTracer('mcp-taskgate', version);
  const tasks = new TaskSpans(tracer);

  const modern =
    (serve: ModernServe): ModernServe =>
    (exchange, sink) => {
      const { method, id, params } = exchange.request;
      const ambient = context.active();
      const carried = extracted(params);
      const ambientSpan = trace.getSpanContext(ambient);
      const task = tasks.linkOf(method, params);
      const attributes = requestAttributes(method, id, params, { transport: 'tcp' }, statedVersion(params));
      const content = settings.toolContent && method === 'tools/call';
      const span = tracer.startSpan(
        spanName(method, params),
        {
          kind: SpanKind.SERVER,
          attributes: content ? { ...attributes, ...toolArgumentsOf(method, params) } : attributes,
          links: [
            ...(carried !== undefined && ambientSpan !== undefined ? [{ context: ambientSpan }] : []),
            ...(task === undefined ? [] : [{ context: task }]),
          ],
        },
        carried ?? ambient,
      );
      if (task === undefined) tasks.awaitRecord(span, method, params);
      const operation = new Operation(span, 'server', attributes, metrics, content);
      const served = withServedVersion(
        trace.setSpan(carried ?? ambient, span),
        attributes['mcp.protocol.version'] as string | undefined,
      );
      context.with(served, () =>
        serve(exchange, {
          answer: (answer) => {
            if (answer === undefined) operation.failed('cancelled', 'the client gave the request up');
            else {
              operation.answered(answer.response as JsonObject);
              const result = (answer.response as JsonObject).result;
              const state = isObject(result) ? taskStateOf(result) : undefined;
              if (state !== undefined) tasks.server.shown(state.taskId, statedVersion(params));
            }
            sink.answer(answer);
          },
          failed: (error) => {
            operation.failed('_OTHER', String(error));
            sink.failed(error);
          },
        }),
      );
    };

  return {
    front: (channel, facts) =>
      new TracedChannel(channel, tracer, facts, tasks, 'front', metrics, settings.toolContent),
    upstream: (channel, facts) =>
      new TracedChannel(channel, tracer, facts, tasks, 'upstream', metrics, settings.toolContent),
    modern,
    inRequestContext: <T>(req: IncomingMessage, handle: () => T): T => {
      if (req.headers.traceparent === undefined) return handle();
      return context.with(propagation.extract(context.active(), req.headers), handle);
    },
    createTask: (task, create) => tasks.create(task, create),
    taskChanged: (record) => tasks.changed(record),
    taskSeen: (record) => tasks.seen(record),
    taskPromoted: (taskId) => tasks.promoted(taskId),
    routed: (name) => trace.getActiveSpan()?.setAttribute(SERVER, name),
    shutdown: async () => {
      tasks.endAll();
      let timer: NodeJS.Timeout | undefined;
      const waited = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, SHUTDOWN_WAIT_MS);
        timer.unref();
      });
      const flushed = Promise.all([provider?.shutdown(), opened?.shutdown()]).catch(() => undefined);
      await Promise.race([flushed, waited]);
      clearTimeout(timer);
    },
  };
}

/** The SDK's own complaints (an export that failed) on the log, at most one a minute. */
function quietDiag(log: Logger): DiagLogger {
  let quietUntil = 0;
  const say = (message: string, ...args: unknown[]): void => {
    const now = Date.now();
    if (now < quietUntil) return;
    quietUntil = now + DIAG_QUIET_MS;
    log.warn({ detail: args.map(String).join(' ') || undefined }, `OpenTelemetry: ${message}`);
  };
  const silent = (): void => undefined;
  return { error: say, warn: say, info: silent, debug: silent, verbose: silent };
}

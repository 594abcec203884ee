/**
 * The OpenTelemetry metrics SDK, loaded only when metrics are on (sdk.ts): a meter provider whose
 * periodic reader exports over OTLP/HTTP in protobuf or JSON every OTEL_METRIC_EXPORT_INTERVAL, the
 * exporter reading the rest of OTEL_EXPORTER_OTLP_* (METRICS_ENDPOINT, headers, temporality) itself.
 * An export runs on the reader's timer, never on a call's path.
 */
import { OTLPMetricExporter as JsonExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPMetricExporter as ProtobufExporter } from '@opentelemetry/exporter-metrics-otlp-proto';
import type { Resource } from '@opentelemetry/resources';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { OperationMetrics } from './operation-metrics.js';
import type { MetricsSettings } from './settings.js';

export interface OpenMetrics {
  metrics: OperationMetrics;
  /** Exports what was recorded since the last export, then stops. */
  shutdown(): Promise<void>;
}

export function openMetrics(settings: MetricsSettings, resource: Resource, version: string): OpenMetrics {
  const options = settings.url === undefined ? {} : { url: settings.url };
  const exporter =
    settings.protocol === 'http/json' ? new JsonExporter(options) : new ProtobufExporter(options);
  const reader = new PeriodicExportingMetricReader({
    exporter,
    exportIntervalMillis: settings.intervalMs,
    exportTimeoutMillis: settings.timeoutMs,
  });
  const provider = new MeterProvider({ resource, readers: [reader] });
  return {
    metrics: new OperationMetrics(provider.getMeter('mcp-taskgate', version)),
    shutdown: () => provider.shutdown(),
  };
}

/**
 * Whether telemetry is on, and how it exports, from the config and the standard OTEL_* environment
 * (the environment wins, as in every OTel SDK). Nothing of OpenTelemetry is loaded to decide it. Each
 * signal is on when its own endpoint or the general one is set (or the config turns telemetry on), unless
 * OTEL_TRACES_EXPORTER / OTEL_METRICS_EXPORTER is `none`.
 */
import type { Config } from '../config/schema.js';

export type OtlpProtocol = 'http/protobuf' | 'http/json';

export interface SignalSettings {
  protocol: OtlpProtocol;
  /** The signal's URL, when the config names one and the environment does not. */
  url?: string;
}

export interface MetricsSettings extends SignalSettings {
  /** OTEL_METRIC_EXPORT_INTERVAL. */
  intervalMs: number;
  /** OTEL_METRIC_EXPORT_TIMEOUT, at most the interval (the SDK's reader refuses more). */
  timeoutMs: number;
}

export interface TelemetrySettings {
  /** undefined: no traces are exported (spans are not recorded, trace context is not read or carried). */
  traces?: SignalSettings;
  /** undefined: no metrics are exported. */
  metrics?: MetricsSettings;
  serviceName: string;
  /** Tool arguments and results on the tools/call spans (the conventions' opt-in attributes). */
  toolContent: boolean;
  /** A protocol the environment asked for that taskgate does not speak (grpc): said once at start. */
  unsupportedProtocol?: string;
}

type Env = Record<string, string | undefined>;

const DEFAULT_INTERVAL_MS = 60_000;
const DEFAULT_TIMEOUT_MS = 30_000;

const nonEmpty = (value: string | undefined): string | undefined =>
  value === undefined || value.trim() === '' ? undefined : value.trim();

const milliseconds = (value: string | undefined, fallback: number): number => {
  const parsed = Number(nonEmpty(value));
  return Number.isInteger(parsed) && parsed > 0 ? parsed : fallback;
};

/** undefined: telemetry is off (the default). */
export function telemetrySettings(config: Config, env: Env): TelemetrySettings | undefined {
  const section = config.telemetry;
  if (nonEmpty(env.OTEL_SDK_DISABLED)?.toLowerCase() === 'true' || section.enabled === false)
    return undefined;
  const general = nonEmpty(env.OTEL_EXPORTER_OTLP_ENDPOINT);
  const tracesEnv = nonEmpty(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) ?? general;
  const metricsEnv = nonEmpty(env.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT) ?? general;
  const metricsUrl = section.metricsEndpoint ?? section.endpoint?.replace(/\/v1\/traces$/, '/v1/metrics');
  const configured = section.enabled === true || section.endpoint !== undefined;
  const unsupported: string[] = [];
  const protocol = (signal: 'TRACES' | 'METRICS'): OtlpProtocol => {
    const asked =
      nonEmpty(env[`OTEL_EXPORTER_OTLP_${signal}_PROTOCOL`]) ??
      nonEmpty(env.OTEL_EXPORTER_OTLP_PROTOCOL) ??
      section.protocol;
    if (asked === 'http/json' || asked === 'http/protobuf') return asked;
    if (asked !== undefined) unsupported.push(asked);
    return 'http/protobuf';
  };
  const wanted = (exporter: string | undefined): boolean => nonEmpty(exporter)?.toLowerCase() !== 'none';

  const traces: SignalSettings | undefined =
    wanted(env.OTEL_TRACES_EXPORTER) && (tracesEnv !== undefined || configured)
      ? {
          protocol: protocol('TRACES'),
          ...(tracesEnv === undefined && section.endpoint !== undefined ? { url: section.endpoint } : {}),
        }
      : undefined;
  const intervalMs = milliseconds(env.OTEL_METRIC_EXPORT_INTERVAL, DEFAULT_INTERVAL_MS);
  const metrics: MetricsSettings | undefined =
    wanted(env.OTEL_METRICS_EXPORTER) &&
    (metricsEnv !== undefined || configured || section.metricsEndpoint !== undefined)
      ? {
          protocol: protocol('METRICS'),
          ...(metricsEnv === undefined && metricsUrl !== undefined ? { url: metricsUrl } : {}),
          intervalMs,
          timeoutMs: Math.min(milliseconds(env.OTEL_METRIC_EXPORT_TIMEOUT, DEFAULT_TIMEOUT_MS), intervalMs),
        }
      : undefined;
  if (traces === undefined && metrics === undefined) return undefined;
  return {
    ...(traces === undefined ? {} : { traces }),
    ...(metrics === undefined ? {} : { metrics }),
    serviceName: section.serviceName ?? 'taskgate',
    toolContent: section.toolContent,
    ...(unsupported.length === 0 ? {} : { unsupportedProtocol: unsupported[0] }),
  };
}

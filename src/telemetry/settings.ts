/**
 * Whether telemetry is on, and how it exports, from the config and the standard OTEL_* environment
 * (the environment wins, as in every OTel SDK). Nothing of OpenTelemetry is loaded to decide it.
 */
import type { Config } from '../config/schema.js';

export type OtlpProtocol = 'http/protobuf' | 'http/json';

export interface TelemetrySettings {
  protocol: OtlpProtocol;
  /** The traces URL, when the config names one and the environment does not. */
  url?: string;
  serviceName: string;
  /** A protocol the environment asked for that taskgate does not speak (grpc): said once at start. */
  unsupportedProtocol?: string;
}

type Env = Record<string, string | undefined>;

const nonEmpty = (value: string | undefined): string | undefined =>
  value === undefined || value.trim() === '' ? undefined : value.trim();

/** undefined: telemetry is off (the default). */
export function telemetrySettings(config: Config, env: Env): TelemetrySettings | undefined {
  const fromEnv =
    nonEmpty(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) ?? nonEmpty(env.OTEL_EXPORTER_OTLP_ENDPOINT);
  const section = config.telemetry;
  const sdkDisabled = nonEmpty(env.OTEL_SDK_DISABLED)?.toLowerCase() === 'true';
  const on = section.enabled ?? (fromEnv !== undefined || section.endpoint !== undefined);
  if (!on || sdkDisabled) return undefined;
  const asked =
    nonEmpty(env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL) ??
    nonEmpty(env.OTEL_EXPORTER_OTLP_PROTOCOL) ??
    section.protocol;
  const known = asked === 'http/json' || asked === 'http/protobuf';
  return {
    protocol: known ? asked : 'http/protobuf',
    ...(fromEnv === undefined && section.endpoint !== undefined ? { url: section.endpoint } : {}),
    serviceName: section.serviceName ?? 'taskgate',
    ...(asked !== undefined && !known ? { unsupportedProtocol: asked } : {}),
  };
}

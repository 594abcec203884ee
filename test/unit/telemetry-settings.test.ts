/**
 * Which signals telemetry exports, and how, from the config and the standard OTEL_* environment
 * (issue 30): each signal on with its own endpoint or the general one, `none` leaving one out, the
 * metrics' interval and timeout, the config's metrics URL.
 */
import { describe, expect, it } from 'vitest';
import { EffectiveConfigSchema } from '../../src/config/schema.js';
import { telemetrySettings } from '../../src/telemetry/settings.js';

const config = (telemetry: Record<string, unknown> = {}) => EffectiveConfigSchema.parse({ telemetry });

describe('telemetry settings', () => {
  it('off with nothing set', () => {
    expect(telemetrySettings(config(), {})).toBeUndefined();
  });

  it('OTEL_EXPORTER_OTLP_ENDPOINT: traces and metrics, metrics every 60 s with a 30 s timeout by default, no tool content', () => {
    expect(telemetrySettings(config(), { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' })).toEqual({
      traces: { protocol: 'http/protobuf' },
      metrics: { protocol: 'http/protobuf', intervalMs: 60_000, timeoutMs: 30_000 },
      serviceName: 'taskgate',
      toolContent: false,
    });
  });

  it('telemetry.toolContent: the opt-in tool arguments and results, only when the config says so', () => {
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' };
    expect(telemetrySettings(config({ toolContent: true }), env)?.toolContent).toBe(true);
  });

  it('one signal endpoint turns on that signal only', () => {
    const traces = telemetrySettings(config(), { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c/v1/traces' });
    expect(traces?.traces).toBeDefined();
    expect(traces?.metrics).toBeUndefined();
    const metrics = telemetrySettings(config(), {
      OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'http://c/v1/metrics',
    });
    expect(metrics?.traces).toBeUndefined();
    expect(metrics?.metrics).toBeDefined();
  });

  it('OTEL_TRACES_EXPORTER / OTEL_METRICS_EXPORTER none leave that signal out; both none is off', () => {
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' };
    expect(telemetrySettings(config(), { ...env, OTEL_METRICS_EXPORTER: 'none' })?.metrics).toBeUndefined();
    expect(telemetrySettings(config(), { ...env, OTEL_TRACES_EXPORTER: 'none' })?.traces).toBeUndefined();
    expect(
      telemetrySettings(config(), { ...env, OTEL_TRACES_EXPORTER: 'none', OTEL_METRICS_EXPORTER: 'none' }),
    ).toBeUndefined();
  });

  it('per-signal protocols over the general one; the timeout never above the interval', () => {
    const settings = telemetrySettings(config(), {
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: 'http/protobuf',
      OTEL_METRIC_EXPORT_INTERVAL: '5000',
      OTEL_METRIC_EXPORT_TIMEOUT: '9000',
    });
    expect(settings?.traces?.protocol).toBe('http/json');
    expect(settings?.metrics).toEqual({ protocol: 'http/protobuf', intervalMs: 5000, timeoutMs: 5000 });
  });

  it('the config: metrics to the traces URL with /v1/metrics, or to metricsEndpoint; the environment wins', () => {
    const section = { endpoint: 'http://c:4318/v1/traces' };
    expect(telemetrySettings(config(section), {})).toMatchObject({
      traces: { url: 'http://c:4318/v1/traces' },
      metrics: { url: 'http://c:4318/v1/metrics' },
    });
    expect(
      telemetrySettings(config({ ...section, metricsEndpoint: 'http://m:9090/otlp/v1/metrics' }), {})?.metrics
        ?.url,
    ).toBe('http://m:9090/otlp/v1/metrics');
    const fromEnv = telemetrySettings(config(section), {
      OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'http://e/v1/metrics',
    });
    expect(fromEnv?.metrics).not.toHaveProperty('url');
    expect(fromEnv?.traces?.url).toBe('http://c:4318/v1/traces');
  });

  it('enabled: false and OTEL_SDK_DISABLED keep it off whatever the endpoints', () => {
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' };
    expect(telemetrySettings(config({ enabled: false }), env)).toBeUndefined();
    expect(telemetrySettings(config(), { ...env, OTEL_SDK_DISABLED: 'true' })).toBeUndefined();
  });

  it('an unsupported protocol (grpc) is said, and protobuf used', () => {
    const settings = telemetrySettings(config(), {
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4317',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
    });
    expect(settings).toMatchObject({
      unsupportedProtocol: 'grpc',
      traces: { protocol: 'http/protobuf' },
      metrics: { protocol: 'http/protobuf' },
    });
  });
});

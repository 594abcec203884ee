/**
 * The OpenTelemetry metrics of the MCP semantic conventions (issue 30) through the built taskgate: real
 * SDK clients' calls, over stdio and the HTTP gateway, in both eras, make the official metrics exporter
 * send `mcp.server.operation.duration` / `mcp.client.operation.duration` (and the 2025 sessions'
 * `mcp.*.session.duration`) histograms, with the conventions' attributes and buckets, to a real OTLP/HTTP
 * receiver, in JSON and in protobuf; OTEL_EXPORTER_OTLP_METRICS_ENDPOINT alone exports metrics and no
 * traces.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { connect, FIXTURES, Gateway, type Connection } from '../helpers/taskgate.js';
import { connectModern, MODERN_VERSION } from '../helpers/modern-client.js';
import { httpTransport } from '../helpers/http-client.js';
import { startHttpFixture } from '../helpers/http-fixture.js';
import type { OtlpReceiver } from '../helpers/otlp-receiver.js';
import { type ReceivedPoint, receiverStoppedBy } from '../helpers/otlp-receiver.js';
import { textOf } from '../helpers/tool-results.js';

// Each test starts processes that load the OTel SDK: on a loaded shared machine that alone takes seconds.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

/** The conventions' ExplicitBucketBoundaries for the four histograms (gen-ai/mcp.md "Metrics"). */
const BUCKETS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300];
/** What a metric must never carry: high cardinality, or opt-in. */
const NEVER = ['jsonrpc.request.id', 'mcp.session.id', 'mcp.task.id', 'mcp.resource.uri'];

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const receiver = (): Promise<OtlpReceiver> => receiverStoppedBy(cleanups);

const metricsEnv = (collector: OtlpReceiver, extra: Record<string, string> = {}): Record<string, string> => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
  OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
  OTEL_METRIC_EXPORT_INTERVAL: '100',
  OTEL_BSP_SCHEDULE_DELAY: '50',
  OTEL_SERVICE_NAME: 'taskgate-metrics-test',
  ...extra,
});

/** The latest point of `metric` whose attributes include `attributes`. */
function pointOf(
  points: ReceivedPoint[],
  metric: string,
  attributes: Record<string, unknown>,
): ReceivedPoint | undefined {
  return points.findLast(
    (point) =>
      point.metric === metric &&
      Object.entries(attributes).every(([key, value]) => point.attributes[key] === value),
  );
}

function expectConventional(point: ReceivedPoint): void {
  expect(point.unit).toBe('s');
  expect(point.explicitBounds).toEqual(BUCKETS);
  expect(point.bucketCounts).toHaveLength(BUCKETS.length + 1);
  expect(point.count).toBeGreaterThanOrEqual(1);
  expect(point.sum).toBeGreaterThan(0);
  for (const name of NEVER) expect(point.attributes).not.toHaveProperty(name);
}

async function stdio(env: Record<string, string>): Promise<Connection> {
  const connection = await connect('legacy', { env });
  cleanups.push(() => connection.close());
  return connection;
}

describe('metrics by the MCP semantic conventions', () => {
  it('stdio, 2025 client: each call is a server and a client operation, with the conventions attributes; an isError result is tool_error, a JSON-RPC error its code; the sessions end in the session histograms', async () => {
    const collector = await receiver();
    const connection = await stdio(metricsEnv(collector));
    const { client } = connection;
    expect(textOf(await client.callTool({ name: 'echo', arguments: { text: 'counted' } }))).toBe('counted');
    await client.callTool({ name: 'fail', arguments: { message: 'no' } });
    await client
      .callTool({ name: 'throw', arguments: { code: -32050, message: 'thrown' } })
      .catch(() => undefined);

    const common = { 'network.transport': 'pipe', 'mcp.protocol.version': '2025-11-25' };
    const echo = {
      'mcp.method.name': 'tools/call',
      'gen_ai.tool.name': 'echo',
      'gen_ai.operation.name': 'execute_tool',
      ...common,
    };
    const [served, sent] = await collector.untilPoints((points) => {
      const served = pointOf(points, 'mcp.server.operation.duration', echo);
      const sent = pointOf(points, 'mcp.client.operation.duration', echo);
      return served && sent ? [served, sent] : undefined;
    });
    for (const point of [served, sent]) {
      expectConventional(point);
      expect(point.service).toBe('taskgate-metrics-test');
      expect(point.attributes).not.toHaveProperty('error.type');
      expect(point.attributes).not.toHaveProperty('server.address');
    }
    // The briefs of semantic-conventions-genai's model/mcp/metrics.yaml, word for word.
    expect(served.description).toBe(
      'MCP request or notification duration as observed on the receiver from the time it was received until the result or ack is sent.',
    );
    expect(sent.description).toBe(
      'The duration of the MCP request or notification as observed on the sender from the time it was sent until the response or ack is received.',
    );

    const failed = await collector.untilPoints((points) =>
      pointOf(points, 'mcp.server.operation.duration', { 'gen_ai.tool.name': 'fail' }),
    );
    expect(failed.attributes['error.type']).toBe('tool_error');
    const thrown = await collector.untilPoints((points) =>
      pointOf(points, 'mcp.client.operation.duration', { 'gen_ai.tool.name': 'throw' }),
    );
    expect(thrown.attributes).toMatchObject({ 'error.type': '-32050', 'rpc.response.status_code': '-32050' });
    const initialize = await collector.untilPoints((points) =>
      pointOf(points, 'mcp.server.operation.duration', { 'mcp.method.name': 'initialize' }),
    );
    expect(initialize.attributes).not.toHaveProperty('gen_ai.operation.name');

    // The client leaves: taskgate's session with it, and its own with the server, end; the last export says so.
    await connection.close();
    const [front, upstream] = await collector.untilPoints((points) => {
      const front = pointOf(points, 'mcp.server.session.duration', common);
      const upstream = pointOf(points, 'mcp.client.session.duration', common);
      return front && upstream ? [front, upstream] : undefined;
    });
    for (const point of [front, upstream]) {
      expectConventional(point);
      expect(point.attributes).not.toHaveProperty('mcp.method.name');
      expect(point.attributes).not.toHaveProperty('error.type');
    }
  });

  it('sidecar in front of an HTTP server, 2025 client: tcp and http, and the client operation names the server address and port', async () => {
    const collector = await receiver();
    const fixture = await startHttpFixture('legacy');
    cleanups.push(() => fixture.stop());
    const gateway = await Gateway.start([], ['--upstream-url', fixture.url], metricsEnv(collector));
    cleanups.push(() => gateway.stop());
    const client = new Client({ name: 'metrics-test', version: '1' });
    const transport = httpTransport(gateway.url);
    await client.connect(transport);
    await client.callTool({ name: 'echo', arguments: { text: 'sidecar' } });
    const http = { 'network.transport': 'tcp', 'network.protocol.name': 'http' };
    const [served, sent] = await collector.untilPoints((points) => {
      const served = pointOf(points, 'mcp.server.operation.duration', {
        'gen_ai.tool.name': 'echo',
        ...http,
      });
      const sent = pointOf(points, 'mcp.client.operation.duration', { 'gen_ai.tool.name': 'echo', ...http });
      return served && sent ? [served, sent] : undefined;
    });
    expectConventional(served);
    expectConventional(sent);
    expect(served.attributes).not.toHaveProperty('server.address');
    expect(sent.attributes).toMatchObject({ 'server.address': '127.0.0.1', 'server.port': fixture.port });
    // The client ends its session (DELETE): the front's session histogram has it.
    await transport.terminateSession();
    await client.close();
    const session = await collector.untilPoints((points) =>
      pointOf(points, 'mcp.server.session.duration', http),
    );
    expectConventional(session);
    expect(session.attributes['mcp.protocol.version']).toBe('2025-11-25');
  });

  it('2026-07-28 client over HTTP: its requests are server operations of that version; it has no session to count', async () => {
    const collector = await receiver();
    const gateway = await Gateway.start([process.execPath, FIXTURES.legacy], [], metricsEnv(collector));
    cleanups.push(() => gateway.stop());
    const connection = await connectModern({ url: gateway.url });
    cleanups.push(() => connection.close());
    await connection.client.callTool({ name: 'echo', arguments: { text: 'modern' } });
    const served = await collector.untilPoints((points) =>
      pointOf(points, 'mcp.server.operation.duration', {
        'gen_ai.tool.name': 'echo',
        'mcp.protocol.version': MODERN_VERSION,
      }),
    );
    expectConventional(served);
    expect(served.attributes).toMatchObject({ 'network.transport': 'tcp', 'mcp.method.name': 'tools/call' });
    await connection.close();
    // Exports go on after the client left; none has a session of 2026-07-28.
    const exports = collector.paths.filter((path) => path === '/v1/metrics').length;
    await collector.until(() =>
      collector.paths.filter((path) => path === '/v1/metrics').length >= exports + 2 ? true : undefined,
    );
    expect(
      collector.points.filter(
        (point) =>
          point.metric.endsWith('.session.duration') &&
          point.attributes['mcp.protocol.version'] === MODERN_VERSION,
      ),
    ).toEqual([]);
  });

  it('http/protobuf: the official protobuf exporter sends the histograms', async () => {
    const collector = await receiver();
    const { client } = await stdio(metricsEnv(collector, { OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf' }));
    await client.callTool({ name: 'echo', arguments: { text: 'pb' } });
    await collector.until((): true | undefined =>
      collector.protobufMetricBodies.some(
        (body) =>
          body.includes('mcp.server.operation.duration') &&
          body.includes('mcp.client.operation.duration') &&
          body.includes('execute_tool'),
      )
        ? true
        : undefined,
    );
  });

  it('OTEL_EXPORTER_OTLP_METRICS_ENDPOINT alone: metrics go there, and no traces anywhere', async () => {
    const collector = await receiver();
    const { client } = await stdio({
      OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: `${collector.url}/v1/metrics`,
      OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: 'http/json',
      OTEL_METRIC_EXPORT_INTERVAL: '100',
      OTEL_BSP_SCHEDULE_DELAY: '50',
    });
    await client.callTool({ name: 'echo', arguments: { text: 'metrics only' } });
    await collector.untilPoints((points) =>
      pointOf(points, 'mcp.server.operation.duration', { 'gen_ai.tool.name': 'echo' }),
    );
    expect(collector.paths.filter((path) => path !== '/v1/metrics')).toEqual([]);
  });
});

/**
 * OpenTelemetry (issue 30) through the built taskgate: off by default with nothing of OpenTelemetry
 * loaded; on with OTEL_EXPORTER_OTLP_ENDPOINT, one trace from a real SDK client (2025 and 2026-07-28, stdio,
 * the HTTP gateway and the sidecar in front of an HTTP server) through taskgate to the server, exported by
 * the official exporter to a real OTLP/HTTP receiver; a task's span, also across two replicas on one
 * Redis; an exporter that refuses or hangs changes nothing for the client.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { connect, FIXTURES, Gateway, TASK_AWARE, TASKGATE, type Connection } from '../helpers/taskgate.js';
import { connectModern, MODERN_VERSION } from '../helpers/modern-client.js';
import { httpTransport } from '../helpers/http-client.js';
import { startHttpFixture } from '../helpers/http-fixture.js';
import { CLIENT, INTERNAL, OtlpReceiver, SERVER, type ReceivedSpan } from '../helpers/otlp-receiver.js';
import { textOf } from '../helpers/tool-results.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  CallToolResultSchema,
  CancelTaskResultSchema,
  CreateTaskResultSchema,
  GetTaskResultSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { freshPrefix, redisForTests } from '../helpers/redis.js';

// Each test starts processes that load the OTel SDK: on a loaded shared machine that alone takes seconds.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

const redis = await redisForTests();
afterAll(() => redis?.stop());

const WATCH = fileURLToPath(new URL('../fixtures/otel-watch.mjs', import.meta.url));
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';
const TRACEPARENT = `00-${TRACE_ID}-${CALLER_SPAN}-01`;

const otelEnv = (receiver: OtlpReceiver, extra: Record<string, string> = {}): Record<string, string> => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
  OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
  OTEL_BSP_SCHEDULE_DELAY: '50',
  OTEL_SERVICE_NAME: 'taskgate-under-test',
  ...extra,
});

/** The SERVER span of taskgate for `name` in the caller's trace, and the CLIENT span it sent upstream. */
function gatewayPair(spans: ReceivedSpan[], name: string): [ReceivedSpan, ReceivedSpan] | undefined {
  const server = spans.find((s) => s.kind === SERVER && s.name === name && s.traceId === TRACE_ID);
  const client = spans.find((s) => s.kind === CLIENT && s.name === name && s.parentSpanId === server?.spanId);
  return server === undefined || client === undefined ? undefined : [server, client];
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function receiver(behaviour?: 'accept' | 'refuse' | 'hang'): Promise<OtlpReceiver> {
  const started = await OtlpReceiver.start(behaviour);
  cleanups.push(() => started.stop());
  return started;
}

/**
 * A collector and what sends to it, started by the first test that asks and stopped after the file: shared
 * by tests that need no process of their own, since each looks only for its own tool's or task's spans.
 */
function sharedOnce<T extends { collector: OtlpReceiver }>(
  start: (collector: OtlpReceiver) => Promise<T>,
  stop: (started: T) => Promise<void>,
): () => Promise<T> {
  let started: Promise<T> | undefined;
  afterAll(async () => {
    if (started === undefined) return;
    const done = await started;
    await stop(done);
    await done.collector.stop();
  });
  return () => (started ??= OtlpReceiver.start().then(start));
}

/** One taskgate on stdio in front of the legacy fixture, telemetry on. */
const sharedStdio = sharedOnce(
  async (collector) => ({ collector, connection: await connect('legacy', { env: otelEnv(collector) }) }),
  ({ connection }) => connection.close(),
);

/** One HTTP gateway in front of the legacy fixture, telemetry on. */
const sharedGateway = sharedOnce(
  async (collector) => ({
    collector,
    gateway: await Gateway.start([process.execPath, FIXTURES.legacy], [], otelEnv(collector)),
  }),
  ({ gateway }) => gateway.stop(),
);

async function stdioClient(env: Record<string, string>, upstream?: string[]): Promise<Connection> {
  const connection = await connect('legacy', {
    env: { NODE_OPTIONS: `--import=${WATCH}`, ...env },
    ...(upstream === undefined ? {} : { upstream }),
  });
  cleanups.push(() => connection.close());
  return connection;
}

describe('telemetry off', () => {
  it('loads no OpenTelemetry module, where on the same call loads them', async () => {
    const off = await stdioClient({});
    const result = await off.client.callTool({ name: 'echo', arguments: { text: 'hi' } });
    expect(textOf(result)).toBe('hi');
    await off.client.ping();
    expect(off.stderr()).not.toContain('otel-watch');

    const collector = await receiver();
    const on = await stdioClient(otelEnv(collector));
    await on.client.callTool({ name: 'echo', arguments: { text: 'hi' } });
    expect(on.stderr()).toContain('otel-watch: resolved @opentelemetry/api');
    expect(on.stderr()).toContain('otel-watch: resolved @opentelemetry/sdk-metrics');
    expect(on.stderr()).toContain('otel-watch: resolved @opentelemetry/exporter-metrics-otlp-http');
  });

  it('OTEL_METRICS_EXPORTER=none: traces, and no metrics exporter loaded', async () => {
    const collector = await receiver();
    const { client, stderr } = await stdioClient(otelEnv(collector, { OTEL_METRICS_EXPORTER: 'none' }));
    await client.callTool({ name: 'echo', arguments: { text: 'x' }, _meta: { traceparent: TRACEPARENT } });
    await collector.until((spans) => gatewayPair(spans, 'tools/call echo'));
    expect(stderr()).toContain('otel-watch: resolved @opentelemetry/exporter-trace-otlp-http');
    expect(stderr()).not.toContain('exporter-metrics-otlp');
    expect(collector.paths).not.toContain('/v1/metrics');
  });
});

describe('a trace through taskgate', () => {
  it('stdio, 2025 client: SERVER span child of the caller, CLIENT span its child, both with the conventions', async () => {
    const {
      collector,
      connection: { client },
    } = await sharedStdio();
    const result = await client.callTool({
      name: 'echo',
      arguments: { text: 'traced' },
      _meta: { traceparent: TRACEPARENT },
    });
    expect(textOf(result)).toBe('traced');
    const [server, upstream] = await collector.until((spans) => gatewayPair(spans, 'tools/call echo'));
    expect(server.parentSpanId).toBe(CALLER_SPAN);
    expect(server.service).toBe('taskgate-under-test');
    expect(server.attributes).toMatchObject({
      'mcp.method.name': 'tools/call',
      'gen_ai.tool.name': 'echo',
      'gen_ai.operation.name': 'execute_tool',
      'mcp.protocol.version': '2025-11-25',
      'network.transport': 'pipe',
    });
    expect(typeof server.attributes['jsonrpc.request.id']).toBe('string');
    expect(server.attributes).not.toHaveProperty('error.type');
    expect(upstream.attributes).toMatchObject({
      'mcp.method.name': 'tools/call',
      'network.transport': 'pipe',
    });
    expect(server.attributes).not.toHaveProperty('gen_ai.tool.call.arguments');
  });

  it('an isError result is error.type tool_error; a JSON-RPC error its code', async () => {
    const {
      collector,
      connection: { client },
    } = await sharedStdio();
    await client.callTool({
      name: 'fail',
      arguments: { message: 'no' },
      _meta: { traceparent: TRACEPARENT },
    });
    await client
      .callTool({
        name: 'throw',
        arguments: { code: -32050, message: 'thrown' },
        _meta: { traceparent: TRACEPARENT },
      })
      .catch(() => undefined);
    const [failed] = await collector.until((spans) => gatewayPair(spans, 'tools/call fail'));
    expect(failed.attributes['error.type']).toBe('tool_error');
    expect(failed.status.code).toBe(2);
    const [thrown] = await collector.until((spans) => gatewayPair(spans, 'tools/call throw'));
    expect(thrown.attributes).toMatchObject({ 'error.type': '-32050', 'rpc.response.status_code': '-32050' });
    expect(thrown.status.message).toBe('thrown');
  });

  it('the upstream joins the trace: a second taskgate behind the first gets the first one CLIENT span as parent', async () => {
    const collector = await receiver();
    const { client } = await stdioClient(otelEnv(collector), [
      process.execPath,
      TASKGATE,
      '--',
      process.execPath,
      FIXTURES.legacy,
    ]);
    await client.callTool({ name: 'echo', arguments: { text: 'x' }, _meta: { traceparent: TRACEPARENT } });
    const chain = await collector.until((spans) => {
      const outer = spans.find(
        (s) => s.kind === SERVER && s.name === 'tools/call echo' && s.parentSpanId === CALLER_SPAN,
      );
      const sent = spans.find((s) => s.kind === CLIENT && s.parentSpanId === outer?.spanId);
      const inner = spans.find((s) => s.kind === SERVER && s.parentSpanId === sent?.spanId);
      const last = spans.find((s) => s.kind === CLIENT && s.parentSpanId === inner?.spanId);
      return last === undefined ? undefined : [outer, sent, inner, last];
    });
    for (const span of chain) expect(span!.traceId).toBe(TRACE_ID);
  });

  it('HTTP gateway, 2025 client: the traceparent header is the parent, and the span names the session', async () => {
    const { collector, gateway } = await sharedGateway();
    const client = new Client({ name: 'otel-test', version: '1' });
    await client.connect(
      httpTransport(gateway.url, { requestInit: { headers: { traceparent: TRACEPARENT } } }),
    );
    cleanups.push(() => client.close());
    await client.callTool({ name: 'echo', arguments: { text: 'over http' } });
    const [server, upstream] = await collector.until((spans) => gatewayPair(spans, 'tools/call echo'));
    expect(server.parentSpanId).toBe(CALLER_SPAN);
    expect(server.attributes).toMatchObject({ 'network.transport': 'tcp', 'network.protocol.name': 'http' });
    expect(typeof server.attributes['mcp.session.id']).toBe('string');
    expect(upstream.attributes['network.transport']).toBe('pipe');
  });

  it('HTTP gateway, 2025 client, a task-augmented call: the task span is the child of the tools/call span the traceparent header is the parent of, and tasks/result links to it', async () => {
    const { collector, gateway } = await sharedGateway();
    const client = new Client({ name: 'otel-test', version: '1' }, { capabilities: TASK_AWARE });
    await client.connect(
      httpTransport(gateway.url, { requestInit: { headers: { traceparent: TRACEPARENT } } }),
    );
    cleanups.push(() => client.close());
    const { task } = await client.request(
      { method: 'tools/call', params: { name: 'sleep', arguments: { ms: 50 }, task: { ttl: 60_000 } } },
      CreateTaskResultSchema,
    );
    await client.request({ method: 'tasks/result', params: { taskId: task.taskId } }, CallToolResultSchema);
    const [call, life, result] = await collector.until((spans) => {
      const call = spans.find((s) => s.kind === SERVER && s.name === 'tools/call sleep');
      const life = spans.find((s) => s.kind === INTERNAL && s.attributes['mcp.task.id'] === task.taskId);
      const result = spans.find((s) => s.kind === SERVER && s.name === 'tasks/result');
      return call && life && result ? [call, life, result] : undefined;
    });
    expect(call.parentSpanId).toBe(CALLER_SPAN);
    expect(call.attributes).toMatchObject({ 'network.transport': 'tcp', 'mcp.task.id': task.taskId });
    expect(life.parentSpanId).toBe(call.spanId);
    expect(life.traceId).toBe(TRACE_ID);
    expect(life.events.map((event) => event.attributes['mcp.task.status'])).toEqual(['working', 'completed']);
    expect(result.attributes['mcp.session.id']).toBe(call.attributes['mcp.session.id']);
    expect(result.links).toContainEqual(expect.objectContaining({ spanId: life.spanId }));
  });

  it('sidecar (--upstream-url): the CLIENT span to the HTTP upstream is the parent the server is given in _meta, as the conventions say', async () => {
    const collector = await receiver();
    const fixture = await startHttpFixture('legacy', { env: { FIXTURE_REPORT: '1' } });
    cleanups.push(() => fixture.stop());
    const gateway = await Gateway.start([], ['--upstream-url', fixture.url], otelEnv(collector));
    cleanups.push(() => gateway.stop());
    const client = new Client({ name: 'otel-test', version: '1' });
    await client.connect(httpTransport(gateway.url));
    cleanups.push(() => client.close());
    await client.callTool({
      name: 'echo',
      arguments: { text: 'sidecar' },
      _meta: { traceparent: TRACEPARENT },
    });
    const [, upstream] = await collector.until((spans) => gatewayPair(spans, 'tools/call echo'));
    expect(upstream.attributes).toMatchObject({
      'network.transport': 'tcp',
      'server.address': '127.0.0.1',
      'server.port': fixture.port,
    });
    await fixture.logged(`"traceparent":"00-${TRACE_ID}-${upstream.spanId}-01"`);
  });

  it('2026-07-28 client, stdio and HTTP: _meta traceparent is the parent, and no mcp.session.id', async () => {
    const collector = await receiver();
    const gateway = await Gateway.start([process.execPath, FIXTURES.legacy], [], otelEnv(collector));
    cleanups.push(() => gateway.stop());
    const overHttp = await connectModern({ url: gateway.url });
    cleanups.push(() => overHttp.close());
    const onStdio = await connectModern(
      { command: [process.execPath, TASKGATE, '--', process.execPath, FIXTURES.legacy] },
      { env: otelEnv(collector), probe: 'in-place' },
    );
    cleanups.push(() => onStdio.close());
    for (const [connection, transport] of [
      [overHttp, 'tcp'],
      [onStdio, 'pipe'],
    ] as const) {
      const result = await connection.client.callTool({
        name: 'echo',
        arguments: { text: transport },
        _meta: { traceparent: TRACEPARENT },
      });
      expect(textOf(result)).toBe(transport);
      const [server, upstream] = await collector.until((spans) => {
        const server = spans.find(
          (s) =>
            s.kind === SERVER &&
            s.name === 'tools/call echo' &&
            s.attributes['network.transport'] === transport,
        );
        const upstream = spans.find((s) => s.kind === CLIENT && s.parentSpanId === server?.spanId);
        return upstream === undefined ? undefined : [server!, upstream];
      });
      expect(server.traceId).toBe(TRACE_ID);
      expect(server.parentSpanId).toBe(CALLER_SPAN);
      expect(server.attributes['mcp.protocol.version']).toBe(MODERN_VERSION);
      expect(server.attributes).not.toHaveProperty('mcp.session.id');
      expect(upstream.traceId).toBe(TRACE_ID);
    }
  });

  it('2026-07-28 client, sidecar (--upstream-url): _meta traceparent the parent, no mcp.session.id, and the CLIENT span the parent the HTTP upstream is given', async () => {
    const collector = await receiver();
    const fixture = await startHttpFixture('legacy', { env: { FIXTURE_REPORT: '1' } });
    cleanups.push(() => fixture.stop());
    const gateway = await Gateway.start([], ['--upstream-url', fixture.url], otelEnv(collector));
    cleanups.push(() => gateway.stop());
    const modern = await connectModern({ url: gateway.url });
    cleanups.push(() => modern.close());
    const result = await modern.client.callTool({
      name: 'echo',
      arguments: { text: 'modern sidecar' },
      _meta: { traceparent: TRACEPARENT },
    });
    expect(textOf(result)).toBe('modern sidecar');
    const [server, upstream] = await collector.until((spans) => gatewayPair(spans, 'tools/call echo'));
    expect(server.parentSpanId).toBe(CALLER_SPAN);
    expect(server.attributes).toMatchObject({
      'mcp.method.name': 'tools/call',
      'mcp.protocol.version': MODERN_VERSION,
      'gen_ai.tool.name': 'echo',
      'gen_ai.operation.name': 'execute_tool',
      'network.transport': 'tcp',
      'network.protocol.name': 'http',
    });
    expect(server.attributes).not.toHaveProperty('mcp.session.id');
    expect(upstream.attributes).toMatchObject({
      'network.transport': 'tcp',
      'server.address': '127.0.0.1',
      'server.port': fixture.port,
    });
    await fixture.logged(`"traceparent":"00-${TRACE_ID}-${upstream.spanId}-01"`);
  });

  it('http/protobuf: the official protobuf exporter sends the trace', async () => {
    const collector = await receiver();
    const { client } = await stdioClient(
      otelEnv(collector, { OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf' }),
    );
    await client.callTool({ name: 'echo', arguments: { text: 'pb' }, _meta: { traceparent: TRACEPARENT } });
    const traceBytes = Buffer.from(TRACE_ID, 'hex');
    await collector.until((): true | undefined =>
      collector.protobufBodies.some((body) => body.includes(traceBytes) && body.includes('tools/call echo'))
        ? true
        : undefined,
    );
  });
});

describe('a span for a task life', () => {
  it('from creation to completed, each status an event, tasks/result linked to it', async () => {
    const {
      collector,
      connection: { client },
    } = await sharedStdio();
    const created = await client.request(
      {
        method: 'tools/call',
        params: {
          name: 'sleep',
          arguments: { ms: 50 },
          task: { ttl: 60_000 },
          _meta: { traceparent: TRACEPARENT },
        },
      },
      (await import('@modelcontextprotocol/sdk/types.js')).CreateTaskResultSchema,
    );
    const taskId = created.task.taskId;
    await client.request(
      { method: 'tasks/result', params: { taskId } },
      (await import('@modelcontextprotocol/sdk/types.js')).CallToolResultSchema,
    );
    const task = await collector.until((spans) =>
      spans.find((s) => s.kind === INTERNAL && s.attributes['mcp.task.id'] === taskId),
    );
    expect(task.name).toBe('task sleep');
    expect(task.traceId).toBe(TRACE_ID);
    expect(task.attributes).toMatchObject({ 'mcp.task.status': 'completed', 'mcp.task.ttl': 60_000 });
    expect(task.events.map((event) => event.attributes['mcp.task.status'])).toEqual(['working', 'completed']);
    const result = await collector.until((spans) =>
      spans.find(
        (s) => s.kind === SERVER && s.name === 'tasks/result' && s.attributes['mcp.task.id'] === taskId,
      ),
    );
    expect(result.links).toContainEqual(expect.objectContaining({ traceId: TRACE_ID, spanId: task.spanId }));
  });
});

describe('several servers behind one endpoint (issue 32)', () => {
  it('the SERVER and CLIENT spans of a request routed to a server, and the span of a task run for it, name that server', async () => {
    const collector = await receiver();
    const config = join(mkdtempSync(join(tmpdir(), 'taskgate-otel-')), 'servers.json');
    const legacy = { command: process.execPath, args: [FIXTURES.legacy] };
    writeFileSync(config, JSON.stringify({ upstreams: { alpha: legacy, beta: legacy } }));
    const { client } = await connect('legacy', {
      upstream: [],
      flags: ['--config', config],
      env: otelEnv(collector),
    });
    cleanups.push(() => client.close());
    for (const server of ['alpha', 'beta']) {
      const result = await client.callTool({ name: `${server}__echo`, arguments: { text: server } });
      expect(textOf(result)).toBe(server);
    }
    const calls = await collector.until((spans) => {
      const found = spans.filter((s) => s.kind === CLIENT && s.name === 'tools/call echo');
      return found.length === 2 ? found : undefined;
    });
    expect(calls.map((span) => span.attributes['taskgate.server']).sort()).toEqual(['alpha', 'beta']);
    const served = await collector.until((spans) =>
      spans.find((s) => s.kind === SERVER && s.name === 'tools/call alpha__echo'),
    );
    expect(served.attributes['taskgate.server']).toBe('alpha');
    const { task } = await client.request(
      { method: 'tools/call', params: { name: 'beta__sleep', arguments: { ms: 10 }, task: {} } },
      CreateTaskResultSchema,
    );
    await client.request({ method: 'tasks/result', params: { taskId: task.taskId } }, CallToolResultSchema);
    const taskSpan = await collector.until((spans) =>
      spans.find((s) => s.kind === INTERNAL && s.name === 'task sleep'),
    );
    expect(taskSpan.attributes['taskgate.server']).toBe('beta');
    const result = await collector.until((spans) =>
      spans.find((s) => s.kind === SERVER && s.name === 'tasks/result'),
    );
    expect(result.attributes['taskgate.server']).toBe('beta');
  });
});

describe('an exporter that is down', () => {
  for (const behaviour of ['refuse', 'hang'] as const) {
    it(`that ${behaviour}s changes nothing for the client`, async () => {
      const collector = await receiver(behaviour);
      const { client } = await stdioClient(otelEnv(collector));
      for (let i = 0; i < 20; i++) {
        const started = Date.now();
        const result = await client.callTool({ name: 'echo', arguments: { text: `call ${i}` } });
        expect(textOf(result)).toBe(`call ${i}`);
        expect(Date.now() - started).toBeLessThan(1_000);
      }
      // The exporter was tried (and failed or hung) while the calls went on.
      await collector.posted(1);
      const started = Date.now();
      await client.callTool({ name: 'echo', arguments: { text: 'after' } });
      expect(Date.now() - started).toBeLessThan(1_000);
    });
  }
});

describe.skipIf(!redis)('a task across two replicas on one Redis', () => {
  const REPLICAS = fileURLToPath(new URL('../../config/replicas.yaml', import.meta.url));

  async function replica(collector: OtlpReceiver, prefix: string, name: string): Promise<Client> {
    const flags = ['--config', REPLICAS, '--store', redis!.url, '--store-key-prefix', prefix];
    const env = {
      ...otelEnv(collector, { OTEL_SERVICE_NAME: name }),
      TASKGATE_STORE_CURSOR_SECRET: 'the cursor secret of both replicas',
    };
    const gateway = await Gateway.start([process.execPath, FIXTURES.legacy], flags, env);
    cleanups.push(() => gateway.stop());
    const client = new Client({ name: `client of ${name}`, version: '1' }, { capabilities: TASK_AWARE });
    await client.connect(httpTransport(gateway.url));
    cleanups.push(() => client.close());
    return client;
  }

  it('the task span is the creating replica one: the other one links its tasks/* spans to it from the record, and the creator ends it when the other cancels', async () => {
    const collector = await receiver();
    const prefix = freshPrefix();
    const onA = await replica(collector, prefix, 'replica-a');
    const onB = await replica(collector, prefix, 'replica-b');
    const { task } = await onA.request(
      {
        method: 'tools/call',
        params: {
          name: 'sleep',
          arguments: { ms: 60_000 },
          task: { ttl: 60_000 },
          _meta: { traceparent: TRACEPARENT },
        },
      },
      CreateTaskResultSchema,
    );
    const { taskId } = task;
    expect((await onB.request({ method: 'tasks/get', params: { taskId } }, GetTaskResultSchema)).status).toBe(
      'working',
    );
    await onB.request({ method: 'tasks/cancel', params: { taskId } }, CancelTaskResultSchema);

    const life = await collector.until((spans) =>
      spans.find((s) => s.kind === INTERNAL && s.attributes['mcp.task.id'] === taskId),
    );
    expect(life.service).toBe('replica-a');
    expect(life.traceId).toBe(TRACE_ID);
    expect(life.attributes['mcp.task.status']).toBe('cancelled');
    expect(life.events.map((event) => event.attributes['mcp.task.status'])).toEqual(['working', 'cancelled']);
    for (const method of ['tasks/get', 'tasks/cancel']) {
      const served = await collector.until((spans) =>
        spans.find((s) => s.kind === SERVER && s.name === method && s.attributes['mcp.task.id'] === taskId),
      );
      expect(served.service).toBe('replica-b');
      expect(served.traceId).not.toBe(TRACE_ID);
      expect(served.links).toContainEqual(
        expect.objectContaining({ traceId: TRACE_ID, spanId: life.spanId }),
      );
    }
  });

  it('tasks/result on the other replica, waiting for the task to end, links to the task span', async () => {
    const collector = await receiver();
    const prefix = freshPrefix();
    const onA = await replica(collector, prefix, 'replica-a');
    const onB = await replica(collector, prefix, 'replica-b');
    const { task } = await onA.request(
      { method: 'tools/call', params: { name: 'sleep', arguments: { ms: 300 }, task: { ttl: 60_000 } } },
      CreateTaskResultSchema,
    );
    await onB.request({ method: 'tasks/result', params: { taskId: task.taskId } }, CallToolResultSchema);
    const [life, result] = await collector.until((spans) => {
      const life = spans.find((s) => s.kind === INTERNAL && s.attributes['mcp.task.id'] === task.taskId);
      const result = spans.find(
        (s) => s.kind === SERVER && s.name === 'tasks/result' && s.attributes['mcp.task.id'] === task.taskId,
      );
      return life && result ? [life, result] : undefined;
    });
    expect(life.service).toBe('replica-a');
    expect(life.attributes['mcp.task.status']).toBe('completed');
    expect(result.service).toBe('replica-b');
    expect(result.links).toContainEqual(expect.objectContaining({ spanId: life.spanId }));
  });
});

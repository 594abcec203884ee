/**
 * Server-to-client requests in the trace (issue 30): the elicitation or sampling request a server sends
 * during a tool call is, through the built taskgate, a SERVER span (taskgate receiving it from the server)
 * child of taskgate's CLIENT span of the call, and its CLIENT span (taskgate asking the client) the child of
 * that, all in the caller's trace: over stdio, where nothing on the wire ties the request to the call, and
 * over Streamable HTTP, where the call's stream carries it. For a 2026-07-28 client the same request is an
 * MRTR round: the call's first answer is `input_required` (its span says so), and the retry that brings
 * the client's input links to the server's request it answers.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  CallToolResultSchema,
  CreateMessageRequestSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { connect, FIXTURES, Gateway, TASKGATE } from '../helpers/taskgate.js';
import { connectModern, type ModernConnection } from '../helpers/modern-client.js';
import { httpTransport } from '../helpers/http-client.js';
import { startHttpFixture } from '../helpers/http-fixture.js';
import type { OtlpReceiver } from '../helpers/otlp-receiver.js';
import { CLIENT, SERVER, type ReceivedSpan, receiverStoppedBy } from '../helpers/otlp-receiver.js';
import { textOf } from '../helpers/tool-results.js';

// Each test starts processes that load the OTel SDK: on a loaded shared machine that alone takes seconds.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

const TRACE_ID = '5bf92f3577b34da6a3ce929d0e0e4737';
const CALLER_SPAN = '10f067aa0ba902b8';
const TRACEPARENT = `00-${TRACE_ID}-${CALLER_SPAN}-01`;

const otelEnv = (collector: OtlpReceiver): Record<string, string> => ({
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${collector.url}/v1/traces`,
  OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
  OTEL_BSP_SCHEDULE_DELAY: '50',
});

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const receiver = (): Promise<OtlpReceiver> => receiverStoppedBy(cleanups);

const CAPABILITIES = { elicitation: { form: {} }, sampling: {} };

function answerAsTheClient(client: Client): void {
  client.setRequestHandler(ElicitRequestSchema, () => ({
    action: 'accept',
    content: { answer: 'forty-two' },
  }));
  client.setRequestHandler(CreateMessageRequestSchema, () => ({
    role: 'assistant',
    model: 'test-model',
    content: { type: 'text', text: 'sampled' },
  }));
}

/**
 * The chain of one call in the caller's trace: taskgate's SERVER span of the call, its CLIENT span to the
 * server, the SERVER span of the server's `inner` request, and the CLIENT span of it to the client.
 */
function chainOf(spans: ReceivedSpan[], tool: string, inner: string): ReceivedSpan[] | undefined {
  const call = spans.find(
    (s) => s.kind === SERVER && s.name === `tools/call ${tool}` && s.parentSpanId === CALLER_SPAN,
  );
  const upstream = spans.find(
    (s) => s.kind === CLIENT && s.name === `tools/call ${tool}` && s.parentSpanId === call?.spanId,
  );
  const received = spans.find(
    (s) => s.kind === SERVER && s.name === inner && s.parentSpanId === upstream?.spanId,
  );
  const asked = spans.find(
    (s) => s.kind === CLIENT && s.name === inner && s.parentSpanId === received?.spanId,
  );
  return asked === undefined ? undefined : [call!, upstream!, received!, asked];
}

describe('server-to-client requests in the trace of the call they come during', () => {
  for (const [tool, args, inner] of [
    ['elicit', { message: 'what?' }, 'elicitation/create'],
    ['sample', { prompt: 'say' }, 'sampling/createMessage'],
  ] as const) {
    it(`stdio, 2025 client: ${inner} of a tools/call ${tool}`, async () => {
      const collector = await receiver();
      const connection = await connect('legacy', { env: otelEnv(collector), capabilities: CAPABILITIES });
      cleanups.push(() => connection.close());
      answerAsTheClient(connection.client);
      const result = await connection.client.callTool({
        name: tool,
        arguments: args,
        _meta: { traceparent: TRACEPARENT },
      });
      expect(textOf(result)).toMatch(/forty-two|sampled/);
      const chain = await collector.until((spans) => chainOf(spans, tool, inner));
      for (const span of chain) expect(span.traceId).toBe(TRACE_ID);
      const [, , received, asked] = chain;
      expect(received!.attributes).toMatchObject({ 'mcp.method.name': inner, 'network.transport': 'pipe' });
      expect(asked!.attributes).toMatchObject({ 'mcp.method.name': inner, 'network.transport': 'pipe' });
      expect(received!.status.code ?? 0).toBe(0);
      // Answered by the client's own response, not from another request: nothing links to it.
      expect(collector.spans.filter((s) => s.links.some((link) => link.spanId === received!.spanId))).toEqual(
        [],
      );
    });
  }

  it('stdio, 2025 client, the call a task: the elicitation of the task run is in the trace, the task span goes input_required and back', async () => {
    const collector = await receiver();
    const connection = await connect('legacy', { env: otelEnv(collector) });
    cleanups.push(() => connection.close());
    answerAsTheClient(connection.client);
    const { task } = await connection.client.request(
      {
        method: 'tools/call',
        params: {
          name: 'elicit',
          arguments: { message: 'what?' },
          task: { ttl: 60_000 },
          _meta: { traceparent: TRACEPARENT },
        },
      },
      CreateTaskResultSchema,
    );
    const result = await connection.client.request(
      { method: 'tasks/result', params: { taskId: task.taskId } },
      CallToolResultSchema,
    );
    expect(textOf(result)).toContain('forty-two');
    const [chain, life] = await collector.until((spans) => {
      const chain = chainOf(spans, 'elicit', 'elicitation/create');
      const life = spans.find((s) => s.attributes['mcp.task.id'] === task.taskId && s.name === 'task elicit');
      return chain && life ? ([chain, life] as const) : undefined;
    });
    for (const span of [...chain, life]) expect(span.traceId).toBe(TRACE_ID);
    expect(life.events.map((event) => event.attributes['mcp.task.status'])).toEqual([
      'working',
      'input_required',
      'working',
      'completed',
    ]);
  });

  it('sidecar in front of an HTTP server, 2025 client: the elicitation the call stream carries', async () => {
    const collector = await receiver();
    const fixture = await startHttpFixture('legacy');
    cleanups.push(() => fixture.stop());
    const gateway = await Gateway.start([], ['--upstream-url', fixture.url], otelEnv(collector));
    cleanups.push(() => gateway.stop());
    const client = new Client({ name: 'otel-input-test', version: '1' }, { capabilities: CAPABILITIES });
    answerAsTheClient(client);
    await client.connect(httpTransport(gateway.url));
    cleanups.push(() => client.close());
    // A second call in flight meanwhile: on HTTP the stream, not being alone, says which call asks.
    const other = client.callTool({
      name: 'sleep',
      arguments: { ms: 300 },
      _meta: { traceparent: TRACEPARENT },
    });
    await client.callTool({
      name: 'elicit',
      arguments: { message: 'what?' },
      _meta: { traceparent: TRACEPARENT },
    });
    await other;
    const [, upstream, received] = await collector.until((spans) =>
      chainOf(spans, 'elicit', 'elicitation/create'),
    );
    expect(upstream!.attributes).toMatchObject({ 'network.transport': 'tcp', 'gen_ai.tool.name': 'elicit' });
    expect(received!.attributes).toMatchObject({ 'network.transport': 'tcp', 'server.address': '127.0.0.1' });
  });

  for (const front of ['HTTP', 'stdio'] as const) {
    it(`2026-07-28 client over ${front}: an MRTR round, input_required on the first answer, and the retry linked to the elicitation it answers`, async () => {
      const collector = await receiver();
      const onElicit = () => ({ action: 'accept' as const, content: { answer: 'forty-two' } });
      const upstream = [process.execPath, FIXTURES.legacy];
      let connection: ModernConnection;
      if (front === 'HTTP') {
        const gateway = await Gateway.start(upstream, [], otelEnv(collector));
        cleanups.push(() => gateway.stop());
        connection = await connectModern({ url: gateway.url }, { onElicit });
      } else {
        connection = await connectModern(
          { command: [process.execPath, TASKGATE, '--', ...upstream] },
          { onElicit, env: otelEnv(collector), probe: 'in-place' },
        );
      }
      cleanups.push(() => connection.close());
      const result = await connection.client.callTool({
        name: 'elicit',
        arguments: { message: 'what?' },
        _meta: { traceparent: TRACEPARENT },
      });
      expect(textOf(result)).toContain('forty-two');
      const [round, retry, received] = await collector.until((spans) => {
        const round = spans.find(
          (s) => s.kind === SERVER && s.name === 'tools/call elicit' && s.parentSpanId === CALLER_SPAN,
        );
        const upstream = spans.find(
          (s) => s.kind === CLIENT && s.name === 'tools/call elicit' && s.parentSpanId === round?.spanId,
        );
        const received = spans.find(
          (s) => s.kind === SERVER && s.name === 'elicitation/create' && s.parentSpanId === upstream?.spanId,
        );
        const retry = spans.find(
          (s) =>
            s.kind === SERVER &&
            s.name === 'tools/call elicit' &&
            s.links.some((link) => link.spanId === received?.spanId),
        );
        return retry === undefined ? undefined : [round!, retry, received!];
      });
      expect(round.traceId).toBe(TRACE_ID);
      expect(received.traceId).toBe(TRACE_ID);
      expect(round.attributes).toMatchObject({
        'mcp.result.type': 'input_required',
        'mcp.input_request.methods': ['elicitation/create'],
      });
      expect(retry.spanId).not.toBe(round.spanId);
      expect(retry.attributes).not.toHaveProperty('mcp.result.type');
    });
  }
});

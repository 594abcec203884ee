/**
 * What taskgate's spans leave out and what decides whether there are any (issue 30), through the built
 * taskgate and a real OTLP/HTTP receiver: no tool arguments, results, bearer tokens or caller identities
 * in any span; the sampler of the standard environment (OTEL_TRACES_SAMPLER, default
 * parentbased_always_on) decides, and a trace not sampled reaches the upstream still marked not sampled.
 * Each "nothing exported" is judged after taskgate has stopped, which exports what it has before exiting.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { FIXTURES, Gateway, TASK_AWARE } from '../helpers/taskgate.js';
import { httpTransport } from '../helpers/http-client.js';
import { startHttpFixture } from '../helpers/http-fixture.js';
import type { OtlpReceiver } from '../helpers/otlp-receiver.js';
import { SERVER, otlpEnv, type ReceivedSpan, receiverStoppedBy } from '../helpers/otlp-receiver.js';
import { textOf } from '../helpers/tool-results.js';

// Each test starts processes that load the OTel SDK: on a loaded shared machine that alone takes seconds.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

const TRACE_ID = '6bf92f3577b34da6a3ce929d0e0e4738';
const CALLER_SPAN = '20f067aa0ba902b9';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const receiver = (): Promise<OtlpReceiver> => receiverStoppedBy(cleanups);

async function gateway(upstream: string[], flags: string[], env: Record<string, string>): Promise<Gateway> {
  const started = await Gateway.start(upstream, flags, env);
  cleanups.push(() => started.stop());
  return started;
}

async function client(url: URL, headers: Record<string, string> = {}): Promise<Client> {
  const connected = new Client({ name: 'otel-privacy', version: '1' }, { capabilities: TASK_AWARE });
  await connected.connect(httpTransport(url, { requestInit: { headers } }));
  cleanups.push(() => connected.close());
  return connected;
}

/** Every string a span carries: its name, status, attributes and those of its events. */
function textsOf(span: ReceivedSpan): string[] {
  const values = [
    span.name,
    span.status.message ?? '',
    ...Object.values(span.attributes),
    ...span.events.flatMap((event) => [event.name, ...Object.values(event.attributes)]),
  ];
  return values.map((value) => JSON.stringify(value));
}

describe('privacy', () => {
  it('no tool arguments, results, bearer token or subject in any span, the task span included', async () => {
    const TOKEN = 'token-of-the-caller-0123456789';
    const SUBJECT = 'subject-of-the-caller';
    const ARGUMENT = 'argument-nobody-may-read';
    const config = join(mkdtempSync(join(tmpdir(), 'taskgate-otel-privacy-')), 'config.yaml');
    writeFileSync(config, `auth:\n  tokens:\n    - { token: ${TOKEN}, subject: ${SUBJECT} }\n`);
    const collector = await receiver();
    const served = await gateway(
      [process.execPath, FIXTURES.legacy],
      ['--config', config],
      otlpEnv(collector),
    );
    const caller = await client(served.url, {
      authorization: `Bearer ${TOKEN}`,
      traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01`,
    });
    const plain = await caller.callTool({ name: 'echo', arguments: { text: ARGUMENT } });
    expect(textOf(plain)).toBe(ARGUMENT);
    const { task } = await caller.request(
      {
        method: 'tools/call',
        params: { name: 'echo', arguments: { text: ARGUMENT }, task: { ttl: 60_000 } },
      },
      CreateTaskResultSchema,
    );
    const result = await caller.request(
      { method: 'tasks/result', params: { taskId: task.taskId } },
      CallToolResultSchema,
    );
    expect(textOf(result)).toBe(ARGUMENT);
    await served.stop();

    const spans = collector.spans.filter((span) => span.traceId === TRACE_ID);
    // The two calls, each forwarded, the task's span, tasks/result: what the search below went through.
    expect(spans.filter((span) => span.name === 'tools/call echo').length).toBeGreaterThanOrEqual(4);
    expect(spans.some((span) => span.attributes['mcp.task.id'] === task.taskId && span.kind === 1)).toBe(
      true,
    );
    expect(spans.some((span) => span.name === 'tasks/result')).toBe(true);
    for (const span of collector.spans) {
      for (const text of textsOf(span)) {
        expect(text).not.toContain(ARGUMENT);
        expect(text).not.toContain(TOKEN);
        expect(text).not.toContain(SUBJECT);
      }
      expect(span.attributes).not.toHaveProperty('gen_ai.tool.call.arguments');
      expect(span.attributes).not.toHaveProperty('gen_ai.tool.call.result');
    }
  });
});

describe('the opt-in tool content (telemetry.toolContent)', () => {
  it('on, the tools/call spans carry gen_ai.tool.call.arguments and, for a call that succeeded, gen_ai.tool.call.result, as JSON', async () => {
    const config = join(mkdtempSync(join(tmpdir(), 'taskgate-otel-content-')), 'config.yaml');
    writeFileSync(config, 'telemetry:\n  toolContent: true\n');
    const collector = await receiver();
    const served = await gateway(
      [process.execPath, FIXTURES.legacy],
      ['--config', config],
      otlpEnv(collector),
    );
    const caller = await client(served.url, { traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01` });
    await caller.callTool({ name: 'echo', arguments: { text: 'shown' } });
    await caller.callTool({ name: 'fail', arguments: { message: 'no' } });
    const echo = await collector.until((spans) => {
      const found = spans.filter((s) => s.name === 'tools/call echo' && s.traceId === TRACE_ID);
      return found.length === 2 ? found : undefined;
    });
    for (const span of echo) {
      expect(JSON.parse(String(span.attributes['gen_ai.tool.call.arguments']))).toEqual({ text: 'shown' });
      expect(JSON.parse(String(span.attributes['gen_ai.tool.call.result']))).toEqual({
        content: [{ type: 'text', text: 'shown' }],
      });
    }
    const failed = await collector.until((spans) => spans.find((s) => s.name === 'tools/call fail'));
    expect(failed.attributes).toHaveProperty('gen_ai.tool.call.arguments');
    expect(failed.attributes).not.toHaveProperty('gen_ai.tool.call.result');
  });
});

describe('the sampler of the standard environment', () => {
  /** The sidecar in front of an HTTP server that logs the `_meta` of each request it gets. */
  async function sidecar(
    collector: OtlpReceiver,
    env: Record<string, string>,
  ): Promise<{ served: Gateway; upstreamGot: (flags: string) => Promise<void> }> {
    const fixture = await startHttpFixture('legacy', { env: { FIXTURE_REPORT: '1' } });
    cleanups.push(() => fixture.stop());
    const served = await gateway([], ['--upstream-url', fixture.url], otlpEnv(collector, env));
    return {
      served,
      upstreamGot: (flags) =>
        fixture.logged(`"traceparent":"00-${TRACE_ID}-`, 10_000).then(() => {
          const sent = new RegExp(`"traceparent":"00-${TRACE_ID}-[0-9a-f]{16}-(\\d\\d)"`).exec(
            fixture.stderr(),
          );
          expect(sent?.[1]).toBe(flags);
        }),
    };
  }

  it('by default (parentbased_always_on) a caller that does not sample gets no span, and the upstream is told not to sample', async () => {
    const collector = await receiver();
    const { served, upstreamGot } = await sidecar(collector, {});
    const caller = await client(served.url);
    await caller.callTool({
      name: 'echo',
      arguments: { text: 'x' },
      _meta: { traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-00` },
    });
    await upstreamGot('00');
    // A call of its own, sampled, shows the exporter works: only the unsampled trace is missing.
    await caller.callTool({ name: 'echo', arguments: { text: 'y' } });
    await served.stop();
    expect(collector.spans.some((span) => span.kind === SERVER && span.name === 'tools/call echo')).toBe(
      true,
    );
    expect(collector.spans.filter((span) => span.traceId === TRACE_ID)).toEqual([]);
  });

  it('OTEL_TRACES_SAMPLER=always_on traces the same call, and the upstream is told to sample', async () => {
    const collector = await receiver();
    const { served, upstreamGot } = await sidecar(collector, { OTEL_TRACES_SAMPLER: 'always_on' });
    const caller = await client(served.url);
    await caller.callTool({
      name: 'echo',
      arguments: { text: 'x' },
      _meta: { traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-00` },
    });
    await upstreamGot('01');
    const server = await collector.until((spans) =>
      spans.find((s) => s.kind === SERVER && s.name === 'tools/call echo' && s.traceId === TRACE_ID),
    );
    expect(server.parentSpanId).toBe(CALLER_SPAN);
  });

  it('OTEL_TRACES_SAMPLER=always_off: no span at all, and the calls are answered', async () => {
    const collector = await receiver();
    const { served, upstreamGot } = await sidecar(collector, {
      OTEL_TRACES_SAMPLER: 'always_off',
      OTEL_METRIC_EXPORT_INTERVAL: '100',
    });
    const caller = await client(served.url);
    const result = await caller.callTool({
      name: 'echo',
      arguments: { text: 'off' },
      _meta: { traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01` },
    });
    expect(textOf(result)).toBe('off');
    await upstreamGot('00');
    // The metrics are not sampled: their export shows the receiver was reached.
    await collector.untilPoints((points) =>
      points.find(
        (p) => p.metric === 'mcp.server.operation.duration' && p.attributes['gen_ai.tool.name'] === 'echo',
      ),
    );
    await served.stop();
    expect(collector.spans).toEqual([]);
  });
});

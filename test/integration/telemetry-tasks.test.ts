/**
 * What a task's span says of it (issue 30), through the built taskgate to a real OTLP/HTTP receiver: who
 * runs it and how (`mcp.task.runner`, `mcp.task.mode`), the era of the client that created it, promotion by
 * `promoteAfter` for a 2026-07-28 client with the tasks extension, and `executor lost` when the process
 * running it stops, on its own span and on the spans of the replica asked about it afterwards.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  GetTaskResultSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { connect, FIXTURES, Gateway, TASK_AWARE } from '../helpers/taskgate.js';
import { httpTransport } from '../helpers/http-client.js';
import { MODERN_VERSION } from '../helpers/modern-client.js';
import { EXTENSION_META, modernRequest } from '../helpers/modern-raw.js';
import type { OtlpReceiver } from '../helpers/otlp-receiver.js';
import {
  CLIENT,
  INTERNAL,
  SERVER,
  otlpEnv,
  type ReceivedSpan,
  receiverStoppedBy,
} from '../helpers/otlp-receiver.js';
import { freshPrefix, redisForTests } from '../helpers/redis.js';
import { EXECUTOR_LOST } from '../../src/tasks/store.js';

// Each test starts processes that load the OTel SDK: on a loaded shared machine that alone takes seconds.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

const redis = await redisForTests();
afterAll(() => redis?.stop());

const TRACE_ID = '7bf92f3577b34da6a3ce929d0e0e4739';
const CALLER_SPAN = '30f067aa0ba902ba';
const TRACEPARENT = `00-${TRACE_ID}-${CALLER_SPAN}-01`;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const receiver = (): Promise<OtlpReceiver> => receiverStoppedBy(cleanups);

async function gateway(flags: string[], env: Record<string, string>): Promise<Gateway> {
  const started = await Gateway.start([process.execPath, FIXTURES.legacy], flags, env);
  cleanups.push(() => started.stop());
  return started;
}

function configFile(yaml: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'taskgate-otel-tasks-')), 'config.yaml');
  writeFileSync(path, yaml);
  return path;
}

const taskSpan = (spans: ReceivedSpan[], taskId: string): ReceivedSpan | undefined =>
  spans.find((s) => s.kind === INTERNAL && s.attributes['mcp.task.id'] === taskId);

const eventNames = (span: ReceivedSpan): string[] => span.events.map((event) => event.name);

describe('a task span says who runs the task, how, and for which era', () => {
  it('a 2025 client on stdio: taskgate runs it (augment), era 2025-11-25', async () => {
    const collector = await receiver();
    const { client } = await connect('legacy', { env: otlpEnv(collector) });
    cleanups.push(() => client.close());
    const { task } = await client.request(
      {
        method: 'tools/call',
        params: {
          name: 'echo',
          arguments: { text: 'x' },
          task: { ttl: 60_000 },
          _meta: { traceparent: TRACEPARENT },
        },
      },
      CreateTaskResultSchema,
    );
    await client.request({ method: 'tasks/result', params: { taskId: task.taskId } }, CallToolResultSchema);
    const life = await collector.until((spans) => taskSpan(spans, task.taskId));
    expect(life.attributes).toMatchObject({
      'mcp.task.runner': 'taskgate',
      'mcp.task.mode': 'augment',
      'mcp.protocol.version': '2025-11-25',
      'mcp.task.status': 'completed',
    });
  });

  it('a 2026-07-28 client with the extension over HTTP: era 2026-07-28, the task span the child of the call, tasks/get says the status', async () => {
    const collector = await receiver();
    const served = await gateway([], otlpEnv(collector));
    const meta = { ...EXTENSION_META, traceparent: TRACEPARENT };
    const created = await modernRequest(
      served.url,
      'tools/call',
      { name: 'sleep', arguments: { ms: 50 } },
      meta,
    );
    expect(created.result).toMatchObject({ resultType: 'task' });
    const taskId = String(created.result!.taskId);
    const call = await collector.until((spans) =>
      spans.find((s) => s.kind === SERVER && s.name === 'tools/call sleep' && s.traceId === TRACE_ID),
    );
    expect(call.attributes['mcp.protocol.version']).toBe(MODERN_VERSION);
    let status = 'working';
    for (let asked = 0; status === 'working' && asked < 200; asked++) {
      const got = await modernRequest(served.url, 'tasks/get', { taskId });
      status = String(got.result?.status);
    }
    expect(status).toBe('completed');
    const life = await collector.until((spans) => {
      const found = taskSpan(spans, taskId);
      return found?.attributes['mcp.task.status'] === 'completed' ? found : undefined;
    });
    expect(life.parentSpanId).toBe(call.spanId);
    expect(life.attributes).toMatchObject({
      'mcp.task.runner': 'taskgate',
      'mcp.task.mode': 'augment',
      'mcp.protocol.version': MODERN_VERSION,
    });
    const get = await collector.until((spans) =>
      spans.find(
        (s) => s.kind === SERVER && s.name === 'tasks/get' && s.attributes['mcp.task.status'] === 'completed',
      ),
    );
    expect(get.attributes['mcp.task.id']).toBe(taskId);
    expect(get.links).toContainEqual(expect.objectContaining({ spanId: life.spanId }));
  });
});

describe('a task the server runs, which taskgate follows', () => {
  const serverTask = (spans: ReceivedSpan[], tool: string): ReceivedSpan | undefined =>
    spans.find(
      (s) =>
        s.kind === INTERNAL && s.name === `task ${tool}` && s.attributes['mcp.task.status'] === 'completed',
    );

  it('pass-through: a 2025 task-aware client, a 2025 task server: the span the child of the CLIENT call, from working to completed', async () => {
    const collector = await receiver();
    const { client } = await connect('native', { capabilities: TASK_AWARE, env: otlpEnv(collector) });
    cleanups.push(() => client.close());
    const { task } = await client.request(
      {
        method: 'tools/call',
        params: {
          name: 'sleep',
          arguments: { ms: 50 },
          task: { ttl: 60_000 },
          _meta: { traceparent: TRACEPARENT },
        },
      },
      CreateTaskResultSchema,
    );
    await client.request({ method: 'tasks/result', params: { taskId: task.taskId } }, CallToolResultSchema);
    const life = await collector.until((spans) => serverTask(spans, 'sleep'));
    const sent = collector.spans.find((s) => s.spanId === life.parentSpanId);
    expect(sent).toMatchObject({ kind: CLIENT, name: 'tools/call sleep', traceId: TRACE_ID });
    expect(life.attributes).toMatchObject({
      'mcp.task.id': task.taskId,
      'mcp.task.runner': 'server',
      'mcp.task.mode': 'pass-through',
      'gen_ai.tool.name': 'sleep',
    });
    expect(life.events.map((event) => event.attributes['mcp.task.status'])).toEqual(['working', 'completed']);
  });

  it('translated: a 2026-07-28 client with the extension gets a 2025 task server task with the v2 face', async () => {
    const collector = await receiver();
    const served = await Gateway.start([process.execPath, FIXTURES.native], [], otlpEnv(collector));
    cleanups.push(() => served.stop());
    const meta = { ...EXTENSION_META, traceparent: TRACEPARENT };
    const created = await modernRequest(
      served.url,
      'tools/call',
      { name: 'sleep', arguments: { ms: 50 } },
      meta,
    );
    expect(created.result).toMatchObject({ resultType: 'task' });
    const life = await collector.until((spans) => serverTask(spans, 'sleep'));
    expect(life.traceId).toBe(TRACE_ID);
    expect(life.attributes).toMatchObject({
      'mcp.task.id': created.result!.taskId,
      'mcp.task.runner': 'server',
      'mcp.task.mode': 'translated',
    });
  });

  it('translated: a 2025 task-aware client in front of a 2026-07-28 task server: the CLIENT call says the version spoken to it', async () => {
    const collector = await receiver();
    const { client } = await connect('v2Tasks', { capabilities: TASK_AWARE, env: otlpEnv(collector) });
    cleanups.push(() => client.close());
    const { task } = await client.request(
      {
        method: 'tools/call',
        params: {
          name: 'slow',
          arguments: { ms: 50, text: 'done' },
          task: { ttl: 60_000 },
          _meta: { traceparent: TRACEPARENT },
        },
      },
      CreateTaskResultSchema,
    );
    await client.request({ method: 'tasks/result', params: { taskId: task.taskId } }, CallToolResultSchema);
    const life = await collector.until((spans) => serverTask(spans, 'slow'));
    expect(life.attributes).toMatchObject({ 'mcp.task.runner': 'server', 'mcp.task.mode': 'translated' });
    const sent = collector.spans.find((s) => s.spanId === life.parentSpanId);
    expect(sent).toMatchObject({ kind: CLIENT, name: 'tools/call slow', traceId: TRACE_ID });
    expect(sent!.attributes['mcp.protocol.version']).toBe(MODERN_VERSION);
    expect(sent!.attributes).not.toHaveProperty('mcp.session.id');
  });

  it('unwrap: a client without tasks calls a tool the server runs only as a task: the span says unwrap', async () => {
    const collector = await receiver();
    const { client } = await connect('native', { capabilities: {}, env: otlpEnv(collector) });
    cleanups.push(() => client.close());
    await client.callTool({
      name: 'sleep-required',
      arguments: { ms: 50 },
      _meta: { traceparent: TRACEPARENT },
    });
    const life = await collector.until((spans) => serverTask(spans, 'sleep-required'));
    expect(life.traceId).toBe(TRACE_ID);
    expect(life.attributes).toMatchObject({ 'mcp.task.runner': 'server', 'mcp.task.mode': 'unwrap' });
  });
});

describe('promotion by promoteAfter (a 2026-07-28 client with the extension)', () => {
  it('a call not over in time is promoted (an event on its task span); one over in time is not', async () => {
    const collector = await receiver();
    const served = await gateway(
      ['--config', configFile('tasks:\n  promoteAfter: 300\n')],
      otlpEnv(collector),
    );
    // Over three times promoteAfter: the server cannot answer sooner than its sleep.
    const slow = await modernRequest(served.url, 'tools/call', { name: 'sleep', arguments: { ms: 1_000 } });
    expect(slow.result).toMatchObject({ resultType: 'task' });
    const quick = await modernRequest(served.url, 'tools/call', {
      name: 'echo',
      arguments: { text: 'in time' },
    });
    expect(quick.result).not.toHaveProperty('taskId');
    const [promoted, plain] = await collector.until((spans) => {
      const promoted = taskSpan(spans, String(slow.result!.taskId));
      const plain = spans.find((s) => s.kind === INTERNAL && s.name === 'task echo');
      return promoted && plain ? [promoted, plain] : undefined;
    });
    expect(eventNames(promoted)).toContain('mcp.task.promoted');
    expect(promoted.attributes['mcp.task.status']).toBe('completed');
    expect(eventNames(plain)).not.toContain('mcp.task.promoted');
    expect(plain.attributes['mcp.task.status']).toBe('completed');
  });
});

describe.skipIf(!redis)('executor lost, on Redis', () => {
  it('the replica running a task crashes: the other one, asked about it once its lease lapsed, says failed and executor lost on its tasks/get span, linked to the task span in the record', async () => {
    const collector = await receiver();
    const prefix = freshPrefix();
    const config = configFile('store:\n  leaseTtl: 1000\n');
    const replica = async (name: string): Promise<[Gateway, Client]> => {
      const started = await Gateway.start(
        [process.execPath, FIXTURES.legacy],
        ['--config', config, '--store', redis!.url, '--store-key-prefix', prefix],
        {
          ...otlpEnv(collector, { OTEL_SERVICE_NAME: name }),
          TASKGATE_STORE_CURSOR_SECRET: 'the secret of both',
        },
      );
      cleanups.push(() => started.stop());
      const client = new Client({ name: `client of ${name}`, version: '1' }, { capabilities: TASK_AWARE });
      await client.connect(httpTransport(started.url));
      cleanups.push(() => client.close().catch(() => undefined));
      return [started, client];
    };
    const [a, onA] = await replica('replica-a');
    const [, onB] = await replica('replica-b');
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
    a.child.kill('SIGKILL');
    await a.exited;
    // B's sweep fails A's live tasks once A's lease (1 s) has lapsed; tasks/result waits for that end.
    await onB
      .request({ method: 'tasks/result', params: { taskId: task.taskId } }, CallToolResultSchema)
      .catch(() => undefined);
    const got = await onB.request(
      { method: 'tasks/get', params: { taskId: task.taskId } },
      GetTaskResultSchema,
    );
    expect(got).toMatchObject({ status: 'failed', statusMessage: EXECUTOR_LOST });
    const get = await collector.until((spans) =>
      spans.find(
        (s) =>
          s.kind === SERVER &&
          s.name === 'tasks/get' &&
          s.attributes['mcp.task.id'] === task.taskId &&
          s.attributes['mcp.task.status'] === 'failed',
      ),
    );
    expect(get.service).toBe('replica-b');
    expect(get.attributes['mcp.task.status_message']).toBe(EXECUTOR_LOST);
    expect(get.links).toContainEqual(expect.objectContaining({ traceId: TRACE_ID }));
  });
});

/**
 * A real server written by others behind taskgate: @modelcontextprotocol/server-everything has tasks of
 * its own for some tools (simulate-research-query is task-required) and none for the rest, so taskgate
 * passes its task tools through and serves tasks for the others. Then a 2026-07-28 client (SDK v2, pinned)
 * in front of it: tools, resources, prompts, progress and the server's elicitation as MRTR. Last, one
 * server-everything shared by several HTTP sessions (`upstream.sharing` shared and pool).
 */
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { httpTransport } from '../helpers/http-client.js';
import { connectModern, type ModernConnection } from '../helpers/modern-client.js';
import { connect, Gateway, TASK_AWARE, TASKGATE, type Connection } from '../helpers/taskgate.js';
import { textOf } from '../helpers/tool-results.js';

const EVERYTHING = fileURLToPath(
  new URL('../../node_modules/@modelcontextprotocol/server-everything/dist/index.js', import.meta.url),
);
const RELATED = 'io.modelcontextprotocol/related-task';

let connection: Connection | undefined;
afterEach(async () => {
  expect(connection?.transport.violations ?? []).toEqual([]);
  await connection?.close();
});

const open = async (): Promise<Connection> =>
  (connection = await connect('legacy', { upstream: [process.execPath, EVERYTHING, 'stdio'] }));

describe('server-everything behind taskgate', () => {
  it('keeps the server’s own task tools and offers tasks for the others', async () => {
    const c = await open();
    expect(c.client.getServerCapabilities()?.tasks?.requests?.tools?.call).toEqual({});
    const { tools } = await c.client.listTools();
    const support = Object.fromEntries(tools.map((tool) => [tool.name, tool.execution?.taskSupport]));
    expect(support['simulate-research-query']).toBe('required');
    expect(support['trigger-long-running-operation']).toBe('optional');
    expect(support.echo).toBe('optional');
  });

  it('runs its long-running operation as a task, with progress tagged with the task', async () => {
    const c = await open();
    await c.client.listTools();
    const { task } = await c.client.request(
      {
        method: 'tools/call',
        params: {
          name: 'trigger-long-running-operation',
          arguments: { duration: 1.5, steps: 3 },
          task: { ttl: 60_000 },
          _meta: { progressToken: 'long-op' },
        },
      },
      CreateTaskResultSchema,
    );
    expect(task.status).toBe('working');
    const result = await c.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(JSON.stringify(result.content)).toMatch(/Long running operation completed/i);
    const progress = c.transport.received.items.filter(
      (m) => 'method' in m && m.method === 'notifications/progress',
    );
    expect(progress).toHaveLength(3);
    for (const message of progress) {
      expect('params' in message && message.params?._meta?.[RELATED]).toEqual({ taskId: task.taskId });
    }
    expect((await c.client.experimental.tasks.getTask(task.taskId)).status).toBe('completed');
  });

  it('passes its task-required tool through: the server’s own task, polled and fetched through taskgate', async () => {
    const c = await open();
    await c.client.listTools();
    const { task } = await c.client.request(
      {
        method: 'tools/call',
        params: { name: 'simulate-research-query', arguments: { topic: 'tasks' }, task: { ttl: 60_000 } },
      },
      CreateTaskResultSchema,
    );
    // server-everything sets its own ttl: proof the task is the server's, not taskgate's.
    expect(task.ttl).toBe(300_000);
    expect((await c.client.experimental.tasks.getTask(task.taskId)).taskId).toBe(task.taskId);
    const result = await c.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema, {
      timeout: 20_000,
    });
    expect(JSON.stringify(result.content)).toMatch(/tasks/);
  });
});

describe('a 2026-07-28 client through taskgate to server-everything (a 2025 server)', () => {
  let modern: ModernConnection | undefined;
  afterEach(async () => {
    await modern?.close();
    modern = undefined;
  });

  it('gets its tools, resources, prompts and progress, and its elicitation as an MRTR round', async () => {
    const elicited: unknown[] = [];
    modern = await connectModern(
      { command: [process.execPath, TASKGATE, '--', process.execPath, EVERYTHING, 'stdio'] },
      {
        mode: 'pin',
        onElicit: (params) => {
          elicited.push(params);
          return { action: 'accept', content: { name: 'Ada', check: true } };
        },
      },
    );
    const { client } = modern;
    expect(client.getServerVersion()?.name).toMatch(/everything/i);
    expect(textOf(await client.callTool({ name: 'echo', arguments: { message: 'hi' } }))).toBe('Echo: hi');

    const { resources } = await client.listResources();
    const first = resources[0]!;
    const read = await client.readResource({ uri: first.uri });
    expect(read.contents[0]).toMatchObject({ uri: first.uri });

    const prompt = await client.getPrompt({ name: 'simple-prompt' });
    expect(prompt.messages.length).toBeGreaterThan(0);

    const progress: unknown[] = [];
    const long = await client.callTool(
      { name: 'trigger-long-running-operation', arguments: { duration: 0.3, steps: 3 } },
      { onprogress: (update) => progress.push(update) },
    );
    expect(JSON.stringify(long.content)).toMatch(/Long running operation completed/i);
    // Steps 100 ms apart: those before the last arrive before the result (see modern-peers on the last).
    expect(progress.length).toBeGreaterThan(0);

    const answered = await client.callTool({ name: 'trigger-elicitation-request', arguments: {} });
    expect(elicited).toHaveLength(1);
    expect(JSON.stringify(answered.content)).toContain('Ada');
  });
});

describe.each([
  ['shared', []],
  ['pool', ['--upstream-pool-size', '2']],
])('server-everything behind an HTTP gateway with upstream.sharing %s', (sharing, flags) => {
  const stops: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const stop of stops.splice(0).reverse()) await stop().catch(() => undefined);
  });

  /** A task-aware client that answers elicitations with its name and records every message it receives. */
  async function session(gateway: Gateway, name: string) {
    const client = new Client({ name, version: '1' }, { capabilities: TASK_AWARE });
    client.setRequestHandler(ElicitRequestSchema, () => ({
      action: 'accept',
      content: { name, check: true },
    }));
    const transport = httpTransport(gateway.url);
    await client.connect(transport);
    await client.listTools();
    const received: JSONRPCMessage[] = [];
    const deliver = transport.onmessage!;
    transport.onmessage = (message) => {
      received.push(message);
      deliver(message);
    };
    stops.push(() => client.close());
    return { client, received };
  }

  it("keeps each session's tasks and progress its own on one server, and refuses an elicitation it cannot tie to one", async () => {
    const gateway = await Gateway.start(
      [process.execPath, EVERYTHING, 'stdio'],
      ['--upstream-sharing', sharing, ...flags, '--log-level', 'info'],
    );
    stops.push(() => gateway.stop());
    // In a pool of two, the first and third sessions share a server.
    const [a, , c] = [await session(gateway, 'a'), await session(gateway, 'b'), await session(gateway, 'c')];
    const longOperation = (client: Client) =>
      client.request(
        {
          method: 'tools/call',
          params: {
            name: 'trigger-long-running-operation',
            arguments: { duration: 0.6, steps: 3 },
            task: { ttl: 60_000 },
            _meta: { progressToken: 'same-token' },
          },
        },
        CreateTaskResultSchema,
      );
    const [taskA, taskC] = await Promise.all([longOperation(a.client), longOperation(c.client)]);
    for (const [{ client, received }, { task }] of [
      [a, taskA],
      [c, taskC],
    ] as const) {
      await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
      const progress = received.filter((m) => 'method' in m && m.method === 'notifications/progress');
      expect(progress).toHaveLength(3);
      for (const message of progress) {
        expect('params' in message && message.params?._meta?.[RELATED]).toEqual({ taskId: task.taskId });
      }
    }

    const { task: research } = await a.client.request(
      {
        method: 'tools/call',
        params: { name: 'simulate-research-query', arguments: { topic: 'sharing' }, task: { ttl: 60_000 } },
      },
      CreateTaskResultSchema,
    );
    await expect(c.client.experimental.tasks.getTask(research.taskId)).rejects.toThrow(/not found/i);
    const researched = await a.client.experimental.tasks.getTaskResult(
      research.taskId,
      CallToolResultSchema,
      {
        timeout: 20_000,
      },
    );
    expect(JSON.stringify(researched.content)).toMatch(/sharing/);

    // Its elicitation during a plain call names no task, and a stdio server never says whose it is: with
    // another session on the server, it is refused to the server rather than guessed (protocol/attribution.ts).
    const answered = await c.client
      .callTool({ name: 'trigger-elicitation-request', arguments: {} })
      .then((result) => JSON.stringify(result), String);
    expect(answered).toMatch(/cannot tell which one elicitation\/create is for/);
    expect(c.received.some((m) => 'method' in m && m.method === 'elicitation/create')).toBe(false);
    expect(a.received.some((m) => 'method' in m && m.method === 'elicitation/create')).toBe(false);
    expect([...gateway.stderr.matchAll(/"pid":(\d+),"command"/g)]).toHaveLength(sharing === 'pool' ? 2 : 1);
  });
});

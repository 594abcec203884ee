/**
 * The receiver side of tasks, as a task-aware client sees it. The same scenarios run against a legacy
 * server behind taskgate (augment), a server with native tasks behind taskgate (pass through), and that
 * native server on its own: a legacy server behind taskgate must be indistinguishable from a native one.
 */
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  McpError,
  type ElicitRequest,
} from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { startHttpFixture } from '../helpers/http-fixture.js';
import { connect, type Connection, type ConnectOptions, type FixtureName } from '../helpers/taskgate.js';

const RELATED = 'io.modelcontextprotocol/related-task';

interface Target {
  name: string;
  server: FixtureName;
  options: ConnectOptions;
  augment: boolean;
  /** Run the fixture as a Streamable HTTP server and have taskgate reach it with --upstream-url. */
  upstreamOverHttp?: boolean;
}

const targets: Target[] = [
  { name: 'legacy server behind taskgate (augment)', server: 'legacy', options: {}, augment: true },
  {
    name: 'legacy server behind taskgate over HTTP (HTTP→stdio, augment)',
    server: 'legacy',
    options: { front: 'http' },
    augment: true,
  },
  {
    name: 'legacy server behind taskgate, reached over HTTP (stdio→HTTP, augment)',
    server: 'legacy',
    options: {},
    augment: true,
    upstreamOverHttp: true,
  },
  {
    name: 'legacy server behind a taskgate sidecar (HTTP→HTTP, augment)',
    server: 'legacy',
    options: { front: 'http' },
    augment: true,
    upstreamOverHttp: true,
  },
  { name: 'native server behind taskgate (pass through)', server: 'native', options: {}, augment: false },
  { name: 'native server, direct (reference)', server: 'native', options: { direct: true }, augment: false },
];

describe.each(targets)('$name', ({ server, options, augment, upstreamOverHttp }) => {
  let connection: Connection;
  afterEach(async () => {
    expect(connection.transport.violations).toEqual([]);
    await connection.close();
  });

  const open = async (): Promise<Connection> => {
    if (!upstreamOverHttp) return (connection = await connect(server, options));
    const fixture = await startHttpFixture(server);
    const viaHttp = await connect(server, {
      ...options,
      upstream: [],
      flags: [...(options.flags ?? []), '--upstream-url', fixture.url],
    }).catch(async (error: unknown) => {
      await fixture.stop();
      throw error;
    });
    return (connection = {
      ...viaHttp,
      close: async () => {
        await viaHttp.close();
        await fixture.stop('SIGTERM');
      },
    });
  };
  const createTask = (name: string, args: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    connection.client.request(
      { method: 'tools/call', params: { name, arguments: args, task: { ttl: 60_000 }, ...extra } },
      CreateTaskResultSchema,
    );

  it('advertises tasks for tools/call, and cancel (spec: Capabilities)', async () => {
    await open();
    const tasks = connection.client.getServerCapabilities()?.tasks;
    expect(tasks?.requests?.tools?.call).toEqual({});
    expect(tasks?.cancel).toEqual({});
  });

  it('marks tools with execution.taskSupport (spec: Tool-Level Negotiation)', async () => {
    await open();
    const { tools } = await connection.client.listTools();
    expect(tools.find((tool) => tool.name === 'echo')?.execution?.taskSupport).toBe('optional');
  });

  it('answers a task-augmented call at once with a working task, then the exact result (spec: Creating Tasks, Result Retrieval)', async () => {
    await open();
    const { task } = await createTask('sleep', { ms: 300 });
    expect(task.status).toBe('working');
    expect(typeof task.taskId).toBe('string');
    expect(new Date(task.createdAt).toISOString()).toBe(task.createdAt);
    expect(new Date(task.lastUpdatedAt).toISOString()).toBe(task.lastUpdatedAt);
    expect(task.ttl).toBe(60_000);
    expect(task.pollInterval).toBeGreaterThan(0);

    const polled = await connection.client.experimental.tasks.getTask(task.taskId);
    expect(polled.taskId).toBe(task.taskId);
    expect(['working', 'completed']).toContain(polled.status);
    expect(polled._meta?.[RELATED]).toBeUndefined();

    const result = await connection.client.experimental.tasks.getTaskResult(
      task.taskId,
      CallToolResultSchema,
    );
    expect(result.content).toEqual([{ type: 'text', text: 'slept 300 ms' }]);
    expect(result._meta?.[RELATED]).toEqual({ taskId: task.taskId });

    const done = await connection.client.experimental.tasks.getTask(task.taskId);
    expect(done.status).toBe('completed');
  });

  it('fails the task on an isError result and returns that result (spec: Task Execution Errors)', async () => {
    await open();
    const { task } = await createTask('fail', { message: 'disk full' });
    const result = await connection.client.experimental.tasks.getTaskResult(
      task.taskId,
      CallToolResultSchema,
    );
    expect(result.isError).toBe(true);
    expect(result.content).toEqual([{ type: 'text', text: 'disk full' }]);
    const failed = await connection.client.experimental.tasks.getTask(task.taskId);
    expect(failed.status).toBe('failed');
    // The spec says a failed task SHOULD carry a statusMessage; the SDK's native tasks leave it out.
    if (augment) expect(failed.statusMessage).toContain('disk full');
  });

  it('fails the task on a JSON-RPC error and returns that same error (spec: Task Execution Errors)', async () => {
    await open();
    const { task } = await createTask('throw', {
      code: -32099,
      message: 'quota exceeded',
      data: { retry: 5 },
    });
    const error = await connection.client.experimental.tasks
      .getTaskResult(task.taskId, CallToolResultSchema)
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(McpError);
    expect((error as McpError).code).toBe(-32099);
    expect((error as McpError).message).toContain('quota exceeded');
    expect((error as McpError).data).toEqual({ retry: 5 });
    expect((await connection.client.experimental.tasks.getTask(task.taskId)).status).toBe('failed');
  });

  it('cancels: cancelled before the answer, stays cancelled, stops the call, refuses a second cancel (spec: Task Cancellation)', async () => {
    await open();
    const { task } = await createTask('sleep', { ms: 30_000, label: 'to-cancel' });
    // A plain call answered after it shows the upstream is up and was handed the sleep first, so the
    // cancellation has a running call to stop (over HTTP a cancel that overtakes its call stops nothing).
    await connection.client.callTool({ name: 'echo', arguments: { text: 'barrier' } });
    const cancelled = await connection.client.experimental.tasks.cancelTask(task.taskId);
    expect(cancelled.status).toBe('cancelled');
    expect((await connection.client.experimental.tasks.getTask(task.taskId)).status).toBe('cancelled');

    // The upstream learns of it by notifications/cancelled; over HTTP that is a separate POST, which may
    // reach the server after the next request: ask until it has (bounded).
    const cancelledUpstream = async (): Promise<string[]> => {
      const seen = await connection.client.callTool({ name: 'cancelled-calls', arguments: {} });
      return JSON.parse((seen.content as { text: string }[])[0]!.text) as string[];
    };
    const deadline = Date.now() + 10_000;
    let stopped = await cancelledUpstream();
    while (!stopped.includes('to-cancel') && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      stopped = await cancelledUpstream();
    }
    expect(stopped).toContain('to-cancel');

    const again = await connection.client.experimental.tasks
      .cancelTask(task.taskId)
      .catch((caught: unknown) => caught);
    expect(again).toBeInstanceOf(McpError);
    expect((again as McpError).code).toBe(-32602);
  });

  it('refuses get, result and cancel of an unknown task with -32602 (spec: Protocol Errors)', async () => {
    await open();
    for (const call of [
      () => connection.client.experimental.tasks.getTask('no-such-task'),
      () => connection.client.experimental.tasks.getTaskResult('no-such-task', CallToolResultSchema),
      () => connection.client.experimental.tasks.cancelTask('no-such-task'),
    ]) {
      const error = await call().catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(McpError);
      expect((error as McpError).code).toBe(-32602);
    }
  });

  it('delivers progress for the whole life of the task, tagged with the task (spec: Task Progress Notifications)', async () => {
    await open();
    const { task } = await createTask(
      'progress',
      { steps: 3, intervalMs: 20 },
      { _meta: { progressToken: 'tok-1' } },
    );
    await connection.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    const progress = await connection.transport.received.waitFor(
      (message) =>
        'method' in message && message.method === 'notifications/progress' && message.params?.progress === 3,
      'the last progress notification',
    );
    const all = connection.transport.received.items.filter(
      (message) => 'method' in message && message.method === 'notifications/progress',
    );
    expect(all.map((message) => ('params' in message ? message.params?.progress : undefined))).toEqual([
      1, 2, 3,
    ]);
    expect('params' in progress && progress.params?.progressToken).toBe('tok-1');
    expect('params' in progress && progress.params?._meta?.[RELATED]).toEqual({ taskId: task.taskId });
  });

  it('forwards an elicitation made during the task, tagged with the task, and resumes it (spec: Input Required Status)', async () => {
    await open();
    const asked: ElicitRequest[] = [];
    connection.client.setRequestHandler(ElicitRequestSchema, (request) => {
      asked.push(request);
      return { action: 'accept', content: { answer: '42' } };
    });
    const { task } = await createTask('elicit', { message: 'the answer?' });
    const result = await connection.client.experimental.tasks.getTaskResult(
      task.taskId,
      CallToolResultSchema,
    );
    expect(JSON.parse((result.content as { text: string }[])[0]!.text)).toEqual({
      action: 'accept',
      content: { answer: '42' },
    });
    expect(asked).toHaveLength(1);
    expect(asked[0]!.params._meta?.[RELATED]).toEqual({ taskId: task.taskId });
    expect((await connection.client.experimental.tasks.getTask(task.taskId)).status).toBe('completed');
  });

  it('passes plain calls, resources and prompts through untouched', async () => {
    await open();
    const echo = await connection.client.callTool({ name: 'echo', arguments: { text: 'héllo ✓' } });
    expect(echo.content).toEqual([{ type: 'text', text: 'héllo ✓' }]);
    const resource = await connection.client.readResource({ uri: 'fixture://hello' });
    expect(resource.contents[0]).toMatchObject({ text: 'hello from fixture' });
    const prompt = await connection.client.getPrompt({ name: 'greet', arguments: { name: 'Ada' } });
    expect(prompt.messages[0]?.content).toMatchObject({ text: 'Hello, Ada!' });
  });
});

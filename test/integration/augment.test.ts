/**
 * What taskgate adds in front of a legacy server beyond the shared scenarios: status notifications,
 * input_required, ttl policy, per-tool taskSupport, limits, tasks/list, and the upstream's lifecycle.
 */
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  McpError,
  type JSONRPCMessage,
} from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { connect, type Connection } from '../helpers/taskgate.js';

const RELATED = 'io.modelcontextprotocol/related-task';

let connection: Connection | undefined;
afterEach(async () => {
  expect(connection?.transport.violations ?? []).toEqual([]);
  await connection?.close();
  connection = undefined;
});

const open = async (flags: string[] = []): Promise<Connection> =>
  (connection = await connect('legacy', { flags }));

const createTask = (
  c: Connection,
  name: string,
  args: Record<string, unknown>,
  task: Record<string, unknown> = {},
) =>
  c.client.request({ method: 'tools/call', params: { name, arguments: args, task } }, CreateTaskResultSchema);

const rpcError = async (promise: Promise<unknown>): Promise<McpError> => {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(McpError);
  return error as McpError;
};

const statusesOf = (c: Connection, taskId: string): string[] =>
  c.transport.received.items
    .filter((m): m is Extract<JSONRPCMessage, { method: string }> => 'method' in m)
    .filter((m) => m.method === 'notifications/tasks/status' && m.params?.taskId === taskId)
    .map((m) => String(m.params?.status));

describe('augment: status notifications and input_required', () => {
  it('sends notifications/tasks/status on every change, without the related-task tag (spec: Task Notifications 3)', async () => {
    const c = await open();
    const { task } = await createTask(c, 'echo', { text: 'x' });
    await c.transport.received.waitFor(
      (m) => 'method' in m && m.method === 'notifications/tasks/status' && m.params?.status === 'completed',
      'the completed status notification',
    );
    expect(statusesOf(c, task.taskId)).toEqual(['completed']);
    const notification = c.transport.received.items.find(
      (m) => 'method' in m && m.method === 'notifications/tasks/status',
    );
    expect(notification && 'params' in notification && notification.params?._meta?.[RELATED]).toBeFalsy();
  });

  it('moves the task to input_required while the client answers, then back to working (spec: Input Required Status 1, 4)', async () => {
    const c = await open();
    let release!: () => void;
    const answered = new Promise<void>((resolve) => (release = resolve));
    let statusWhileAsked: string | undefined;
    c.client.setRequestHandler(ElicitRequestSchema, async (request) => {
      const taskId = String(
        request.params._meta?.[RELATED] && (request.params._meta[RELATED] as { taskId: string }).taskId,
      );
      statusWhileAsked = (await c.client.experimental.tasks.getTask(taskId)).status;
      release();
      return { action: 'accept', content: { answer: 'yes' } };
    });
    const { task } = await createTask(c, 'elicit', { message: 'ok?' });
    await answered;
    await c.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(statusWhileAsked).toBe('input_required');
    expect(statusesOf(c, task.taskId)).toEqual(['input_required', 'working', 'completed']);
  });

  it('can be told not to send status notifications', async () => {
    const c = await open(['--no-status-notifications']);
    const { task } = await createTask(c, 'echo', { text: 'x' });
    await c.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(statusesOf(c, task.taskId)).toEqual([]);
  });
});

describe('augment: ttl and policy', () => {
  it('grants the requested ttl up to --max-ttl and --default-ttl when none is asked (spec: TTL 3, 4)', async () => {
    const c = await open(['--max-ttl', '5000', '--default-ttl', '2000', '--poll-interval', '250']);
    const capped = await createTask(c, 'echo', { text: 'a' }, { ttl: 60_000 });
    expect(capped.task.ttl).toBe(5000);
    expect(capped.task.pollInterval).toBe(250);
    const defaulted = await createTask(c, 'echo', { text: 'b' });
    expect(defaulted.task.ttl).toBe(2000);
    expect((await c.client.experimental.tasks.getTask(defaulted.task.taskId)).ttl).toBe(2000);
  });

  it('forgets a task once its ttl has passed: -32602 (spec: TTL 5, Protocol Errors)', async () => {
    const c = await open();
    const { task } = await createTask(c, 'echo', { text: 'short-lived' }, { ttl: 1000 });
    await c.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    const deadline = Date.now() + 10_000;
    let error: McpError | undefined;
    while (!error && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      error = await c.client.experimental.tasks.getTask(task.taskId).then(
        () => undefined,
        (caught: McpError) => caught,
      );
    }
    expect(error?.code).toBe(-32602);
    expect(error?.message).toMatch(/not found or expired/);
  });

  it('applies --tool-task-support globs, first match first, and enforces them with -32601 (spec: Tool-Level Negotiation 2.1, 2.3)', async () => {
    const c = await open(['--tool-task-support', 'sl*=required', '--tool-task-support', 'e?ho=forbidden']);
    const { tools } = await c.client.listTools();
    const support = Object.fromEntries(tools.map((tool) => [tool.name, tool.execution?.taskSupport]));
    expect(support).toMatchObject({ sleep: 'required', echo: 'forbidden', fail: 'optional' });

    const plain = await rpcError(
      c.client.request(
        { method: 'tools/call', params: { name: 'sleep', arguments: { ms: 1 } } },
        CallToolResultSchema,
      ),
    );
    expect(plain.code).toBe(-32601);
    expect(plain.message).toMatch(/must be called as a task/);
    const asTask = await rpcError(createTask(c, 'echo', { text: 'x' }));
    expect(asTask.code).toBe(-32601);
    expect(asTask.message).toMatch(/forbidden/);
    const { task } = await createTask(c, 'sleep', { ms: 1 });
    expect(task.status).toBe('working');
  });

  it('refuses a new task when every slot holds a live task, and nothing else is affected', async () => {
    const c = await open(['--max-tasks', '2']);
    const first = await createTask(c, 'sleep', { ms: 30_000 });
    const second = await createTask(c, 'sleep', { ms: 30_000 });
    const refused = await rpcError(createTask(c, 'echo', { text: 'x' }));
    expect(refused.code).toBe(-32001);
    expect(refused.message).toMatch(/max-tasks/);
    const echo = await c.client.callTool({ name: 'echo', arguments: { text: 'still fine' } });
    expect(echo.content).toEqual([{ type: 'text', text: 'still fine' }]);
    for (const { task } of [first, second]) {
      expect((await c.client.experimental.tasks.getTask(task.taskId)).status).toBe('working');
    }
    await c.client.experimental.tasks.cancelTask(first.task.taskId);
    // A terminal task can be evicted to make room; a live one never is.
    const third = await createTask(c, 'echo', { text: 'room now' });
    expect(third.task.status).toBe('working');
    expect((await c.client.experimental.tasks.getTask(second.task.taskId)).status).toBe('working');
  });

  it('answers tasks/result of a cancelled task with an error that says so', async () => {
    const c = await open();
    const { task } = await createTask(c, 'sleep', { ms: 30_000 });
    const waiting = rpcError(c.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema));
    await c.client.experimental.tasks.cancelTask(task.taskId);
    const error = await waiting;
    expect(error.message).toMatch(/cancelled/);
  });
});

describe('augment: tasks/list', () => {
  it('is neither advertised nor served on the HTTP front without an identity (spec: Security, Task Isolation)', async () => {
    const c = (connection = await connect('legacy', { front: 'http' }));
    expect(c.client.getServerCapabilities()?.tasks?.list).toBeUndefined();
    const error = await rpcError(c.client.experimental.tasks.listTasks());
    expect(error.code).toBe(-32601);
  });

  it('lists this connection’s tasks when exposed, and rejects a forged cursor with -32602 (spec: Task Listing)', async () => {
    const c = await open(['--expose-task-list']);
    expect(c.client.getServerCapabilities()?.tasks?.list).toEqual({});
    const created = [];
    for (const text of ['a', 'b', 'c']) created.push((await createTask(c, 'echo', { text })).task.taskId);
    const { tasks } = await c.client.experimental.tasks.listTasks();
    expect(tasks.map((task) => task.taskId)).toEqual(created);
    const error = await rpcError(c.client.experimental.tasks.listTasks('not-a-cursor'));
    expect(error.code).toBe(-32602);
  });
});

describe('augment: params it interprets', () => {
  it('refuses a task that is not an object, a negative or non-numeric ttl, and a call without a name (-32602)', async () => {
    const c = await open();
    for (const params of [
      { name: 'echo', arguments: { text: 'x' }, task: 'soon' },
      { name: 'echo', arguments: { text: 'x' }, task: { ttl: -5 } },
      { name: 'echo', arguments: { text: 'x' }, task: { ttl: 'long' } },
      { arguments: { text: 'x' }, task: {} },
    ]) {
      const error = await rpcError(
        c.client.request({ method: 'tools/call', params } as never, CreateTaskResultSchema),
      );
      expect(error.code).toBe(-32602);
      expect(error.message).toMatch(/Invalid params for tools\/call/);
    }
  });

  it('takes task metadata off other requests before a legacy server sees it (spec: Task Support and Handling 1)', async () => {
    const c = await open();
    const read = await c.client.request(
      { method: 'resources/read', params: { uri: 'fixture://hello', task: { ttl: 1000 } } } as never,
      (await import('@modelcontextprotocol/sdk/types.js')).ReadResourceResultSchema,
    );
    expect(read.contents[0]).toMatchObject({ text: 'hello from fixture' });
  });
});

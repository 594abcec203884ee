/**
 * Direction ① of docs/eras.md: 2025-11-25 task clients (v1) through taskgate to a 2026-07-28 server that
 * serves the tasks extension (v2, ext-tasks specification/draft/tasks.md). The SDK 1.32 client sees a
 * 2025 server with tasks: nested CreateTaskResult, tasks/get with ttl and pollInterval, a blocking
 * tasks/result, input requests tagged related-task, tasks/cancel and tasks/list, which v2 lacks; a client
 * without tasks gets plain answers, even from tools the server runs only as tasks. Every v1 shape is
 * checked against ext-tasks `./core/v1`; the fixture's own answers against `./core/v2`.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';
import {
  CancelTaskResultV1Schema,
  CreateTaskResultV1Schema,
  GetTaskResultV1Schema,
  ListTasksResultV1Schema,
  ServerTaskCapabilitiesV1Schema,
  TaskResultV1Schema,
  TaskStatusNotificationV1Schema,
  ToolV1Schema,
} from '@modelcontextprotocol/ext-tasks/core/v1';
import {
  CancelTaskResultV2Schema,
  CreateTaskResultV2Schema,
  GetTaskResultV2Schema,
  UpdateTaskResultV2Schema,
} from '@modelcontextprotocol/ext-tasks/core/v2';
import {
  CallToolResultSchema,
  CancelTaskResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  GetTaskResultSchema,
  ListTasksResultSchema,
  McpError,
  type JSONRPCMessage,
} from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connect, FIXTURES, TASK_AWARE, type Connection } from '../helpers/taskgate.js';
import { Inbox } from '../helpers/inbox.js';
import { textOf, until } from '../helpers/tool-results.js';
import { valid } from '../helpers/official-schemas.js';

const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
const RELATED_TASK = 'io.modelcontextprotocol/related-task';

type Client = Connection['client'];

const createTask = (client: Client, name: string, args: Record<string, unknown>) =>
  client.request(
    { method: 'tools/call', params: { name, arguments: args, task: { ttl: 60_000 } } },
    CreateTaskResultSchema,
  );
const getTask = (client: Client, taskId: string) =>
  client.request({ method: 'tasks/get', params: { taskId } }, GetTaskResultSchema);
const taskResult = (client: Client, taskId: string) =>
  client.request({ method: 'tasks/result', params: { taskId } }, CallToolResultSchema);

/** Resolves with the first notifications/tasks/status for the task in `status` the client received. */
function statusNotice(connection: Connection, taskId: string, status: string) {
  return connection.transport.received.waitFor(
    (message: JSONRPCMessage) =>
      'method' in message &&
      message.method === 'notifications/tasks/status' &&
      message.params?.taskId === taskId &&
      message.params?.status === status,
    `notifications/tasks/status ${status} for ${taskId}`,
  );
}

describe.each(['stdio', 'http'] as const)(
  'a 2025 task client on the %s front to a v2 task server',
  (front) => {
    let connection: Connection;
    const asked: Record<string, unknown>[] = [];

    beforeAll(async () => {
      connection = await connect('v2Tasks', { front });
      connection.client.setRequestHandler(ElicitRequestSchema, async (request) => {
        asked.push(request.params);
        return { action: 'accept', content: { answer: 'forty-two' } };
      });
    });
    afterAll(() => connection?.close());
    afterEach(() => expect(connection.transport.violations).toEqual([]));

    it('meets a 2025 server with tasks for tools/call; every tool may be called as a task', async () => {
      expect(connection.client.getServerVersion()).toMatchObject({ name: 'v2-task-fixture' });
      const tasks = connection.client.getServerCapabilities()?.tasks;
      expect(valid(ServerTaskCapabilitiesV1Schema, tasks)).toMatchObject({
        list: {},
        cancel: {},
        requests: { tools: { call: {} } },
      });
      const { tools } = await connection.client.listTools();
      expect(tools.length).toBeGreaterThan(0);
      for (const tool of tools) expect(valid(ToolV1Schema, tool).execution?.taskSupport).toBe('optional');
    });

    it('slow: a nested CreateTaskResult, tasks/get in v1 words, a blocking tasks/result with related-task, and a status notification', async () => {
      const created = await createTask(connection.client, 'slow', { ms: 300, text: 'done slowly' });
      const { task } = valid(CreateTaskResultV1Schema, created);
      expect(task).toMatchObject({ status: 'working', ttl: 60_000, pollInterval: 50 });
      expect(created).not.toHaveProperty('resultType');
      const completed = statusNotice(connection, task.taskId, 'completed');
      const got = valid(GetTaskResultV1Schema, await getTask(connection.client, task.taskId));
      expect(got).toMatchObject({ taskId: task.taskId, status: 'working' });
      for (const v2 of ['ttlMs', 'pollIntervalMs', 'resultType', 'result'])
        expect(got).not.toHaveProperty(v2);
      const result = valid(TaskResultV1Schema, await taskResult(connection.client, task.taskId));
      expect(textOf(result)).toBe('done slowly');
      expect(result._meta).toEqual({ [RELATED_TASK]: { taskId: task.taskId } });
      expect(result).not.toHaveProperty('resultType');
      valid(TaskStatusNotificationV1Schema, await completed);
      expect(await getTask(connection.client, task.taskId)).toMatchObject({ status: 'completed' });
    });

    it('fails: v1 failed, and tasks/result is exactly the JSON-RPC error', async () => {
      const { task } = await createTask(connection.client, 'fails', { message: 'rate limited' });
      const error = await taskResult(connection.client, task.taskId).catch((thrown: unknown) => thrown);
      expect(error).toBeInstanceOf(McpError);
      expect(error).toMatchObject({ code: -32603, message: expect.stringContaining('rate limited') });
      const got = valid(GetTaskResultV1Schema, await getTask(connection.client, task.taskId));
      expect(got).toMatchObject({ status: 'failed', statusMessage: 'Tool execution failed: rate limited' });
    });

    it('tool_error: v2 completed with isError is v1 failed, and tasks/result gives the isError result', async () => {
      const { task } = await createTask(connection.client, 'tool_error', { message: 'bad input' });
      const result = await taskResult(connection.client, task.taskId);
      expect(result).toMatchObject({ isError: true, content: [{ type: 'text', text: 'bad input' }] });
      expect(result._meta?.[RELATED_TASK]).toEqual({ taskId: task.taskId });
      expect(valid(GetTaskResultV1Schema, await getTask(connection.client, task.taskId)).status).toBe(
        'failed',
      );
    });

    it('ask: the input request reaches the client tagged related-task, and its answer the server (tasks/update)', async () => {
      const { task } = await createTask(connection.client, 'ask', { question: 'The answer?' });
      const result = await taskResult(connection.client, task.taskId);
      expect(JSON.parse(textOf(result))).toEqual({ action: 'accept', content: { answer: 'forty-two' } });
      const mine = asked.filter((params) => params.message === 'The answer?');
      expect(mine).toHaveLength(1);
      expect(mine[0]).toMatchObject({ mode: 'form', _meta: { [RELATED_TASK]: { taskId: task.taskId } } });
    });

    it("the SDK's own v1 task driver (callToolStream) runs ask end to end: created, polled, input, result", async () => {
      const stream = connection.client.experimental.tasks.callToolStream(
        { name: 'ask', arguments: { question: 'Streamed?' } },
        CallToolResultSchema,
        { task: { ttl: 60_000 } },
      );
      const types: string[] = [];
      let last: unknown;
      for await (const message of stream) {
        types.push(message.type);
        last = message;
      }
      expect(types[0]).toBe('taskCreated');
      expect(types.at(-1)).toBe('result');
      const { result } = last as { result: { content: { type: string; text: string }[] } };
      expect(JSON.parse(textOf(result))).toEqual({ action: 'accept', content: { answer: 'forty-two' } });
      expect(asked.filter((params) => params.message === 'Streamed?')).toHaveLength(1);
    });

    it('cancel: the Task in cancelled; cancelling again is -32602; tasks/result says it has no result', async () => {
      const { task } = await createTask(connection.client, 'slow', { ms: 30_000 });
      const cancelled = await connection.client.request(
        { method: 'tasks/cancel', params: { taskId: task.taskId } },
        CancelTaskResultSchema,
      );
      expect(valid(CancelTaskResultV1Schema, cancelled)).toMatchObject({
        taskId: task.taskId,
        status: 'cancelled',
      });
      await expect(
        connection.client.request(
          { method: 'tasks/cancel', params: { taskId: task.taskId } },
          CancelTaskResultSchema,
        ),
      ).rejects.toMatchObject({
        code: -32602,
        message: expect.stringContaining("terminal status 'cancelled'"),
      });
      await expect(taskResult(connection.client, task.taskId)).rejects.toThrow(/was cancelled/);
    });

    it('tasks/list shows the tasks made through taskgate, which v2 cannot list', async () => {
      const first = await createTask(connection.client, 'slow', { ms: 10 });
      const second = await createTask(connection.client, 'echo', { text: 'listed' });
      const listed = valid(
        ListTasksResultV1Schema,
        await connection.client.request({ method: 'tasks/list', params: {} }, ListTasksResultSchema),
      );
      const ids = listed.tasks.map((each) => each.taskId);
      expect(ids).toEqual(expect.arrayContaining([first.task.taskId, second.task.taskId]));
      expect(ids.indexOf(first.task.taskId)).toBeLessThan(ids.indexOf(second.task.taskId));
    });

    it('tasks/list pages with an opaque cursor, newest last', async () => {
      const made: string[] = [];
      // More than one page of tasks.listPageSize (100): each page is filled from the upstream's pages.
      for (let i = 0; i < 105; i++)
        made.push((await createTask(connection.client, 'echo', { text: `${i}` })).task.taskId);
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = valid(
          ListTasksResultV1Schema,
          await connection.client.request(
            { method: 'tasks/list', params: cursor === undefined ? {} : { cursor } },
            ListTasksResultSchema,
          ),
        );
        seen.push(...page.tasks.map((each) => each.taskId));
        cursor = page.nextCursor;
        pages++;
      } while (cursor !== undefined && pages < 10);
      expect(pages).toBeGreaterThan(1);
      expect(seen.slice(-made.length)).toEqual(made);
      await expect(
        connection.client.request(
          { method: 'tasks/list', params: { cursor: 'forged' } },
          ListTasksResultSchema,
        ),
      ).rejects.toMatchObject({ code: -32602 });
    });

    it('cancelling tasks/result stops following the task, and leaves it running', async () => {
      const { task } = await createTask(connection.client, 'slow', { ms: 30_000 });
      const abort = new AbortController();
      const waiting = connection.client.request(
        { method: 'tasks/result', params: { taskId: task.taskId } },
        CallToolResultSchema,
        { signal: abort.signal },
      );
      const polls = async () =>
        Number(
          textOf(await connection.client.callTool({ name: 'polls', arguments: { taskId: task.taskId } })),
        );
      await until(async () => (await polls()) > 0, 'taskgate polling the task for tasks/result');
      abort.abort('the test stops waiting');
      await expect(waiting).rejects.toThrow('the test stops waiting');
      expect(await getTask(connection.client, task.taskId)).toMatchObject({ status: 'working' });
      await connection.client.request(
        { method: 'tasks/cancel', params: { taskId: task.taskId } },
        CancelTaskResultSchema,
      );
    });

    it('an unknown task id is -32602, as the server said', async () => {
      await expect(getTask(connection.client, 'no-such-task')).rejects.toMatchObject({ code: -32602 });
    });

    it('echo: a plain call is answered plainly; as a task, the plain answer is a task taskgate holds, completed', async () => {
      const plain = await connection.client.callTool({ name: 'echo', arguments: { text: 'hi' } });
      expect(textOf(plain)).toBe('hi');
      expect(plain).not.toHaveProperty('resultType');
      const { task } = valid(
        CreateTaskResultV1Schema,
        await createTask(connection.client, 'echo', { text: 'held' }),
      );
      expect(task.status).toBe('working');
      expect(valid(GetTaskResultV1Schema, await getTask(connection.client, task.taskId))).toMatchObject({
        status: 'completed',
        ttl: 60_000,
      });
      const result = await taskResult(connection.client, task.taskId);
      expect(textOf(result)).toBe('held');
      expect(result._meta?.[RELATED_TASK]).toEqual({ taskId: task.taskId });
      await expect(
        connection.client.request(
          { method: 'tasks/cancel', params: { taskId: task.taskId } },
          CancelTaskResultSchema,
        ),
      ).rejects.toMatchObject({ code: -32602 });
    });

    it('the extension is declared upstream only for task-augmented calls, and params.task never goes up', async () => {
      await connection.client.callTool({ name: 'echo', arguments: { text: 'plain' } });
      await createTask(connection.client, 'echo', { text: 'task' });
      const seen = JSON.parse(
        textOf(await connection.client.callTool({ name: 'calls-seen', arguments: {} })),
      ) as {
        tool: string;
        extension: boolean;
        task: boolean;
      }[];
      expect(seen.slice(-3)).toEqual([
        { tool: 'echo', extension: false, task: false },
        { tool: 'echo', extension: true, task: false },
        { tool: 'calls-seen', extension: false, task: false },
      ]);
      expect(seen.every((call) => !call.task)).toBe(true);
    });
  },
);

describe('a 2025 client that declares the tasks extension in its initialize (as MCP Inspector 2.12 does)', () => {
  let connection: Connection;
  beforeAll(async () => {
    connection = await connect('v2Tasks', {
      capabilities: { ...TASK_AWARE, extensions: { [TASKS_EXTENSION]: {}, 'example.com/other': {} } },
    });
  });
  afterAll(() => connection?.close());

  it('is not taken for a v2 task client: its plain calls go up without the extension (SEP-2663 "Backward Compatibility")', async () => {
    expect(
      textOf(await connection.client.callTool({ name: 'slow', arguments: { ms: 1, text: 'plain' } })),
    ).toBe('plain');
    const seen = JSON.parse(
      textOf(await connection.client.callTool({ name: 'calls-seen', arguments: {} })),
    ) as {
      tool: string;
      extension: boolean;
    }[];
    expect(seen.find((call) => call.tool === 'slow')).toMatchObject({ extension: false });
  });
});

describe('a v2 task server that crashes while taskgate follows its task', () => {
  let connection: Connection;
  beforeAll(async () => {
    connection = await connect('v2Tasks');
  });
  afterAll(() => connection?.close());

  it('the open tasks/result fails saying why, and the task is failed to the client, not left working', async () => {
    const { task } = await createTask(connection.client, 'slow', { ms: 60_000 });
    const result = taskResult(connection.client, task.taskId).catch((thrown: unknown) => thrown);
    const polls = async () =>
      Number(textOf(await connection.client.callTool({ name: 'polls', arguments: { taskId: task.taskId } })));
    await until(async () => (await polls()) > 0, 'taskgate polling the task for tasks/result');
    await expect(connection.client.callTool({ name: 'crash', arguments: {} })).rejects.toThrow(
      /Upstream server unavailable/,
    );
    expect(await result).toMatchObject({
      code: -32000,
      message: expect.stringContaining('Upstream server unavailable'),
    });
    await until(
      async () => connection.stderr().includes('upstream server is serving again'),
      'the restarted server serving',
      15_000,
    );
    expect(valid(GetTaskResultV1Schema, await getTask(connection.client, task.taskId))).toMatchObject({
      status: 'failed',
      statusMessage: expect.stringContaining('Upstream server unavailable'),
    });
    expect(textOf(await connection.client.callTool({ name: 'echo', arguments: { text: 'again' } }))).toBe(
      'again',
    );
  });
});

describe('a 2025 client without tasks through taskgate to a v2 task server', () => {
  let connection: Connection;
  const asked: Record<string, unknown>[] = [];

  beforeAll(async () => {
    connection = await connect('v2Tasks', { capabilities: { elicitation: { form: {} } } });
    connection.client.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push(request.params);
      return { action: 'accept', content: { answer: 'plainly' } };
    });
  });
  afterAll(() => connection?.close());
  afterEach(() => expect(connection.transport.violations).toEqual([]));

  it('slow: a plain result (the server runs it plainly for a client without the extension)', async () => {
    const result = await connection.client.callTool({
      name: 'slow',
      arguments: { ms: 50, text: 'plain slow' },
    });
    expect(textOf(result)).toBe('plain slow');
  });

  it('task_only: the server can run it only as a task (-32021); taskgate follows the task and answers plainly', async () => {
    const result = await connection.client.callTool({ name: 'task_only', arguments: { text: 'unwrapped' } });
    expect(textOf(result)).toBe('unwrapped');
    expect(result._meta?.[RELATED_TASK]).toBeUndefined();
  });

  it("ask: the task's input request reaches the client as a plain elicitation, and the answer the task", async () => {
    const result = await connection.client.callTool({ name: 'ask', arguments: { question: 'Plain?' } });
    expect(JSON.parse(textOf(result))).toEqual({ action: 'accept', content: { answer: 'plainly' } });
    expect(asked).toEqual([expect.objectContaining({ mode: 'form', message: 'Plain?' })]);
    expect(asked[0]?._meta?.[RELATED_TASK as never]).toBeUndefined();
  });

  it('fails, run as a task: the plain call gets exactly the JSON-RPC error', async () => {
    await expect(
      connection.client.callTool({ name: 'fails', arguments: { message: 'nope' } }),
    ).rejects.toMatchObject({
      code: -32603,
    });
  });
});

/** The fixture on its own, spoken to raw: what it answers is what the official v2 schemas describe. */
class RawServer {
  readonly messages = new Inbox<Record<string, unknown>>();
  private readonly child: ChildProcessWithoutNullStreams;
  private nextId = 1;

  constructor() {
    this.child = spawn(process.execPath, [FIXTURES.v2Tasks], { stdio: 'pipe' });
    createInterface({ input: this.child.stdout }).on('line', (line) => this.messages.push(JSON.parse(line)));
  }

  async request(
    method: string,
    params: Record<string, unknown>,
    extension = true,
  ): Promise<Record<string, unknown>> {
    const id = this.nextId++;
    const capabilities = extension ? { extensions: { [TASKS_EXTENSION]: {} } } : {};
    const _meta = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': capabilities,
    };
    this.child.stdin.write(
      JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta } }) + '\n',
    );
    return this.messages.waitFor((message) => message.id === id, `the answer to ${method}`);
  }

  /** tasks/get until the task leaves `status`. */
  async getUntilNot(taskId: string, status: string): Promise<Record<string, unknown>> {
    for (;;) {
      const answer = await this.request('tasks/get', { taskId });
      if ((answer.result as { status?: string } | undefined)?.status !== status) return answer;
    }
  }

  stop(): void {
    this.child.stdin.end();
  }
}

describe('the v2 task fixture', () => {
  let server: RawServer;
  beforeAll(() => {
    server = new RawServer();
  });
  afterAll(() => server.stop());

  it('answers with a CreateTaskResult only to a request that declared the extension', async () => {
    const plain = await server.request('tools/call', { name: 'slow', arguments: { ms: 1 } }, false);
    expect(plain.result).toMatchObject({ resultType: 'complete' });
    const created = await server.request('tools/call', { name: 'slow', arguments: { ms: 1 } });
    valid(CreateTaskResultV2Schema, created.result);
    expect(await server.request('tools/call', { name: 'task_only', arguments: {} }, false)).toMatchObject({
      error: { code: -32021, data: { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } } },
    });
  });

  it('tasks/get is a DetailedTask for each status; tasks/update and tasks/cancel are acks', async () => {
    for (const [name, end] of [
      ['slow', 'completed'],
      ['fails', 'failed'],
      ['tool_error', 'completed'],
    ] as const) {
      const created = await server.request('tools/call', { name, arguments: { ms: 1, message: 'm' } });
      const { taskId } = valid(CreateTaskResultV2Schema, created.result);
      const done = await server.getUntilNot(taskId, 'working');
      expect(valid(GetTaskResultV2Schema, done.result).status).toBe(end);
    }
    const ask = await server.request('tools/call', { name: 'ask', arguments: { question: 'q' } });
    const { taskId } = valid(CreateTaskResultV2Schema, ask.result);
    const waiting = await server.request('tasks/get', { taskId });
    expect(valid(GetTaskResultV2Schema, waiting.result)).toMatchObject({ status: 'input_required' });
    const update = await server.request('tasks/update', {
      taskId,
      inputResponses: { answer: { action: 'accept', content: { answer: 'a' } } },
    });
    valid(UpdateTaskResultV2Schema, update.result);
    const answered = await server.getUntilNot(taskId, 'working');
    expect(valid(GetTaskResultV2Schema, answered.result)).toMatchObject({ status: 'completed' });
    const long = await server.request('tools/call', { name: 'slow', arguments: { ms: 60_000 } });
    const longId = valid(CreateTaskResultV2Schema, long.result).taskId;
    valid(CancelTaskResultV2Schema, (await server.request('tasks/cancel', { taskId: longId })).result);
    expect(
      valid(GetTaskResultV2Schema, (await server.request('tasks/get', { taskId: longId })).result).status,
    ).toBe('cancelled');
  });

  it('refuses what v2 refuses: unknown ids -32602, tasks/result and tasks/list -32601, tasks/* without the extension -32021', async () => {
    expect(await server.request('tasks/get', { taskId: 'nope' })).toMatchObject({ error: { code: -32602 } });
    expect(await server.request('tasks/result', { taskId: 'nope' })).toMatchObject({
      error: { code: -32601 },
    });
    expect(await server.request('tasks/list', {})).toMatchObject({ error: { code: -32601 } });
    expect(await server.request('tasks/get', { taskId: 'nope' }, false)).toMatchObject({
      error: { code: -32021 },
    });
  });
});

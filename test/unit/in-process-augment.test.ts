/**
 * The session in one process (issue 15): pass-through and augment, a task-aware SDK Client in front of an
 * SDK Server without tasks. The behaviours of test/integration/augment.test.ts and task-scenarios.test.ts,
 * over memory channels, with fake timers where time matters.
 */
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  ElicitResultSchema,
  McpError,
  type JSONRPCMessage,
} from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Correlator } from '../../src/session/correlator.js';
import { heldTool, type HeldTool } from '../helpers/held-call.js';
import {
  inProcessGateway,
  textResult,
  type FakeTool,
  type Gateway,
  type GatewayOptions,
} from '../helpers/in-process.js';
import { thrownBy } from '../helpers/thrown.js';

const RELATED = 'io.modelcontextprotocol/related-task';

const echo: FakeTool = { name: 'echo', run: (args) => textResult(String(args.text)) };
const fail: FakeTool = { name: 'fail', run: () => ({ isError: true, ...textResult('it broke') }) };
const throws: FakeTool = {
  name: 'throw',
  run: () => {
    throw new McpError(-32042, 'exactly this', { detail: 1 });
  },
};

let gate: Gateway | undefined;
let held: HeldTool;
afterEach(async () => {
  held.releaseAll();
  expect(gate?.violations ?? []).toEqual([]);
  await gate?.close();
  gate = undefined;
  vi.useRealTimers();
});

const open = async (options: GatewayOptions = {}): Promise<Gateway> => {
  held = heldTool('held');
  return (gate = await inProcessGateway({ tools: [echo, fail, throws, held], ...options }));
};

const createTask = (
  g: Gateway,
  name: string,
  args: Record<string, unknown> = {},
  task: Record<string, unknown> = {},
) =>
  g.client.request({ method: 'tools/call', params: { name, arguments: args, task } }, CreateTaskResultSchema);

const rpcError = async (promise: Promise<unknown>): Promise<McpError> => {
  const error = await thrownBy(promise);
  expect(error).toBeInstanceOf(McpError);
  return error as McpError;
};

type Incoming = Extract<JSONRPCMessage, { method: string }>;
const isMethod =
  (method: string) =>
  (m: JSONRPCMessage): m is Incoming =>
    'method' in m && m.method === method;

const statusesOf = (g: Gateway, taskId: string): string[] =>
  g.clientTransport.received.items
    .filter(isMethod('notifications/tasks/status'))
    .filter((m) => m.params?.taskId === taskId)
    .map((m) => String(m.params?.status));

const upstreamCalls = (g: Gateway): Incoming[] =>
  g.serverTransport.received.items.filter(isMethod('tools/call'));

describe('in process: pass through', () => {
  it('passes plain calls, their results and their exact errors', async () => {
    const g = await open();
    expect((await g.client.callTool({ name: 'echo', arguments: { text: 'hi' } })).content).toEqual([
      { type: 'text', text: 'hi' },
    ]);
    const error = await rpcError(g.client.callTool({ name: 'throw', arguments: {} }));
    expect(error.code).toBe(-32042);
    expect(error.data).toEqual({ detail: 1 });
  });

  it('passes the client’s cancellation of a plain call on to the server', async () => {
    const g = await open();
    const controller = new AbortController();
    const call = g.client.callTool({ name: 'held', arguments: {} }, undefined, { signal: controller.signal });
    const started = await held.calls.waitFor(() => true, 'the call upstream');
    controller.abort('changed my mind');
    await expect(call).rejects.toThrow();
    expect(await started.cancelled).toMatch(/changed my mind/);
  });

  it('passes the server’s cancellation of its own request on to the client', async () => {
    const g = await open();
    let asked!: () => void;
    const askedP = new Promise<void>((resolve) => (asked = resolve));
    let aborted!: (reason: unknown) => void;
    const clientAborted = new Promise((resolve) => (aborted = resolve));
    g.client.setRequestHandler(ElicitRequestSchema, (_request, extra) => {
      extra.signal.addEventListener('abort', () => aborted(extra.signal.reason));
      asked();
      return new Promise(() => undefined);
    });
    const call = g.client.callTool({ name: 'held', arguments: {} });
    const started = await held.calls.waitFor(() => true, 'the call upstream');
    // The SDK's Client ignores a cancellation of request id 0 (`if (!requestId) return`): spend id 0 first.
    await g.server.ping();
    const controller = new AbortController();
    const elicitation = started.extra.sendRequest(
      {
        method: 'elicitation/create',
        params: { message: 'ok?', requestedSchema: { type: 'object', properties: {} } },
      },
      ElicitResultSchema,
      { signal: controller.signal },
    );
    await askedP;
    controller.abort('no longer needed');
    await expect(elicitation).rejects.toThrow();
    expect(String(await clientAborted)).toMatch(/no longer needed/);
    started.answer(textResult('done'));
    await call;
  });

  it('upstream.requestTimeout: a plain call the server does not answer fails with -32000 and is cancelled upstream', async () => {
    vi.useFakeTimers();
    const g = await open({ config: { upstream: { command: 'unused', requestTimeout: 5_000 } } });
    const call = thrownBy(g.client.callTool({ name: 'held', arguments: {} }, undefined, { timeout: 60_000 }));
    const started = await held.calls.waitFor(() => true, 'the call upstream');
    await vi.advanceTimersByTimeAsync(4_999);
    expect(started.extra.signal.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    const error = await call;
    expect(error).toBeInstanceOf(McpError);
    expect((error as McpError).code).toBe(-32000);
    expect((error as McpError).message).toMatch(/did not answer tools\/call within 5000 ms/);
    expect(await started.cancelled).toMatch(/within 5000 ms/);
  });
});

describe('in process: augment', () => {
  it('advertises tasks for the server and marks its tools optional (spec: Tool-Level Negotiation)', async () => {
    const g = await open();
    expect(g.client.getServerCapabilities()?.tasks).toMatchObject({
      requests: { tools: { call: {} } },
      cancel: {},
      list: {},
    });
    const { tools } = await g.client.listTools();
    expect(tools.map((tool) => tool.execution?.taskSupport)).toEqual([
      'optional',
      'optional',
      'optional',
      'optional',
    ]);
  });

  it('answers a task-augmented call at once and runs the plain call upstream, without its task field', async () => {
    const g = await open();
    const { task } = await createTask(g, 'echo', { text: 'as a task' });
    expect(task).toMatchObject({ status: 'working', ttl: 3_600_000, pollInterval: 1_000 });
    const result = await g.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.content).toEqual([{ type: 'text', text: 'as a task' }]);
    expect(result._meta?.[RELATED]).toEqual({ taskId: task.taskId });
    expect(upstreamCalls(g).map((call) => call.params)).toEqual([
      { name: 'echo', arguments: { text: 'as a task' } },
    ]);
    expect((await g.client.experimental.tasks.getTask(task.taskId)).status).toBe('completed');
    expect(statusesOf(g, task.taskId)).toEqual(['completed']);
  });

  it('fails the task on isError and on a JSON-RPC error; tasks/result returns exactly what the call did', async () => {
    const g = await open();
    const isError = await createTask(g, 'fail');
    const result = await g.client.experimental.tasks.getTaskResult(isError.task.taskId, CallToolResultSchema);
    expect(result).toMatchObject({ isError: true, content: [{ type: 'text', text: 'it broke' }] });
    expect((await g.client.experimental.tasks.getTask(isError.task.taskId)).status).toBe('failed');

    const thrown = await createTask(g, 'throw');
    const error = await rpcError(
      g.client.experimental.tasks.getTaskResult(thrown.task.taskId, CallToolResultSchema),
    );
    expect(error.code).toBe(-32042);
    expect(error.data).toEqual({ detail: 1 });
    const failed = await g.client.experimental.tasks.getTask(thrown.task.taskId);
    expect(failed.status).toBe('failed');
    expect(failed.statusMessage).toBeTruthy();
  });

  it('tasks/cancel: cancelled before the answer, the call cancelled upstream, and it stays cancelled (spec: Cancellation)', async () => {
    const g = await open();
    const { task } = await createTask(g, 'held');
    const started = await held.calls.waitFor(() => true, 'the call upstream');
    const waiting = rpcError(g.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema));
    const cancelled = await g.client.experimental.tasks.cancelTask(task.taskId);
    expect(cancelled.status).toBe('cancelled');
    await started.cancelled;
    expect((await waiting).message).toMatch(/cancelled/);
    started.answer(textResult('too late'));
    await g.client.ping();
    expect((await g.client.experimental.tasks.getTask(task.taskId)).status).toBe('cancelled');
    const again = await rpcError(g.client.experimental.tasks.cancelTask(task.taskId));
    expect(again.code).toBe(-32602);
  });

  it('lists this connection’s tasks and rejects a forged cursor with -32602 (spec: Task Listing)', async () => {
    const g = await open();
    const created = [];
    for (const text of ['a', 'b', 'c']) created.push((await createTask(g, 'echo', { text })).task.taskId);
    const { tasks } = await g.client.experimental.tasks.listTasks();
    expect(tasks.map((task) => task.taskId)).toEqual(created);
    expect((await rpcError(g.client.experimental.tasks.listTasks('not-a-cursor'))).code).toBe(-32602);
  });

  it('keeps progress tokens and tags progress with the task (spec: Progress)', async () => {
    const g = await open();
    const { task } = await g.client.request(
      {
        method: 'tools/call',
        params: { name: 'held', arguments: {}, task: {}, _meta: { progressToken: 'p1' } },
      },
      CreateTaskResultSchema,
    );
    const started = await held.calls.waitFor(() => true, 'the call upstream');
    expect(started.extra._meta?.progressToken).toBe('p1');
    await started.extra.sendNotification({
      method: 'notifications/progress',
      params: { progressToken: 'p1', progress: 1, total: 2 },
    });
    const progress = await g.clientTransport.received.waitFor(isMethod('notifications/progress'), 'progress');
    expect('params' in progress && progress.params).toMatchObject({
      progressToken: 'p1',
      progress: 1,
      _meta: { [RELATED]: { taskId: task.taskId } },
    });
    started.answer(textResult('done'));
  });

  it('issue 15: holds no progress token once the task-augmented calls that gave them are answered', async () => {
    const g = await open();
    const tasks = [];
    for (let i = 0; i < 5; i++) {
      const params = {
        name: 'echo',
        arguments: { text: `${i}` },
        task: {},
        _meta: { progressToken: `p${i}` },
      };
      tasks.push((await g.client.request({ method: 'tools/call', params }, CreateTaskResultSchema)).task);
    }
    for (const { taskId } of tasks) {
      await g.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    }
    const { correlator } = g.session as unknown as { correlator: Correlator };
    expect(correlator.tokensHeld).toBe(0);
    // The zero above is tokens released, not tokens never kept: a request in flight holds its token
    // both ways (token → request, request → token). A task-augmented call is answered at once, so a
    // plain call on the held tool is what stays in flight long enough to see it.
    const call = g.client.callTool({ name: 'held', arguments: {}, _meta: { progressToken: 'p-held' } });
    const started = await held.calls.waitFor(() => true, 'the call upstream');
    expect(started.extra._meta?.progressToken).toBe('p-held');
    expect(correlator.tokensHeld).toBe(2);
    started.answer(textResult('done'));
    await call;
    expect(correlator.tokensHeld).toBe(0);
  });

  it('issue 15: closing the session answers what is still in flight upstream, saying so, and fails its running tasks', async () => {
    const g = await open();
    const { task } = await createTask(g, 'held');
    const plain = g.client.callTool({ name: 'held', arguments: {} });
    await held.calls.waitFor(() => held.calls.items.length === 2, 'both calls upstream');
    await g.session.close();
    const error = await rpcError(plain);
    expect(error.code).toBe(-32000);
    expect(error.message).toContain(
      'Upstream server unavailable: taskgate closed the session before answering tools/call',
    );
    const record = await g.store.get(task.taskId);
    expect(record).toMatchObject({
      status: 'failed',
      statusMessage: expect.stringContaining('taskgate closed the session'),
    });
  });

  it('moves the task to input_required while the client answers an elicitation, then back to working (spec: Input Required Status)', async () => {
    const g = await open();
    let statusWhileAsked: string | undefined;
    let relatedTaskId: unknown;
    g.client.setRequestHandler(ElicitRequestSchema, async (request) => {
      relatedTaskId = (request.params._meta?.[RELATED] as { taskId?: string } | undefined)?.taskId;
      statusWhileAsked = (await g.client.experimental.tasks.getTask(String(relatedTaskId))).status;
      return { action: 'accept', content: { answer: 'yes' } };
    });
    const { task } = await createTask(g, 'held');
    const started = await held.calls.waitFor(() => true, 'the call upstream');
    const answer = await started.extra.sendRequest(
      {
        method: 'elicitation/create',
        params: { message: 'ok?', requestedSchema: { type: 'object', properties: {} } },
      },
      ElicitResultSchema,
    );
    expect(answer).toMatchObject({ action: 'accept', content: { answer: 'yes' } });
    started.answer(textResult('answered'));
    await g.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(relatedTaskId).toBe(task.taskId);
    expect(statusWhileAsked).toBe('input_required');
    expect(statusesOf(g, task.taskId)).toEqual(['input_required', 'working', 'completed']);
  });

  it('passes an elicitation on untagged when two calls are in flight and it cannot say whose it is', async () => {
    const g = await open();
    const asked: unknown[] = [];
    g.client.setRequestHandler(ElicitRequestSchema, (request) => {
      asked.push(request.params._meta?.[RELATED]);
      return { action: 'decline' };
    });
    const { task } = await createTask(g, 'held');
    const plain = g.client.callTool({ name: 'held', arguments: {} });
    const first = await held.calls.waitFor(() => true, 'the task’s call upstream');
    await held.calls.waitFor((call) => call !== first, 'the plain call upstream');
    const answer = await first.extra.sendRequest(
      {
        method: 'elicitation/create',
        params: { message: 'whose?', requestedSchema: { type: 'object', properties: {} } },
      },
      ElicitResultSchema,
    );
    expect(answer.action).toBe('decline');
    expect(asked).toEqual([undefined]);
    expect(statusesOf(g, task.taskId)).toEqual([]);
    held.releaseAll();
    await plain;
  });

  it('over streams, an elicitation with two calls in flight is the task whose call it came with', async () => {
    const g = await open({ upstreamStreams: true });
    const asked: unknown[] = [];
    g.client.setRequestHandler(ElicitRequestSchema, (request) => {
      asked.push(request.params._meta?.[RELATED]);
      return { action: 'decline' };
    });
    const plain = g.client.callTool({ name: 'held', arguments: {} });
    const plainCall = await held.calls.waitFor(() => true, 'the plain call upstream');
    const { task } = await createTask(g, 'held');
    const taskCall = await held.calls.waitFor((call) => call !== plainCall, 'the task’s call upstream');
    const answer = await taskCall.extra.sendRequest(
      {
        method: 'elicitation/create',
        params: { message: 'whose?', requestedSchema: { type: 'object', properties: {} } },
      },
      ElicitResultSchema,
    );
    expect(answer.action).toBe('decline');
    expect(asked).toEqual([{ taskId: task.taskId }]);
    expect(statusesOf(g, task.taskId)).toEqual(['input_required', 'working']);
    held.releaseAll();
    await plain;
  });

  it('sends notifications/tasks/status on every change, without the related-task tag (spec: Task Notifications 3)', async () => {
    const g = await open();
    const { task } = await createTask(g, 'echo', { text: 'x' });
    await g.clientTransport.received.waitFor(
      (m) => 'method' in m && m.method === 'notifications/tasks/status' && m.params?.status === 'completed',
      'the completed status notification',
    );
    expect(statusesOf(g, task.taskId)).toEqual(['completed']);
    const notification = g.clientTransport.received.items.find(isMethod('notifications/tasks/status'));
    expect(notification && 'params' in notification && notification.params?._meta?.[RELATED]).toBeFalsy();
  });

  it('tasks.statusNotifications false: no notifications/tasks/status', async () => {
    const g = await open({ config: { tasks: { statusNotifications: false } } });
    const { task } = await createTask(g, 'echo', { text: 'quiet' });
    await g.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(g.clientTransport.received.items.filter(isMethod('notifications/tasks/status'))).toEqual([]);
  });

  it('refuses a task that is not an object, a negative or non-numeric ttl, and a call without a name (-32602)', async () => {
    const g = await open();
    for (const params of [
      { name: 'echo', arguments: { text: 'x' }, task: 'soon' },
      { name: 'echo', arguments: { text: 'x' }, task: { ttl: -5 } },
      { name: 'echo', arguments: { text: 'x' }, task: { ttl: 'long' } },
      { arguments: { text: 'x' }, task: {} },
    ]) {
      const error = await rpcError(
        g.client.request({ method: 'tools/call', params } as never, CreateTaskResultSchema),
      );
      expect(error.code).toBe(-32602);
      expect(error.message).toMatch(/Invalid params for tools\/call/);
    }
    expect(upstreamCalls(g)).toEqual([]);
  });

  it('fails a running task, saying why, and wakes its waiters when the server goes away (nothing lost)', async () => {
    const g = await open();
    const { task } = await createTask(g, 'held');
    await held.calls.waitFor(() => true, 'the call upstream');
    const waiting = rpcError(g.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema));
    await g.server.close();
    const error = await waiting;
    expect(error.code).toBe(-32000);
    expect(error.message).toMatch(/Upstream server unavailable: the other end closed/);
    const failed = await g.client.experimental.tasks.getTask(task.taskId);
    expect(failed.status).toBe('failed');
    expect(failed.statusMessage).toMatch(/Upstream server unavailable/);
  });

  it('grants ttl up to tasks.maxTtl, tasks.defaultTtl when none is asked, and the configured pollInterval (spec: TTL 3, 4)', async () => {
    const g = await open({ config: { tasks: { maxTtl: 5_000, defaultTtl: 2_000, pollInterval: 250 } } });
    const capped = await createTask(g, 'echo', { text: 'a' }, { ttl: 60_000 });
    expect(capped.task).toMatchObject({ ttl: 5_000, pollInterval: 250 });
    const defaulted = await createTask(g, 'echo', { text: 'b' });
    expect(defaulted.task.ttl).toBe(2_000);
    expect((await g.client.experimental.tasks.getTask(defaulted.task.taskId)).ttl).toBe(2_000);
  });

  it('forgets a finished task once its ttl has passed: -32602 (spec: TTL 5)', async () => {
    vi.useFakeTimers();
    const g = await open();
    const { task } = await createTask(g, 'echo', { text: 'short-lived' }, { ttl: 1_000 });
    await g.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    await vi.advanceTimersByTimeAsync(999);
    expect((await g.client.experimental.tasks.getTask(task.taskId)).status).toBe('completed');
    await vi.advanceTimersByTimeAsync(1);
    const error = await rpcError(g.client.experimental.tasks.getTask(task.taskId));
    expect(error.code).toBe(-32602);
    expect(error.message).toMatch(/not found or expired/);
  });

  it('bounds a task’s call by its ttl: then it fails, its call is cancelled, and it is readable a while', async () => {
    vi.useFakeTimers();
    const g = await open();
    const { task } = await createTask(g, 'held', {}, { ttl: 1_000 });
    const started = await held.calls.waitFor(() => true, 'the call upstream');
    await vi.advanceTimersByTimeAsync(999);
    expect((await g.client.experimental.tasks.getTask(task.taskId)).status).toBe('working');
    await vi.advanceTimersByTimeAsync(1);
    expect(await started.cancelled).toMatch(/within 1000 ms/);
    const failed = await g.client.experimental.tasks.getTask(task.taskId);
    expect(failed).toMatchObject({ status: 'failed', statusMessage: expect.stringMatching(/1000 ms/) });
    // The grace of a task that ended at its ttl: min(ttl, 60 s).
    await vi.advanceTimersByTimeAsync(999);
    expect((await g.client.experimental.tasks.getTask(task.taskId)).status).toBe('failed');
    await vi.advanceTimersByTimeAsync(1);
    expect((await rpcError(g.client.experimental.tasks.getTask(task.taskId))).code).toBe(-32602);
  });

  it('applies tool rules, first match first, and enforces them with -32601 (spec: Tool-Level Negotiation 2.1, 2.3)', async () => {
    const g = await open({
      config: {
        tools: [
          { match: 'h*', taskSupport: 'required' },
          { match: 'e?ho', taskSupport: 'forbidden' },
        ],
      },
    });
    const { tools } = await g.client.listTools();
    expect(Object.fromEntries(tools.map((tool) => [tool.name, tool.execution?.taskSupport]))).toMatchObject({
      held: 'required',
      echo: 'forbidden',
      fail: 'optional',
    });
    const plain = await rpcError(
      g.client.request(
        { method: 'tools/call', params: { name: 'held', arguments: {} } },
        CallToolResultSchema,
      ),
    );
    expect(plain.code).toBe(-32601);
    expect(plain.message).toMatch(/must be called as a task/);
    const asTask = await rpcError(createTask(g, 'echo', { text: 'x' }));
    expect(asTask.code).toBe(-32601);
    expect(asTask.message).toMatch(/forbidden/);
    expect(upstreamCalls(g)).toEqual([]);
    expect((await createTask(g, 'held')).task.status).toBe('working');
  });

  it('refuses a new task with -32001 when every slot holds a live task, and evicts only finished ones', async () => {
    const g = await open({ config: { tasks: { maxTasks: 2 } } });
    const first = await createTask(g, 'held');
    const second = await createTask(g, 'held');
    const refused = await rpcError(createTask(g, 'echo', { text: 'x' }));
    expect(refused.code).toBe(-32001);
    expect(refused.message).toMatch(/max-tasks/);
    const echo = await g.client.callTool({ name: 'echo', arguments: { text: 'still fine' } });
    expect(echo.content).toEqual([{ type: 'text', text: 'still fine' }]);
    for (const { task } of [first, second]) {
      expect((await g.client.experimental.tasks.getTask(task.taskId)).status).toBe('working');
    }
    await g.client.experimental.tasks.cancelTask(first.task.taskId);
    expect((await createTask(g, 'echo', { text: 'room now' })).task.status).toBe('working');
    expect((await g.client.experimental.tasks.getTask(second.task.taskId)).status).toBe('working');
  });
});

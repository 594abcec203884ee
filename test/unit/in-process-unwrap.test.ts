/**
 * The session in one process (issue 15): unwrap, a client without tasks in front of a server that runs its
 * tools as tasks (test/integration/unwrap.test.ts), and client-side tasks, a server that task-augments
 * elicitation towards a client that cannot answer as a task (test/integration/client-tasks.test.ts).
 */
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  ElicitResultSchema,
  GetTaskResultSchema,
  McpError,
  type ClientCapabilities,
  type JSONRPCMessage,
} from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { heldTool, type HeldTool } from '../helpers/held-call.js';
import {
  SERVER_POLL_INTERVAL_MS,
  inProcessGateway,
  textResult,
  type Gateway,
  type GatewayOptions,
} from '../helpers/in-process.js';
import { thrownBy } from '../helpers/thrown.js';

const RELATED = 'io.modelcontextprotocol/related-task';

let gate: Gateway | undefined;
let held: HeldTool;
afterEach(async () => {
  held.releaseAll();
  expect(gate?.violations ?? []).toEqual([]);
  await gate?.close();
  gate = undefined;
  vi.useRealTimers();
});

/** A server whose `research` tool must be called as a task, and whose `echo` runs plain only. */
const open = async (options: GatewayOptions = {}): Promise<Gateway> => {
  held = heldTool('research', 'required');
  return (gate = await inProcessGateway({
    clientTasks: false,
    tools: [held, { name: 'echo', taskSupport: 'forbidden', run: (args) => textResult(String(args.text)) }],
    ...options,
  }));
};

const isMethod =
  (method: string) =>
  (m: JSONRPCMessage): boolean =>
    'method' in m && m.method === method;
const countUpstream = (g: Gateway, method: string): number =>
  g.serverTransport.received.items.filter(isMethod(method)).length;

describe('in process: unwrap', () => {
  it('lists the task-required tool as a normal one and leaves the others as the server lists them', async () => {
    const g = await open();
    const { tools } = await g.client.listTools();
    expect(tools.map((tool) => [tool.name, tool.execution])).toEqual([
      ['research', undefined],
      ['echo', { taskSupport: 'forbidden' }],
    ]);
  });

  it('runs a plain call upstream as a task and answers with exactly its result, untagged', async () => {
    const g = await open();
    await g.client.listTools();
    const call = g.client.callTool({ name: 'research', arguments: { topic: 'otters' } });
    const started = await held.calls.waitFor(() => true, 'the task’s work upstream');
    expect(started.args).toEqual({ topic: 'otters' });
    const upstreamCall = g.serverTransport.received.items.find(isMethod('tools/call'));
    expect(upstreamCall && 'params' in upstreamCall && upstreamCall.params?.task).toBeDefined();
    started.answer({ ...textResult('report on otters'), structuredContent: { pages: 3 } });
    const result = await call;
    expect(result).toEqual({
      content: [{ type: 'text', text: 'report on otters' }],
      structuredContent: { pages: 3 },
    });
    expect(result._meta?.[RELATED]).toBeUndefined();
  });

  it('polls tasks/get at the server’s pollInterval, within unwrap.minPollInterval', async () => {
    vi.useFakeTimers();
    const g = await open({ config: { unwrap: { minPollInterval: 400 } } });
    await g.client.listTools();
    const call = g.client.callTool({ name: 'research', arguments: {} }, undefined, { timeout: 60_000 });
    const started = await held.calls.waitFor(() => true, 'the task’s work upstream');
    const before = countUpstream(g, 'tasks/get');
    // The server asks for 100 ms; taskgate waits 400 ms at least between polls.
    expect(SERVER_POLL_INTERVAL_MS).toBeLessThan(400);
    await vi.advanceTimersByTimeAsync(2_000);
    const polled = countUpstream(g, 'tasks/get') - before;
    expect(polled).toBeGreaterThanOrEqual(4);
    expect(polled).toBeLessThanOrEqual(5);
    started.answer(textResult('done'));
    await vi.advanceTimersByTimeAsync(400);
    expect((await call).content).toEqual([{ type: 'text', text: 'done' }]);
  });

  it('keeps a waiting client that gave a progressToken alive with progress that only increases', async () => {
    vi.useFakeTimers();
    const g = await open({ config: { unwrap: { keepAliveInterval: 100 } } });
    await g.client.listTools();
    const progress: number[] = [];
    const call = g.client.callTool({ name: 'research', arguments: {} }, CallToolResultSchema, {
      onprogress: (p) => progress.push(p.progress),
      timeout: 60_000,
    });
    const started = await held.calls.waitFor(() => true, 'the task’s work upstream');
    await vi.advanceTimersByTimeAsync(350);
    expect(progress.length).toBeGreaterThanOrEqual(3);
    progress.slice(1).forEach((value, i) => expect(value).toBeGreaterThan(progress[i]!));
    started.answer(textResult('done'));
    await vi.advanceTimersByTimeAsync(SERVER_POLL_INTERVAL_MS);
    await call;
  });

  it('cancels the upstream task when the client cancels its call', async () => {
    const g = await open();
    await g.client.listTools();
    const controller = new AbortController();
    const call = g.client.callTool({ name: 'research', arguments: {} }, undefined, {
      signal: controller.signal,
    });
    await held.calls.waitFor(() => true, 'the task’s work upstream');
    controller.abort('changed my mind');
    expect(await thrownBy(call)).toBeDefined();
    await g.serverTransport.received.waitFor(isMethod('tasks/cancel'), 'tasks/cancel upstream');
    const [task] = g.serverTasks?.getAllTasks() ?? [];
    // The server's handler runs after the request arrives: a bounded wait for the status it stores.
    await vi.waitFor(async () =>
      expect((await g.serverTasks?.getTask(task!.taskId))?.status).toBe('cancelled'),
    );
  });

  it('relays the task’s elicitation to the client as an ordinary request, and its answer back', async () => {
    const g = await open();
    await g.client.listTools();
    const asked: unknown[] = [];
    g.client.setRequestHandler(ElicitRequestSchema, (request) => {
      asked.push(request.params);
      return { action: 'accept', content: { interpretation: 'snake' } };
    });
    const call = g.client.callTool({ name: 'research', arguments: { topic: 'python' } });
    const started = await held.calls.waitFor(() => true, 'the task’s work upstream');
    const [task] = g.serverTasks?.getAllTasks() ?? [];
    // As the SDK's own task servers ask: the task input_required, the request queued for it and delivered
    // through tasks/result.
    await g.serverTasks?.updateTaskStatus(task!.taskId, 'input_required');
    const answer = await g.server.request(
      {
        method: 'elicitation/create',
        params: { message: 'which python?', requestedSchema: { type: 'object', properties: {} } },
      },
      ElicitResultSchema,
      { relatedRequestId: started.extra.requestId, relatedTask: { taskId: task!.taskId } },
    );
    expect(answer).toMatchObject({ action: 'accept', content: { interpretation: 'snake' } });
    expect(asked).toEqual([
      { message: 'which python?', requestedSchema: { type: 'object', properties: {} } },
    ]);
    started.answer(textResult('report on python (snake)'));
    expect((await call).content).toEqual([{ type: 'text', text: 'report on python (snake)' }]);
  });

  it('ends the call with the upstream task’s failure when it fails', async () => {
    const g = await open();
    await g.client.listTools();
    const call = g.client.callTool({ name: 'research', arguments: {} });
    const started = await held.calls.waitFor(() => true, 'the task’s work upstream');
    started.answer({ isError: true, ...textResult('no sources') });
    expect(await call).toMatchObject({ isError: true, content: [{ type: 'text', text: 'no sources' }] });
  });

  it('gives a client without tasks plain calls to a server without tasks, whatever policy marks required', async () => {
    const g = (gate = await inProcessGateway({
      clientTasks: false,
      tools: [{ name: 'echo', run: (args) => textResult(String(args.text)) }],
      config: { tools: [{ match: 'echo', taskSupport: 'required' }] },
    }));
    held = heldTool('unused');
    const { tools } = await g.client.listTools();
    expect(tools[0]?.execution?.taskSupport).toBeUndefined();
    expect((await g.client.callTool({ name: 'echo', arguments: { text: 'plain' } })).content).toEqual([
      { type: 'text', text: 'plain' },
    ]);
  });
});

const PLAIN_ELICITING: ClientCapabilities = { elicitation: { form: {} } };
const TASKS_WITHOUT_CLIENT_SIDE: ClientCapabilities = {
  elicitation: { form: {} },
  tasks: { cancel: {}, requests: {} },
};

describe.each([
  { name: 'a client without tasks', capabilities: PLAIN_ELICITING },
  { name: 'a task-aware client without client-side tasks', capabilities: TASKS_WITHOUT_CLIENT_SIDE },
])('in process: client-side tasks held by taskgate for $name', ({ capabilities }) => {
  const openAsking = async (): Promise<Gateway> => {
    held = heldTool('ask');
    return (gate = await inProcessGateway({ clientCapabilities: capabilities, tools: [held] }));
  };
  const elicitAsTask = {
    method: 'elicitation/create' as const,
    params: {
      message: 'your name?',
      requestedSchema: { type: 'object' as const, properties: { name: { type: 'string' as const } } },
      task: { ttl: 60_000 },
    },
  };

  it('declares them to the server, answers its task-augmented elicitation at once, and serves the answer', async () => {
    const g = await openAsking();
    expect(g.server.getClientCapabilities()?.tasks?.requests?.elicitation?.create).toEqual({});
    let asked: unknown;
    g.client.setRequestHandler(ElicitRequestSchema, (request) => {
      asked = request.params;
      return { action: 'accept', content: { name: 'Ada' } };
    });
    const call = g.client.callTool({ name: 'ask', arguments: {} });
    const started = await held.calls.waitFor(() => true, 'the call upstream');
    const { task } = await started.extra.sendRequest(elicitAsTask, CreateTaskResultSchema);
    expect(task.status).toBe('working');
    const answer = await started.extra.sendRequest(
      { method: 'tasks/result', params: { taskId: task.taskId } },
      ElicitResultSchema,
    );
    expect(answer).toMatchObject({ action: 'accept', content: { name: 'Ada' } });
    expect(asked).not.toHaveProperty('task');
    const status = await started.extra.sendRequest(
      { method: 'tasks/get', params: { taskId: task.taskId } },
      GetTaskResultSchema,
    );
    expect(status.status).toBe('completed');
    started.answer(textResult('hello Ada'));
    await call;
  });

  it('cancels the client’s request when the server cancels the task', async () => {
    const g = await openAsking();
    let aborted!: () => void;
    const clientAborted = new Promise<void>((resolve) => (aborted = resolve));
    g.client.setRequestHandler(ElicitRequestSchema, (_request, extra) => {
      extra.signal.addEventListener('abort', () => aborted());
      return new Promise(() => undefined);
    });
    const call = g.client.callTool({ name: 'ask', arguments: {} });
    const started = await held.calls.waitFor(() => true, 'the call upstream');
    // The SDK's Client ignores a cancellation of request id 0: spend id 0 first.
    await g.server.ping();
    const { task } = await started.extra.sendRequest(elicitAsTask, CreateTaskResultSchema);
    await g.clientTransport.received.waitFor(isMethod('elicitation/create'), 'the elicitation');
    const cancelled = await started.extra.sendRequest(
      { method: 'tasks/cancel', params: { taskId: task.taskId } },
      GetTaskResultSchema,
    );
    expect(cancelled.status).toBe('cancelled');
    await clientAborted;
    const error = await thrownBy(
      started.extra.sendRequest(
        { method: 'tasks/result', params: { taskId: task.taskId } },
        ElicitResultSchema,
      ),
    );
    expect(error).toBeInstanceOf(McpError);
    started.answer(textResult('never mind'));
    await call;
  });
});

/**
 * The tasks extension (io.modelcontextprotocol/tasks) for 2026-07-28 clients, in-process: the test is the
 * modern client, a real Session and SDK 1.x server without tasks stand behind the bridge, so every task
 * here is taskgate's augment seen through the v2 face. Shapes are checked against the official ext-tasks
 * v2 schemas.
 */
import { CreateTaskResultV2Schema, GetTaskResultV2Schema } from '@modelcontextprotocol/ext-tasks/core/v2';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ConfigInput } from '../../src/config/schema.js';
import type { JsonObject } from '../../src/protocol/messages.js';
import { collectGarbage } from '../helpers/gc.js';
import { MODERN_META, inProcessBridge, type InProcessBridge } from '../helpers/in-process-bridge.js';
import { askName, textResult, type FakeTool } from '../helpers/in-process.js';

interface Answer {
  id: number;
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: unknown };
}

const WITH_TASKS = {
  ...MODERN_META,
  'io.modelcontextprotocol/clientCapabilities': {
    elicitation: { form: {} },
    extensions: { 'io.modelcontextprotocol/tasks': {} },
  },
};

/** Calls of `hang` the server saw cancelled; `release` ends the running `gate` calls. */
const cancelled: string[] = [];
let release: (() => void)[] = [];

const tools: FakeTool[] = [
  { name: 'echo', run: (args) => textResult(String(args.text)) },
  {
    name: 'tool_error',
    run: () => ({ content: [{ type: 'text', text: 'bad input' }], isError: true }),
  },
  {
    name: 'fails',
    run: () => {
      throw new McpError(-32603, 'the tool broke');
    },
  },
  {
    name: 'ask',
    run: async (_args, extra) => {
      const answer = await askName(extra);
      return textResult(JSON.stringify(answer.content));
    },
  },
  {
    name: 'hang',
    run: (_args, extra) =>
      new Promise((_resolve, reject) => {
        extra.signal.addEventListener('abort', () => {
          cancelled.push(String(extra.requestId));
          reject(new McpError(-32800, 'cancelled'));
        });
      }),
  },
  {
    name: 'gate',
    run: () => new Promise((resolve) => release.push(() => resolve(textResult('released')))),
  },
];

let bridge: InProcessBridge | undefined;
afterEach(async () => {
  expect(bridge?.serverViolations() ?? []).toEqual([]);
  await bridge?.close();
  bridge = undefined;
  cancelled.length = 0;
  release = [];
  vi.useRealTimers();
});

const open = async (input: ConfigInput = {}): Promise<InProcessBridge> =>
  (bridge = await inProcessBridge(tools, input));

const answerOf = async (pending: Promise<unknown>): Promise<Answer> =>
  ((await pending) as { response: Answer }).response;

const call = (gate: InProcessBridge, name: string, meta: object = WITH_TASKS) =>
  answerOf(gate.ask('tools/call', { name, arguments: { text: 'hi' }, _meta: meta }));

const tasksRequest = (gate: InProcessBridge, method: string, params: object, meta: object = WITH_TASKS) =>
  answerOf(gate.ask(method, { ...params, _meta: meta }));

/** Polls tasks/get until the task leaves `working` (bounded: a task that never does fails the test). */
async function pollUntilSettled(gate: InProcessBridge, taskId: string): Promise<Record<string, unknown>> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const got = await tasksRequest(gate, 'tasks/get', { taskId });
    if (got.error !== undefined) throw new Error(`tasks/get failed: ${got.error.message}`);
    if (got.result?.status !== 'working') return got.result!;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error(`task ${taskId} stayed working`);
}

async function createdTask(gate: InProcessBridge, name: string): Promise<string> {
  const created = await call(gate, name);
  expect(created.result).toMatchObject({ resultType: 'task', status: 'working' });
  expect(CreateTaskResultV2Schema.safeParse(created.result).success).toBe(true);
  return String(created.result!.taskId);
}

describe('the tasks extension for 2026-07-28 clients, in front of a server without tasks', () => {
  it('discover advertises the extension, and the server hears nothing of 2025 tasks', async () => {
    const gate = await open();
    const discovered = await tasksRequest(gate, 'server/discover', {});
    expect(discovered.result).toMatchObject({
      capabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } },
    });
    expect(discovered.result!.capabilities).not.toHaveProperty('tasks');
  });

  it('a call from a client with the extension is a task; tasks/get inlines the exact result', async () => {
    const gate = await open();
    const taskId = await createdTask(gate, 'echo');
    const done = await pollUntilSettled(gate, taskId);
    expect(GetTaskResultV2Schema.safeParse(done).success).toBe(true);
    expect(done).toMatchObject({
      resultType: 'complete',
      taskId,
      status: 'completed',
      result: { resultType: 'complete', content: [{ type: 'text', text: 'hi' }] },
    });
    expect(done.result).not.toHaveProperty('_meta');
    expect(done).not.toHaveProperty('ttl');
    expect(typeof done.ttlMs).toBe('number');
  });

  it('a client without the extension gets the plain result, never a task', async () => {
    const gate = await open();
    const plain = await call(gate, 'echo', MODERN_META);
    expect(plain.result).toMatchObject({ resultType: 'complete', content: [{ text: 'hi' }] });
    expect(plain.result).not.toHaveProperty('taskId');
  });

  it('an isError result is completed with that result; a JSON-RPC error is failed with it', async () => {
    const gate = await open();
    const toolError = await pollUntilSettled(gate, await createdTask(gate, 'tool_error'));
    expect(toolError).toMatchObject({
      status: 'completed',
      result: { isError: true, content: [{ text: 'bad input' }] },
    });
    const failed = await pollUntilSettled(gate, await createdTask(gate, 'fails'));
    expect(GetTaskResultV2Schema.safeParse(failed).success).toBe(true);
    expect(failed).toMatchObject({
      status: 'failed',
      error: { code: -32603, message: expect.stringContaining('the tool broke') },
    });
  });

  it("the server's elicitation is an inputRequest of the task; tasks/update answers it, once", async () => {
    const gate = await open();
    const taskId = await createdTask(gate, 'ask');
    const waiting = await pollUntilSettled(gate, taskId);
    expect(GetTaskResultV2Schema.safeParse(waiting).success).toBe(true);
    expect(waiting.status).toBe('input_required');
    const inputRequests = waiting.inputRequests as Record<string, { method: string; params: object }>;
    const [key] = Object.keys(inputRequests);
    expect(inputRequests[key!]).toMatchObject({
      method: 'elicitation/create',
      params: { message: 'name?' },
    });
    expect(inputRequests[key!]!.params).not.toHaveProperty('_meta');
    const again = await tasksRequest(gate, 'tasks/get', { taskId });
    expect(Object.keys(again.result!.inputRequests as object)).toEqual([key]);

    const ack = await tasksRequest(gate, 'tasks/update', {
      taskId,
      inputResponses: { [key!]: { action: 'accept', content: { name: 'Ada' } } },
    });
    expect(ack.result).toEqual(expect.objectContaining({ resultType: 'complete' }));
    // The same key again is not outstanding any more: ignored, still acknowledged.
    const repeated = await tasksRequest(gate, 'tasks/update', {
      taskId,
      inputResponses: { [key!]: { action: 'accept', content: { name: 'Eve' } } },
    });
    expect(repeated.result).toMatchObject({ resultType: 'complete' });
    let done = await pollUntilSettled(gate, taskId);
    for (let attempt = 0; done.status === 'input_required' && attempt < 200; attempt++) {
      done = await pollUntilSettled(gate, taskId);
    }
    expect(done).toMatchObject({
      status: 'completed',
      result: { content: [{ type: 'text', text: '{"name":"Ada"}' }] },
    });
  });

  it("a task's input is found while a plain call waits for its own (the Session could not tie it)", async () => {
    const gate = await open();
    const parked = await call(gate, 'ask', MODERN_META);
    expect(parked.result).toMatchObject({ resultType: 'input_required' });
    const taskId = await createdTask(gate, 'ask');
    let waiting = await pollUntilSettled(gate, taskId);
    for (let attempt = 0; Object.keys(waiting.inputRequests ?? {}).length === 0 && attempt < 200; attempt++) {
      waiting = await pollUntilSettled(gate, taskId);
    }
    expect(waiting.status).toBe('input_required');
    const [key] = Object.keys(waiting.inputRequests as object);
    await tasksRequest(gate, 'tasks/update', {
      taskId,
      inputResponses: { [key!]: { action: 'accept', content: { name: 'Bo' } } },
    });
    let done = waiting;
    for (let attempt = 0; done.status === 'input_required' && attempt < 200; attempt++) {
      done = await pollUntilSettled(gate, taskId);
    }
    expect(done).toMatchObject({ status: 'completed', result: { content: [{ text: '{"name":"Bo"}' }] } });
  });

  it('tasks/cancel is an ack, cancels the call upstream, and acks a terminal task too', async () => {
    const gate = await open();
    const taskId = await createdTask(gate, 'hang');
    const ack = await tasksRequest(gate, 'tasks/cancel', { taskId });
    expect(ack.result).toEqual({ resultType: 'complete', _meta: expect.any(Object) });
    const after = await tasksRequest(gate, 'tasks/get', { taskId });
    expect(after.result).toMatchObject({ status: 'cancelled' });
    for (let turn = 0; cancelled.length === 0 && turn < 500; turn++) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(cancelled).toHaveLength(1);
    const again = await tasksRequest(gate, 'tasks/cancel', { taskId });
    expect(again.result).toMatchObject({ resultType: 'complete' });
  });

  it('unknown task: -32602; tasks/* without the extension: -32021 naming it', async () => {
    const gate = await open();
    const unknown = await tasksRequest(gate, 'tasks/get', { taskId: 'no-such-task' });
    expect(unknown.error).toMatchObject({ code: -32602 });
    const undeclared = await tasksRequest(gate, 'tasks/get', { taskId: 'x' }, MODERN_META);
    expect(undeclared.error).toMatchObject({
      code: -32021,
      data: { requiredCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } },
    });
    const gone = await tasksRequest(gate, 'tasks/result', { taskId: 'x' });
    expect(gone.error).toMatchObject({ code: -32601 });
  });

  it('a tool the operator requires as a task: -32021 for a client without the extension', async () => {
    const gate = await open({ tools: [{ match: 'echo', taskSupport: 'required' }] });
    const refused = await call(gate, 'echo', MODERN_META);
    expect(refused.error).toMatchObject({
      code: -32021,
      message: expect.stringContaining('Tool "echo" runs only as a task'),
      data: { requiredCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } },
    });
    expect((await call(gate, 'echo')).result).toMatchObject({ resultType: 'task' });
  });

  it('a task is bound to the caller that created it: another gets -32602, as for an unknown id', async () => {
    const gate = await open();
    const as = (principal: string, method: string, params: object) =>
      answerOf(gate.ask(method, { ...params, _meta: WITH_TASKS }, { principal }));
    const created = await as('alice', 'tools/call', { name: 'hang', arguments: {} });
    const taskId = String(created.result!.taskId);
    expect((await as('alice', 'tasks/get', { taskId })).result).toMatchObject({ status: 'working' });
    for (const method of ['tasks/get', 'tasks/update', 'tasks/cancel']) {
      const refused = await as('mallory', method, { taskId, inputResponses: {} });
      expect(refused.error).toMatchObject({ code: -32602, message: expect.stringContaining('not found') });
    }
    // An identified caller is not served a task this process did not create for it.
    const unknown = await as('alice', 'tasks/get', { taskId: 'made-elsewhere' });
    expect(unknown.error).toMatchObject({ code: -32602 });
    expect((await as('alice', 'tasks/get', { taskId })).result).toMatchObject({ status: 'working' });
  });

  it('a forbidden tool is a plain call even for a client with the extension', async () => {
    const gate = await open({ tools: [{ match: 'echo', taskSupport: 'forbidden' }] });
    const plain = await call(gate, 'echo');
    expect(plain.result).toMatchObject({ resultType: 'complete', content: [{ text: 'hi' }] });
  });

  it('promoteAfter: a call that ends in time is answered plainly, one that does not becomes a task', async () => {
    const gate = await open({ tasks: { promoteAfter: 60_000 }, tools: [{ match: 'hang', promoteAfter: 1 }] });
    const fast = await call(gate, 'echo');
    expect(fast.result).toMatchObject({ resultType: 'complete', content: [{ text: 'hi' }] });
    expect(fast.result).not.toHaveProperty('taskId');
    expect(fast.result!._meta).not.toHaveProperty('io.modelcontextprotocol/related-task');
    const slow = await call(gate, 'hang');
    expect(slow.result).toMatchObject({ resultType: 'task', status: 'working' });
  });

  it('promoteAfter: a call that asks for input is promoted at once, its input in tasks/get', async () => {
    const gate = await open({ tasks: { promoteAfter: 60_000 } });
    const created = await call(gate, 'ask');
    expect(created.result).toMatchObject({ resultType: 'task' });
    const waiting = await pollUntilSettled(gate, String(created.result!.taskId));
    expect(waiting.status).toBe('input_required');
  });

  it('a client that gives up a call before its promotion cancels the task it never saw', async () => {
    const gate = await open({ tasks: { promoteAfter: 60_000 } });
    const controller = new AbortController();
    const answer = gate.ask(
      'tools/call',
      { name: 'hang', arguments: {}, _meta: WITH_TASKS },
      { signal: controller.signal },
    );
    for (let turn = 0; turn < 50; turn++) await new Promise((resolve) => setImmediate(resolve));
    controller.abort();
    expect(await answer).toBeUndefined();
    for (let turn = 0; cancelled.length === 0 && turn < 500; turn++) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(cancelled).toHaveLength(1);
  });

  it('a client that gives a call up before its CreateTaskResult came cancels the task it never saw', async () => {
    const gate = await open();
    const controller = new AbortController();
    const answer = gate.ask(
      'tools/call',
      { name: 'hang', arguments: {}, _meta: WITH_TASKS },
      { signal: controller.signal },
    );
    controller.abort();
    expect(await answer).toBeUndefined();
    for (let turn = 0; cancelled.length === 0 && turn < 500; turn++) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(cancelled).toHaveLength(1);
  });

  it('a task a second call ends while the first still runs is told apart by its id', async () => {
    const gate = await open();
    const first = await createdTask(gate, 'gate');
    const second = await createdTask(gate, 'gate');
    expect(first).not.toBe(second);
    for (let turn = 0; release.length < 2 && turn < 500; turn++) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    release.shift()!();
    const ended = await pollUntilSettled(gate, first);
    const still = await tasksRequest(gate, 'tasks/get', { taskId: second });
    expect([ended.status, still.result!.status].sort()).toEqual(['completed', 'working']);
    release.shift()!();
  });
});

describe('the tasks extension for 2026-07-28 clients, in front of a server with 2025 tasks', () => {
  const nativeTools: FakeTool[] = [
    {
      name: 'native_echo',
      taskSupport: 'optional',
      run: (args) => textResult(`native ${String(args.text)}`),
    },
    {
      name: 'native_error',
      taskSupport: 'optional',
      run: () => ({ content: [{ type: 'text', text: 'no good' }], isError: true }),
    },
    { name: 'native_only', taskSupport: 'required', run: (args) => textResult(`only ${String(args.text)}`) },
  ];
  const openNative = async (): Promise<InProcessBridge> => (bridge = await inProcessBridge(nativeTools));

  it("the server's own task gets the v2 face: flat creation, tasks/get with the inline result", async () => {
    const gate = await openNative();
    // tools/list first, so the Session knows the server runs these tools as tasks.
    await tasksRequest(gate, 'tools/list', {});
    const taskId = await createdTask(gate, 'native_echo');
    const done = await pollUntilSettled(gate, taskId);
    expect(GetTaskResultV2Schema.safeParse(done).success).toBe(true);
    expect(done).toMatchObject({ status: 'completed', result: { content: [{ text: 'native hi' }] } });
  });

  it("the server's failed isError task is completed with the exact result on the v2 face", async () => {
    const gate = await openNative();
    await tasksRequest(gate, 'tools/list', {});
    const done = await pollUntilSettled(gate, await createdTask(gate, 'native_error'));
    expect(done).toMatchObject({
      status: 'completed',
      result: { isError: true, content: [{ text: 'no good' }] },
    });
  });

  it('a tool the server runs only as a task is followed for a client without the extension', async () => {
    const gate = await openNative();
    await tasksRequest(gate, 'tools/list', {});
    const plain = await call(gate, 'native_only', MODERN_META);
    expect(plain.result).toMatchObject({ resultType: 'complete', content: [{ text: 'only hi' }] });
  });
});

describe('subscriptions/listen for task status', () => {
  it('acknowledges first, then sends notifications/tasks with the full DetailedTask, tagged with its id', async () => {
    const gate = await open();
    const taskId = await createdTask(gate, 'gate');
    const notified: { method: string; params: Record<string, unknown> }[] = [];
    const controller = new AbortController();
    const listening = gate.ask(
      'subscriptions/listen',
      { notifications: { taskIds: [taskId], toolsListChanged: true }, _meta: WITH_TASKS },
      { notified: notified as object[], signal: controller.signal },
    );
    for (let turn = 0; notified.length === 0 && turn < 500; turn++) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    // The in-process server declares no listChanged: only the task ids are honoured.
    expect(notified[0]).toEqual({
      jsonrpc: '2.0',
      method: 'notifications/subscriptions/acknowledged',
      params: {
        _meta: { 'io.modelcontextprotocol/subscriptionId': expect.any(Number) },
        notifications: { taskIds: [taskId] },
      },
    });
    for (let turn = 0; release.length === 0 && turn < 500; turn++) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    release.shift()!();
    const completed = () => notified.find((each) => each.params.status === 'completed');
    for (let turn = 0; completed() === undefined && turn < 500; turn++) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    const done = completed()!;
    expect(done.method).toBe('notifications/tasks');
    expect(done.params).toMatchObject({
      taskId,
      status: 'completed',
      result: { resultType: 'complete', content: [{ text: 'released' }] },
      _meta: { 'io.modelcontextprotocol/subscriptionId': expect.any(Number) },
    });
    expect(done.params).not.toHaveProperty('resultType');
    controller.abort();
    expect(await listening).toBeUndefined();
  });

  it('another caller listening for the task hears nothing of it', async () => {
    const gate = await open();
    const created = await answerOf(
      gate.ask('tools/call', { name: 'gate', arguments: {}, _meta: WITH_TASKS }, { principal: 'alice' }),
    );
    const taskId = String(created.result!.taskId);
    const heard: { method: string }[] = [];
    const controller = new AbortController();
    const listening = gate.ask(
      'subscriptions/listen',
      { notifications: { taskIds: [taskId] }, _meta: WITH_TASKS },
      { notified: heard as object[], signal: controller.signal, principal: 'mallory' },
    );
    for (let turn = 0; release.length === 0 && turn < 500; turn++) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    release.shift()!();
    await pollUntilSettledAs(gate, taskId, 'alice');
    for (let turn = 0; turn < 50; turn++) await new Promise((resolve) => setImmediate(resolve));
    expect(heard.map((each) => each.method)).toEqual(['notifications/subscriptions/acknowledged']);
    controller.abort();
    await listening;
  });

  it('acknowledges only the task ids the caller created, not the ids it sent (tasks.md "Task Status Notifications")', async () => {
    const gate = await open();
    const created = await answerOf(
      gate.ask('tools/call', { name: 'gate', arguments: {}, _meta: WITH_TASKS }, { principal: 'alice' }),
    );
    const taskId = String(created.result!.taskId);
    const asked = [taskId, 'no-such-task', taskId];
    expect(await acknowledged(gate, { taskIds: asked, toolsListChanged: true }, 'alice')).toEqual({
      taskIds: [taskId],
    });
    expect(await acknowledged(gate, { taskIds: asked }, 'mallory')).toEqual({});
    expect(await acknowledged(gate, { taskIds: ['no-such-task'] })).toEqual({});
    for (let turn = 0; release.length === 0 && turn < 500; turn++) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    release.shift()!();
  });

  it.each([
    [
      'more task ids than it takes',
      { taskIds: Array.from({ length: 257 }, (_, i) => `t-${i}`) },
      '257 entries',
    ],
    [
      'more resource URIs than it takes',
      { resourceSubscriptions: Array.from({ length: 257 }, (_, i) => `file:///${i}`) },
      '257 entries',
    ],
    ['more bytes than it takes', { taskIds: ['a'.repeat(40_000), 'b'.repeat(40_000)] }, '80000 bytes'],
  ])('refuses a filter with %s (-31001, saying the bounds)', async (_, notifications, words) => {
    const gate = await open();
    const refused = await tasksRequest(gate, 'subscriptions/listen', { notifications });
    expect(refused.error).toMatchObject({ code: -31001 });
    expect(refused.error!.message).toContain(words);
    expect(refused.error!.message).toContain('at most 256 task ids and 256 resource URIs, 65536 bytes');
  });

  it('takes a filter at its bounds', async () => {
    const gate = await open();
    const taskIds = Array.from({ length: 256 }, (_, i) => `${i}`.padStart(255, '0'));
    expect(await acknowledged(gate, { taskIds })).toEqual({});
  });

  it('an open stream keeps nothing of its request but the id (its params may be as large as a message)', async () => {
    const gate = await open();
    const heard: object[] = [];
    const controller = new AbortController();
    // Made in a scope of its own, so that the test holds the request only weakly.
    const { kept, listening } = ((params: JsonObject) => ({
      kept: new WeakRef(params),
      listening: gate.ask('subscriptions/listen', params, { notified: heard, signal: controller.signal }),
    }))({ notifications: {}, padding: 'x'.repeat(1_000_000), _meta: WITH_TASKS });
    for (let turn = 0; heard.length === 0 && turn < 500; turn++) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(heard).toHaveLength(1);
    await collectGarbage();
    expect(kept.deref()).toBeUndefined();
    controller.abort();
    expect(await listening).toBeUndefined();
  });

  it('refuses a malformed filter (-32602) and task ids without the extension (-32021)', async () => {
    const gate = await open();
    const bad = await tasksRequest(gate, 'subscriptions/listen', { notifications: { taskIds: 'x' } });
    expect(bad.error).toMatchObject({ code: -32602, message: expect.stringContaining('taskIds') });
    const undeclared = await tasksRequest(
      gate,
      'subscriptions/listen',
      { notifications: { taskIds: ['x'] } },
      MODERN_META,
    );
    expect(undeclared.error).toMatchObject({ code: -32021 });
  });

  it('ends every open stream with a complete result naming it when the bridge closes', async () => {
    const gate = await open();
    const listening = gate.ask('subscriptions/listen', { notifications: {}, _meta: WITH_TASKS });
    for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve));
    await gate.close();
    bridge = undefined;
    const answer = (await listening) as { response: Answer };
    expect(answer.response.result).toEqual({
      resultType: 'complete',
      _meta: { 'io.modelcontextprotocol/subscriptionId': answer.response.id },
    });
  });
});

/** The `notifications` of a listen's acknowledgment; the stream is closed once it came. */
async function acknowledged(
  gate: InProcessBridge,
  notifications: object,
  principal?: string,
): Promise<unknown> {
  const heard: { method: string; params: Record<string, unknown> }[] = [];
  const controller = new AbortController();
  const listening = gate.ask(
    'subscriptions/listen',
    { notifications, _meta: WITH_TASKS },
    { notified: heard, signal: controller.signal, ...(principal === undefined ? {} : { principal }) },
  );
  for (let turn = 0; heard.length === 0 && turn < 500; turn++) {
    await new Promise((resolve) => setImmediate(resolve));
  }
  controller.abort();
  expect(await listening).toBeUndefined();
  expect(heard[0]?.method).toBe('notifications/subscriptions/acknowledged');
  return heard[0]!.params.notifications;
}

async function pollUntilSettledAs(gate: InProcessBridge, taskId: string, principal: string): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const got = await answerOf(gate.ask('tasks/get', { taskId, _meta: WITH_TASKS }, { principal }));
    if (got.result?.status !== 'working') return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error(`task ${taskId} stayed working`);
}

describe('a task whose tasks/result ends before the task does', () => {
  it('is followed again, and its result is inlined once it completes (the early error is not its outcome)', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const nativeGate: FakeTool = {
      name: 'native_gate',
      taskSupport: 'optional',
      run: () => new Promise((resolve) => release.push(() => resolve(textResult('late')))),
    };
    bridge = await inProcessBridge([nativeGate], {
      upstream: { command: 'never-run', requestTimeout: 1_000 },
    });
    const gate = bridge;
    await tasksRequest(gate, 'tools/list', {});
    const taskId = await createdTask(gate, 'native_gate');
    for (let turn = 0; release.length === 0 && turn < 500; turn++) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    // A client that only listens (it need not poll: tasks.md "Task Status Notifications").
    const heard: { method: string; params: Record<string, unknown> }[] = [];
    const controller = new AbortController();
    const listening = gate.ask(
      'subscriptions/listen',
      { notifications: { taskIds: [taskId] }, _meta: WITH_TASKS },
      { notified: heard as object[], signal: controller.signal },
    );
    // The Session's deadline for the tasks/result it forwarded upstream passes; the task runs on.
    await vi.advanceTimersByTimeAsync(1_500);
    release.shift()!();
    const completed = () => heard.find((each) => each.params.status === 'completed');
    for (let turn = 0; completed() === undefined && turn < 200; turn++) {
      await vi.advanceTimersByTimeAsync(50);
    }
    expect(completed()?.params).toMatchObject({ taskId, result: { content: [{ text: 'late' }] } });
    controller.abort();
    await listening;
  });
});

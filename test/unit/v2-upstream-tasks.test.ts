/**
 * The v2 side of a modern upstream (src/modern/upstream-v2-tasks.ts) in the test's own process, against
 * the v2 task fixture's own logic (test/fixtures/v2-task-server.js) as the upstream: what the Session is
 * told (v1 shapes, checked against ext-tasks `./core/v1`), which input requests it is asked, and what the
 * index keeps. The clock is the test's.
 */
import {
  CreateTaskResultV1Schema,
  GetTaskResultV1Schema,
  ListTasksResultV1Schema,
  TaskStatusNotificationV1Schema,
} from '@modelcontextprotocol/ext-tasks/core/v1';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { V2UpstreamTasks, TASKS_EXTENSION } from '../../src/modern/upstream-v2-tasks.js';
import type { JsonObject, RequestId } from '../../src/protocol/messages.js';
import type { TaskOutcome } from '../../src/tasks/state.js';
import { createV2TaskServer } from '../fixtures/v2-task-server.js';
import { Inbox } from '../helpers/inbox.js';
import { valid } from '../helpers/official-schemas.js';

const RELATED_TASK = 'io.modelcontextprotocol/related-task';
const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': { extensions: { [TASKS_EXTENSION]: {} } },
};

type Sent = JsonObject & { onStreamOf?: RequestId };

/** The v2 side over the fixture's logic; `clock` is what it reads as now (real time unless moved). */
function harness({ statusNotifications = true } = {}) {
  const session = new Inbox<Sent>();
  /** Every request made upstream, in order. */
  const upstreamCalls = new Inbox<{ method: string; params: JsonObject }>();
  const clock = { offsetMs: 0 };
  const answers = new Map<number, (message: JsonObject) => void>();
  const upstream = createV2TaskServer((message) => {
    const { id } = message as { id: number };
    answers.get(id)?.(message as JsonObject);
    answers.delete(id);
  });
  let nextId = 1;
  const call = (method: string, params: JsonObject): Promise<TaskOutcome> =>
    new Promise((resolve) => {
      upstreamCalls.push({ method, params });
      const id = nextId++;
      answers.set(id, (message) =>
        resolve(
          'error' in message ? { error: message.error as never } : { result: message.result as JsonObject },
        ),
      );
      upstream({ id, method, params: { ...params, _meta: META } });
    });
  const tasks = new V2UpstreamTasks({
    call,
    toSession: (message, onStreamOf) =>
      session.push({ ...(message as JsonObject), ...(onStreamOf === undefined ? {} : { onStreamOf }) }),
    now: () => Date.now() + clock.offsetMs,
    logger: pino({ level: 'silent' }),
    statusNotifications,
  });
  let sessionIds = 1;
  const answerTo = (id: RequestId) =>
    session.waitFor(
      (message) => message.id === id && ('result' in message || 'error' in message),
      `the answer to ${id}`,
    );
  return {
    session,
    upstreamCalls,
    clock,
    tasks,
    call,
    /** A task-augmented tools/call of the Session, as the translator hands its answer over. */
    async create(name: string, args: JsonObject, ttl = 60_000): Promise<Sent> {
      const id = `call-${sessionIds++}`;
      const params = { name, arguments: args, task: { ttl } };
      tasks.created(id, params, await call('tools/call', { name, arguments: args }));
      return answerTo(id);
    },
    /** The Session's tasks/* request; resolves with the answer. */
    ask(method: string, params: JsonObject, id: RequestId = `req-${sessionIds++}`): Promise<Sent> {
      expect(tasks.serve({ jsonrpc: '2.0', id, method, params })).toBe(true);
      return answerTo(id);
    },
    answerTo,
  };
}

const taskIdOf = (created: Sent) => (created.result as { task: { taskId: string } }).task.taskId;

describe('v2 upstream tasks, on the v1 face', () => {
  it('tools/list: every tool may be called as a task, unless it says otherwise', () => {
    const { tasks } = harness();
    const listed = tasks.listTools({
      tools: [{ name: 'a' }, { name: 'b', execution: { taskSupport: 'forbidden' } }],
    });
    expect(listed.tools).toEqual([
      { name: 'a', execution: { taskSupport: 'optional' } },
      { name: 'b', execution: { taskSupport: 'forbidden' } },
    ]);
  });

  it('a flat CreateTaskResult becomes the nested v1 one, ttlMs → ttl, pollIntervalMs → pollInterval', async () => {
    const { create } = harness();
    const created = await create('slow', { ms: 10_000 });
    const { task } = valid(CreateTaskResultV1Schema, created.result);
    expect(task).toMatchObject({ status: 'working', ttl: 60_000, pollInterval: 50 });
    expect(created.result).not.toHaveProperty('resultType');
  });

  it('a plain answer to a task-augmented call is a task held here: created working, completed at once, announced', async () => {
    const { create, ask, session } = harness();
    const created = await create('echo', { text: 'held' });
    const taskId = taskIdOf(created);
    expect(valid(CreateTaskResultV1Schema, created.result).task.status).toBe('working');
    const notice = await session.waitFor(
      (m) => m.method === 'notifications/tasks/status',
      'the status notice',
    );
    expect(valid(TaskStatusNotificationV1Schema, notice).params).toMatchObject({
      taskId,
      status: 'completed',
    });
    expect(valid(GetTaskResultV1Schema, (await ask('tasks/get', { taskId })).result).status).toBe(
      'completed',
    );
    expect((await ask('tasks/result', { taskId })).result).toEqual({
      content: [{ type: 'text', text: 'held' }],
      _meta: { [RELATED_TASK]: { taskId } },
    });
    expect((await ask('tasks/cancel', { taskId })).error).toMatchObject({
      code: -32602,
      message: "Cannot cancel task: already in terminal status 'completed'",
    });
  });

  it('tasks.statusNotifications off: nothing is announced', async () => {
    const { create, ask, session } = harness({ statusNotifications: false });
    const taskId = taskIdOf(await create('echo', { text: 'quiet' }));
    expect((await ask('tasks/get', { taskId })).result).toMatchObject({ status: 'completed' });
    expect(session.items.filter((message) => message.method === 'notifications/tasks/status')).toEqual([]);
  });

  it('a held task expires by its ttl: then it is not found (-32602)', async () => {
    const { create, ask, clock } = harness();
    const taskId = taskIdOf(await create('echo', { text: 'brief' }, 1_000));
    expect((await ask('tasks/get', { taskId })).result).toMatchObject({ status: 'completed' });
    clock.offsetMs = 1_000;
    expect((await ask('tasks/get', { taskId })).error).toMatchObject({ code: -32602 });
  });

  it('tasks/result: each input key is put to the Session once, however often the task is polled, tagged and on its stream', async () => {
    const { create, ask, session, tasks, upstreamCalls } = harness();
    const taskId = taskIdOf(await create('ask', { question: 'Name?' }));
    const result = ask('tasks/result', { taskId }, 'result-1');
    const question = await session.waitFor((m) => m.method === 'elicitation/create', 'the input request');
    expect(question).toMatchObject({
      onStreamOf: 'result-1',
      params: { mode: 'form', message: 'Name?', _meta: { [RELATED_TASK]: { taskId } } },
    });
    // The task is polled three times more, still asking, before it is answered.
    const start = upstreamCalls.items.length;
    const polled = () =>
      upstreamCalls.items.slice(start).filter((each) => each.method === 'tasks/get').length;
    await upstreamCalls.waitFor(() => polled() >= 3, 'three more polls');
    expect(session.items.filter((m) => m.method === 'elicitation/create')).toHaveLength(1);
    expect(
      tasks.inputAnswered({
        jsonrpc: '2.0',
        id: question.id as string,
        result: { action: 'accept', content: { answer: 'Luca' } },
      }),
    ).toBe(true);
    expect((await result).result).toMatchObject({
      content: [{ type: 'text', text: JSON.stringify({ action: 'accept', content: { answer: 'Luca' } }) }],
      _meta: { [RELATED_TASK]: { taskId } },
    });
  });

  it('tasks/cancel of a running task: an ack upstream, then the Task in cancelled, announced', async () => {
    const { create, ask, session, upstreamCalls } = harness();
    const taskId = taskIdOf(await create('slow', { ms: 60_000 }));
    const cancelled = await ask('tasks/cancel', { taskId });
    expect(cancelled.result).toMatchObject({ taskId, status: 'cancelled' });
    expect(upstreamCalls.items.map((each) => each.method)).toEqual([
      'tools/call',
      'tasks/get',
      'tasks/cancel',
      'tasks/get',
    ]);
    expect(session.items).toContainEqual(
      expect.objectContaining({
        method: 'notifications/tasks/status',
        params: expect.objectContaining({ taskId, status: 'cancelled' }),
      }),
    );
    expect((await ask('tasks/result', { taskId })).error).toMatchObject({
      message: `Task ${taskId} was cancelled: it has no result`,
    });
  });

  it('a tasks/result the Session cancelled stops following, and is never answered', async () => {
    const { create, ask, session, tasks, upstreamCalls } = harness();
    const taskId = taskIdOf(await create('slow', { ms: 200, text: 'later' }));
    // Never answered, so its wait for an answer fails after the test: a worker's files share one process.
    ask('tasks/result', { taskId }, 'result-1').catch(() => undefined);
    await upstreamCalls.waitFor((each) => each.method === 'tasks/get', 'the first poll');
    expect(tasks.cancelled('result-1')).toBe(true);
    expect((await ask('tasks/result', { taskId }, 'result-2')).result).toMatchObject({
      content: [{ type: 'text', text: 'later' }],
    });
    expect(tasks.cancelled('result-1')).toBe(false);
    expect(session.items.filter((message) => message.id === 'result-1')).toEqual([]);
  });

  it('a plain call the server can only run as a task is followed, and answered with the plain result', async () => {
    const { tasks, call, answerTo } = harness();
    tasks.unwrapCreated(
      'plain-1',
      await call('tools/call', { name: 'task_only', arguments: { text: 'unwrapped' } }),
    );
    expect((await answerTo('plain-1')).result).toEqual({ content: [{ type: 'text', text: 'unwrapped' }] });
  });

  it('a v2 notifications/tasks of a task made here is a v1 status notification (isError: failed); of any other, nothing', async () => {
    const { tasks, session, create } = harness();
    const created = await create('slow', { ms: 60_000 });
    const { task } = valid(CreateTaskResultV1Schema, created.result);
    const now = new Date().toISOString();
    const pushed = { createdAt: task.createdAt, lastUpdatedAt: now, ttlMs: 60_000, pollIntervalMs: 50 };
    const result = { content: [{ type: 'text', text: 'bad' }], isError: true };
    tasks.notified({ ...pushed, taskId: 'not-made-here', status: 'completed', result });
    tasks.notified({ ...pushed, taskId: task.taskId, status: 'completed', result });
    const notices = session.items.filter((message) => message.method === 'notifications/tasks/status');
    expect(notices).toHaveLength(1);
    expect(valid(TaskStatusNotificationV1Schema, notices[0]).params).toEqual({
      taskId: task.taskId,
      status: 'failed',
      createdAt: task.createdAt,
      lastUpdatedAt: now,
      ttl: 60_000,
      pollInterval: 50,
    });
  });

  it('the index is bounded: past 1000 tasks the oldest is forgotten, and the list is newest last', async () => {
    const { create, ask } = harness();
    const first = taskIdOf(await create('echo', { text: 'first' }));
    let last = first;
    for (let i = 0; i < 1_000; i++) last = taskIdOf(await create('echo', { text: String(i) }));
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = valid(
        ListTasksResultV1Schema,
        (await ask('tasks/list', cursor === undefined ? {} : { cursor })).result,
      );
      seen.push(...page.tasks.map((task) => task.taskId));
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    expect(seen).toHaveLength(1_000);
    expect(seen).not.toContain(first);
    expect(seen.at(-1)).toBe(last);
  });
});

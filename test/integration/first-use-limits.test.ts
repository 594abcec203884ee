/**
 * What a first real user hits (issue 14), limits and tasks/list: an ordinary client's fan-out of task
 * calls is not refused, a limit refuses only what an operator asked it to (and is counted), and
 * tasks/list says the same as the README's security table. Through the built CLI.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema, CreateTaskResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { httpTransport } from '../helpers/http-client.js';
import { sample } from '../helpers/prometheus.js';
import { FIXTURES, Gateway, RawPeer, TASK_AWARE, connect, type Connection } from '../helpers/taskgate.js';

let connection: Connection | undefined;
let peer: RawPeer | undefined;
let gateway: Gateway | undefined;
afterEach(async () => {
  expect(connection?.transport.violations ?? []).toEqual([]);
  await connection?.close();
  await peer?.stop();
  await gateway?.stop();
  connection = undefined;
  peer = undefined;
  gateway = undefined;
});

const taskCall = (c: Connection, name: string, args: Record<string, unknown>) =>
  c.client.request(
    { method: 'tools/call', params: { name, arguments: args, task: {} } },
    CreateTaskResultSchema,
  );

/** `count` task-augmented echo calls at once: the task ids of those created, the errors of the others. */
async function fanOut(c: Connection, count: number): Promise<{ ids: string[]; refused: McpError[] }> {
  const settled = await Promise.allSettled(
    Array.from({ length: count }, (_, i) => taskCall(c, 'echo', { text: `call ${i}` })),
  );
  const ids: string[] = [];
  const refused: McpError[] = [];
  for (const outcome of settled) {
    if (outcome.status === 'fulfilled') ids.push(outcome.value.task.taskId);
    else if (outcome.reason instanceof McpError) refused.push(outcome.reason);
    else throw outcome.reason;
  }
  return { ids, refused };
}

describe('issue 14.2: limits refuse abuse, not an ordinary fan-out', () => {
  it('creates all of one client’s 1 000 concurrent task calls over the HTTP front, and serves every result', async () => {
    const c = (connection = await connect('legacy', { front: 'http' }));
    const { ids, refused } = await fanOut(c, 1_000);
    expect(refused.map((error) => error.message).slice(0, 3)).toEqual([]);
    expect(ids).toHaveLength(1_000);
    const results = await Promise.all(
      ids.map((id) => c.client.experimental.tasks.getTaskResult(id, CallToolResultSchema)),
    );
    expect(results.map((result) => result.content[0])).toEqual(
      ids.map((_, i) => ({ type: 'text', text: `call ${i}` })),
    );
  }, 120_000);

  it('holds one client’s 1 000 live tasks at once on the HTTP front, and cancels them all', async () => {
    const c = (connection = await connect('legacy', { front: 'http' }));
    const settled = await Promise.allSettled(
      Array.from({ length: 1_000 }, () => taskCall(c, 'sleep', { ms: 60_000 })),
    );
    const refused = settled.filter((outcome) => outcome.status === 'rejected');
    expect(refused.map((outcome) => String(outcome.reason)).slice(0, 3)).toEqual([]);
    const ids = settled.map((outcome) => (outcome.status === 'fulfilled' ? outcome.value.task.taskId : ''));
    const cancelled = await Promise.all(ids.map((id) => c.client.experimental.tasks.cancelTask(id)));
    expect(new Set(cancelled.map((task) => task.status))).toEqual(new Set(['cancelled']));
  }, 120_000);

  it('creates all of 50 concurrent task calls over stdio', async () => {
    const c = (connection = await connect('legacy'));
    const { ids, refused } = await fanOut(c, 50);
    expect(refused.map((error) => error.message)).toEqual([]);
    expect(ids).toHaveLength(50);
  });

  it('applies a limit set over stdio (by flag or variable), and counts each refusal in taskgate_limit_refusals_total', async () => {
    peer = await RawPeer.initialized(
      'legacy',
      ['--task-creation-rate', '0.001', '--task-creation-burst', '3', '--admin-listen', '127.0.0.1:0'],
      { TASKGATE_MAX_LIVE_TASKS: '1' },
    );
    const admin = await peer.adminUrl();
    // The bucket lets three in, then refuses; of those three, one becomes live and holds the only slot.
    for (let i = 0; i < 4; i++) {
      peer.send({
        jsonrpc: '2.0',
        id: `call-${i}`,
        method: 'tools/call',
        params: { name: 'sleep', arguments: { ms: 60_000 }, task: {} },
      });
    }
    const answers = await Promise.all([0, 1, 2, 3].map((i) => peer!.response(`call-${i}`)));
    const messages = answers.map((answer) => (answer.error as { message?: string } | undefined)?.message);
    expect(answers.filter((answer) => 'result' in answer)).toHaveLength(1);
    expect(
      answers.filter((answer) => (answer.error as { code?: number } | undefined)?.code === -32001),
    ).toHaveLength(3);
    expect(messages[3]).toMatch(/limits\.taskCreationRate/);
    expect(messages.filter((message) => /limits\.maxLiveTasks/.test(message ?? ''))).toHaveLength(2);

    const metrics = await (await fetch(new URL('/metrics', admin))).text();
    expect(sample(metrics, 'taskgate_limit_refusals_total', { limit: 'task_creation_rate' })).toBe(1);
    expect(sample(metrics, 'taskgate_limit_refusals_total', { limit: 'max_live_tasks' })).toBe(2);

    const created = answers.find((answer) => 'result' in answer)!.result as { task: { taskId: string } };
    peer.send({
      jsonrpc: '2.0',
      id: 'cancel',
      method: 'tasks/cancel',
      params: { taskId: created.task.taskId },
    });
    // The bucket for tasks/* is not set over stdio: the cancel passes.
    expect(await peer.response('cancel')).toHaveProperty('result');
  });

  it('counts a rate refusal on the HTTP front, scraped from /metrics beside it', async () => {
    gateway = await Gateway.start(
      [process.execPath, FIXTURES.legacy],
      ['--task-request-rate', '0.001', '--task-request-burst', '1'],
    );
    const client = new Client({ name: 'limits', version: '1' }, { capabilities: TASK_AWARE });
    await client.connect(httpTransport(gateway.url));
    try {
      await client.experimental.tasks.getTask('no-such-task').catch(() => undefined);
      const refused = await client.experimental.tasks
        .getTask('no-such-task')
        .catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(McpError);
      expect((refused as McpError).code).toBe(-32001);
      const metrics = await (await fetch(new URL('/metrics', gateway.url))).text();
      expect(sample(metrics, 'taskgate_limit_refusals_total', { limit: 'task_request_rate' })).toBe(1);
    } finally {
      await client.close();
    }
  });
});

/** Every page of tasks/list, first to last, as the client saw them. */
async function allPages(c: Connection): Promise<{ taskIds: string[]; nextCursor?: string }[]> {
  const pages: { taskIds: string[]; nextCursor?: string }[] = [];
  let cursor: string | undefined;
  do {
    const page = await c.client.experimental.tasks.listTasks(cursor);
    cursor = page.nextCursor;
    pages.push({ taskIds: page.tasks.map((task) => task.taskId), ...(cursor ? { nextCursor: cursor } : {}) });
  } while (cursor !== undefined && pages.length < 20);
  return pages;
}

const emptyWithCursor = (pages: { taskIds: string[]; nextCursor?: string }[]) =>
  pages.filter((page) => page.taskIds.length === 0 && page.nextCursor !== undefined);

/** A server with tasks of its own whose `echo` runs plain only, so that taskgate runs echo's tasks. */
const MIXED = { FIXTURE_PLAIN_TOOLS: 'echo' };

describe('issue 14.4: tasks/list', () => {
  it('never answers an empty page with a cursor: with no task of its own, the first page is the server’s', async () => {
    const c = (connection = await connect('native'));
    const { task } = await taskCall(c, 'echo', { text: 'the server’s own' });
    const pages = await allPages(c);
    expect(emptyWithCursor(pages)).toEqual([]);
    expect(pages[0]!.taskIds).toContain(task.taskId);
  });

  it('walks taskgate’s tasks, then the server’s, one page at a time, and no page is empty while it has a cursor', async () => {
    const c = (connection = await connect('native', { env: MIXED, flags: ['--list-page-size', '1'] }));
    await c.client.listTools();
    const own = (await taskCall(c, 'echo', { text: 'taskgate runs this' })).task.taskId;
    const upstream = (await taskCall(c, 'sleep', { ms: 1 })).task.taskId;
    const pages = await allPages(c);
    expect(emptyWithCursor(pages)).toEqual([]);
    expect(pages.flatMap((page) => page.taskIds)).toEqual([own, upstream]);
  });

  it('is advertised and served over stdio by default: the one connection is the binding context', async () => {
    const c = (connection = await connect('legacy'));
    expect(c.client.getServerCapabilities()?.tasks?.list).toEqual({});
    const created = [];
    for (const text of ['a', 'b']) created.push((await taskCall(c, 'echo', { text })).task.taskId);
    const { tasks } = await c.client.experimental.tasks.listTasks();
    expect(tasks.map((task) => task.taskId)).toEqual(created);
  });

  it('is off over stdio when the operator turns it off', async () => {
    const c = (connection = await connect('legacy', { env: { TASKGATE_EXPOSE_TASK_LIST: 'false' } }));
    expect(c.client.getServerCapabilities()?.tasks?.list).toBeUndefined();
    const refused = await c.client.experimental.tasks.listTasks().catch((error: unknown) => error);
    expect((refused as McpError).code).toBe(-32601);
  });

  it('on the HTTP front without auth lists only the server’s own tasks, not taskgate’s, unless --expose-task-list', async () => {
    for (const [flags, listsOwn] of [
      [[], false],
      [['--expose-task-list'], true],
    ] as const) {
      const c = (connection = await connect('native', { front: 'http', env: MIXED, flags: [...flags] }));
      await c.client.listTools();
      const own = (await taskCall(c, 'echo', { text: 'taskgate runs this' })).task.taskId;
      const upstream = (await taskCall(c, 'sleep', { ms: 1 })).task.taskId;
      expect(c.client.getServerCapabilities()?.tasks?.list).toEqual({});
      const listed = (await allPages(c)).flatMap((page) => page.taskIds);
      expect(listed).toEqual(listsOwn ? [own, upstream] : [upstream]);
      await c.close();
      connection = undefined;
    }
  });
});

/**
 * What a first real user hits (issue 14), in one process: an ordinary client's fan-out of task calls is
 * not refused under either front's default limits, and tasks/list says the same as the README's security
 * table. A real Session between an SDK client and the fixtures' own servers (legacy-fixture.js,
 * native-fixture.js); the HTTP front's defaults are those of a config with `http.listen`. What needs the
 * processes (the HTTP front under a fan-out, limits set by flag or variable, /metrics) stays in
 * test/integration/first-use-limits.test.ts.
 */
import type { McpError } from '@modelcontextprotocol/sdk/types.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import type { ConfigInput } from '../../src/config/schema.js';
import { createLegacyServer } from '../fixtures/legacy-fixture.js';
import { createNativeServer } from '../fixtures/native-fixture.js';
import { inProcessGateway, type Gateway } from '../helpers/in-process.js';

let gate: Gateway | undefined;
afterEach(async () => {
  expect(gate?.violations ?? []).toEqual([]);
  await gate?.close();
  gate = undefined;
});

/** The HTTP front's defaults (limits on, taskgate's own tasks not listed), with nothing listening. */
const HTTP_FRONT: ConfigInput = { http: { listen: '127.0.0.1:0' } };

const legacy = async (config: ConfigInput = {}): Promise<Gateway> =>
  (gate = await inProcessGateway({ config, server: createLegacyServer() }));

/** native-fixture.js's server; `plainEcho`: its `echo` runs plain only, so that taskgate runs echo's tasks. */
const native = async (config: ConfigInput = {}, plainEcho = false): Promise<Gateway> =>
  (gate = await inProcessGateway({
    config,
    server: createNativeServer(plainEcho ? { plainTools: new Set(['echo']) } : {}),
  }));

const taskCall = (g: Gateway, name: string, args: Record<string, unknown>) =>
  g.client.request(
    { method: 'tools/call', params: { name, arguments: args, task: {} } },
    CreateTaskResultSchema,
  );

describe('in process, issue 14.2: limits refuse abuse, not an ordinary fan-out', () => {
  it('creates all of 50 concurrent task calls under the stdio defaults', async () => {
    const g = await legacy();
    const settled = await Promise.allSettled(
      Array.from({ length: 50 }, (_, i) => taskCall(g, 'echo', { text: `call ${i}` })),
    );
    expect(settled.filter((outcome) => outcome.status === 'rejected')).toEqual([]);
    expect(g.refusals).toEqual([]);
  });

  it('holds one client’s 1 000 live tasks at once under the HTTP front’s defaults, and cancels them all', async () => {
    const g = await legacy(HTTP_FRONT);
    const settled = await Promise.allSettled(
      Array.from({ length: 1_000 }, () => taskCall(g, 'sleep', { ms: 60_000 })),
    );
    const refused = settled.filter((outcome) => outcome.status === 'rejected');
    expect(refused.map((outcome) => String(outcome.reason)).slice(0, 3)).toEqual([]);
    const ids = settled.map((outcome) => (outcome.status === 'fulfilled' ? outcome.value.task.taskId : ''));
    const cancelled = await Promise.all(ids.map((id) => g.client.experimental.tasks.cancelTask(id)));
    expect(new Set(cancelled.map((task) => task.status))).toEqual(new Set(['cancelled']));
    // One more is past the default limits.maxLiveTasks only while those live: now it is not.
    expect((await taskCall(g, 'echo', { text: 'after' })).task.status).toBe('working');
  }, 60_000);
});

/** Waits for the server's own tasks to end, so that none outlives the test's server. */
const finished = (g: Gateway, ...ids: string[]) =>
  Promise.all(ids.map((id) => g.client.experimental.tasks.getTaskResult(id, CallToolResultSchema)));

/** Every page of tasks/list, first to last, as the client saw them. */
async function allPages(g: Gateway): Promise<{ taskIds: string[]; nextCursor?: string }[]> {
  const pages: { taskIds: string[]; nextCursor?: string }[] = [];
  let cursor: string | undefined;
  do {
    const page = await g.client.experimental.tasks.listTasks(cursor);
    cursor = page.nextCursor;
    pages.push({ taskIds: page.tasks.map((task) => task.taskId), ...(cursor ? { nextCursor: cursor } : {}) });
  } while (cursor !== undefined && pages.length < 20);
  return pages;
}

const emptyWithCursor = (pages: { taskIds: string[]; nextCursor?: string }[]) =>
  pages.filter((page) => page.taskIds.length === 0 && page.nextCursor !== undefined);

describe('in process, issue 14.4: tasks/list', () => {
  it('never answers an empty page with a cursor: with no task of its own, the first page is the server’s', async () => {
    const g = await native();
    const { task } = await taskCall(g, 'echo', { text: 'the server’s own' });
    const pages = await allPages(g);
    expect(emptyWithCursor(pages)).toEqual([]);
    expect(pages[0]!.taskIds).toContain(task.taskId);
    await finished(g, task.taskId);
  });

  it('walks taskgate’s tasks, then the server’s, one page at a time, and no page is empty while it has a cursor', async () => {
    const g = await native({ tasks: { listPageSize: 1 } }, true);
    await g.client.listTools();
    const own = (await taskCall(g, 'echo', { text: 'taskgate runs this' })).task.taskId;
    const upstream = (await taskCall(g, 'sleep', { ms: 1 })).task.taskId;
    const pages = await allPages(g);
    expect(emptyWithCursor(pages)).toEqual([]);
    expect(pages.flatMap((page) => page.taskIds)).toEqual([own, upstream]);
    await finished(g, upstream);
  });

  it('is advertised and served under the stdio defaults: the one connection is the binding context', async () => {
    const g = await legacy();
    expect(g.client.getServerCapabilities()?.tasks?.list).toEqual({});
    const created = [];
    for (const text of ['a', 'b']) created.push((await taskCall(g, 'echo', { text })).task.taskId);
    const { tasks } = await g.client.experimental.tasks.listTasks();
    expect(tasks.map((task) => task.taskId)).toEqual(created);
  });

  it('is off when the operator turns it off', async () => {
    const g = await legacy({ tasks: { exposeList: false } });
    expect(g.client.getServerCapabilities()?.tasks?.list).toBeUndefined();
    const refused = await g.client.experimental.tasks.listTasks().catch((error: unknown) => error);
    expect((refused as McpError).code).toBe(-32601);
  });

  for (const [exposeList, listsOwn] of [
    [undefined, false],
    [true, true],
  ] as const) {
    it(`under the HTTP front’s defaults lists ${listsOwn ? 'taskgate’s tasks and ' : 'only '}the server’s own with tasks.exposeList ${String(exposeList)}`, async () => {
      const g = await native(
        { ...HTTP_FRONT, ...(exposeList === undefined ? {} : { tasks: { exposeList } }) },
        true,
      );
      await g.client.listTools();
      const own = (await taskCall(g, 'echo', { text: 'taskgate runs this' })).task.taskId;
      const upstream = (await taskCall(g, 'sleep', { ms: 1 })).task.taskId;
      expect(g.client.getServerCapabilities()?.tasks?.list).toEqual({});
      const listed = (await allPages(g)).flatMap((page) => page.taskIds);
      expect(listed).toEqual(listsOwn ? [own, upstream] : [upstream]);
      await finished(g, upstream);
    });
  }
});

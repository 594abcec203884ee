/**
 * Tasks the upstream server runs itself, followed by taskgate to their end (issue 27): the real
 * server-everything in process, behind a Session whose sightings feed a TaskBoard, the dashboard's and
 * the live gauges' source. Its task-only `simulate-research-query` takes about 4 s.
 */
import { createServer } from '@modelcontextprotocol/server-everything/dist/server/index.js';
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ToolListChangedNotificationSchema,
  type CallToolResult,
  type ClientCapabilities,
} from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { TaskBoard } from '../../src/observability/task-board.js';
import { inProcessGateway, textResult, type FakeTool, type Gateway } from '../helpers/in-process.js';

/** What the MCP Inspector CLI 2.12 declares: no tasks, the tasks extension, elicitation. */
const INSPECTOR_CAPABILITIES: ClientCapabilities = {
  elicitation: { form: {} },
  extensions: { 'io.modelcontextprotocol/tasks': {} },
};

let gate: Gateway | undefined;
let cleanup: (() => void) | undefined;
afterEach(async () => {
  expect(gate?.violations ?? []).toEqual([]);
  await gate?.close();
  cleanup?.();
  gate = undefined;
});

async function everything(board: TaskBoard): Promise<Gateway> {
  const made = createServer();
  cleanup = () => made.cleanup(undefined);
  return (gate = await inProcessGateway({
    server: made.server.server,
    clientCapabilities: INSPECTOR_CAPABILITIES,
    sightings: board.sightingsOf('s1'),
  }));
}

const research = (g: Gateway) =>
  g.client.request(
    { method: 'tools/call', params: { name: 'simulate-research-query', arguments: { topic: 'otters' } } },
    CallToolResultSchema,
    { timeout: 20_000 },
  );

describe('server-everything’s own task, unwrapped for a client without tasks', () => {
  it('is seen to its end: the board shows it completed under its tool, and counts nothing live', async () => {
    const board = new TaskBoard();
    const g = await everything(board);
    await g.client.setLoggingLevel('info');
    await g.client.listTools();
    const result = await research(g);
    expect(JSON.stringify(result.content)).toContain('Research Report: otters');

    expect(board.liveByStatus()).toEqual({ working: 0, input_required: 0 });
    const { live, recent } = board.snapshot();
    expect(live).toEqual([]);
    expect(recent.map(({ tool, status, runBy }) => ({ tool, status, runBy }))).toEqual([
      { tool: 'simulate-research-query', status: 'completed', runBy: 'server' },
    ]);
  }, 30_000);
});

describe('a server’s own task passed through to a client with tasks', () => {
  it('ends on the board when the client fetches its result, with no tasks/get or status after its end', async () => {
    const board = new TaskBoard();
    // The result is stored past the SDK's per-request store, which would announce it: many servers do not.
    const quietly = async (): Promise<CallToolResult> => {
      const store = gate!.serverTasks!;
      const [task] = (await store.listTasks()).tasks;
      await store.storeTaskResult(task!.taskId, 'completed', textResult('done'));
      return textResult('done');
    };
    const g = (gate = await inProcessGateway({
      tools: [{ name: 'slow', taskSupport: 'required', run: quietly }],
      sightings: board.sightingsOf('s1'),
    }));
    await g.client.listTools();
    const { task } = await g.client.request(
      { method: 'tools/call', params: { name: 'slow', arguments: {}, task: { ttl: 60_000 } } },
      CreateTaskResultSchema,
    );
    expect(board.liveByStatus().working).toBe(1);
    const result = await g.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.content).toEqual(textResult('done').content);
    expect(board.liveByStatus().working).toBe(0);
    expect(board.snapshot().recent.map(({ tool, status }) => [tool, status])).toEqual([
      ['slow', 'completed'],
    ]);
  });
});

describe('a task-required tool called by a client without tasks that has not listed tools', () => {
  it('is unwrapped: taskgate lists the upstream’s tools itself first (server-everything)', async () => {
    const board = new TaskBoard();
    const g = await everything(board);
    const result = await research(g);
    expect(JSON.stringify(result.content)).toContain('Research Report: otters');
    expect(board.snapshot().recent.map(({ tool, status }) => [tool, status])).toEqual([
      ['simulate-research-query', 'completed'],
    ]);
  }, 30_000);

  it('is unwrapped after the server says its tools changed, once taskgate has listed them again', async () => {
    const flex: FakeTool = { name: 'flex', run: () => textResult('flexed') };
    const g = (gate = await inProcessGateway({
      clientTasks: false,
      tools: [flex, { name: 'other', taskSupport: 'optional', run: () => textResult('other') }],
    }));
    const call = () =>
      g.client.request(
        { method: 'tools/call', params: { name: 'flex', arguments: {} } },
        CallToolResultSchema,
      );
    expect((await call()).content).toEqual(textResult('flexed').content);
    const changed = new Promise<void>((resolve) =>
      g.client.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()),
    );
    flex.taskSupport = 'required';
    await g.server.sendToolListChanged();
    await changed;
    expect((await call()).content).toEqual(textResult('flexed').content);
    const upstreamCalls = g.serverTransport.received.items.filter(
      (m) => 'method' in m && m.method === 'tools/call',
    );
    expect(upstreamCalls.map((m) => 'params' in m && m.params?.task !== undefined)).toEqual([false, true]);
  });
});

describe('tasks/list in front of a server that lists its own tasks', () => {
  it('fills each page from both sides: taskgate’s last page goes out with as many of the server’s as fit', async () => {
    const g = (gate = await inProcessGateway({
      config: { tasks: { exposeList: true, listPageSize: 3 } },
      tools: [
        { name: 'plain', run: () => textResult('plain') },
        { name: 'native', taskSupport: 'required', run: () => textResult('native') },
      ],
    }));
    await g.client.listTools();
    const create = async (name: string): Promise<string> =>
      (
        await g.client.request(
          { method: 'tools/call', params: { name, arguments: {}, task: { ttl: 60_000 } } },
          CreateTaskResultSchema,
        )
      ).task.taskId;
    const created = [await create('plain'), await create('plain')];
    for (let i = 0; i < 3; i++) created.push(await create('native'));
    const pages: number[] = [];
    const listed: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await g.client.experimental.tasks.listTasks(cursor);
      pages.push(page.tasks.length);
      listed.push(...page.tasks.map((task) => task.taskId));
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    expect(pages).toEqual([3, 2]);
    expect(listed.sort()).toEqual([...created].sort());
    // The server's work ends before it closes.
    for (const taskId of created.slice(2)) {
      await g.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    }
  });
});

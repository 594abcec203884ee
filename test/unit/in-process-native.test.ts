/**
 * The session in one process (issue 15): a task-aware client in front of a server that runs tasks itself.
 * taskgate passes the server's own tasks through untouched, routes tasks/* by task id to whoever owns the
 * task, and lists both sides behind one cursor (the "pass through" row of the README's table).
 */
import { CallToolResultSchema, CreateTaskResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { heldTool, type HeldTool } from '../helpers/held-call.js';
import {
  SERVER_POLL_INTERVAL_MS,
  inProcessGateway,
  textResult,
  type Gateway,
} from '../helpers/in-process.js';
import { thrownBy } from '../helpers/thrown.js';

const RELATED = 'io.modelcontextprotocol/related-task';

let gate: Gateway | undefined;
let native: HeldTool;
afterEach(async () => {
  native.releaseAll();
  expect(gate?.violations ?? []).toEqual([]);
  await gate?.close();
  gate = undefined;
});

/** `native` runs as the server's own task; `plain` the server lists without execution, so taskgate augments it. */
const open = async (): Promise<Gateway> => {
  native = heldTool('native', 'optional');
  return (gate = await inProcessGateway({
    tools: [native, { name: 'plain', run: (args) => textResult(String(args.text)) }],
  }));
};

const createTask = (g: Gateway, name: string, args: Record<string, unknown> = {}) =>
  g.client.request(
    { method: 'tools/call', params: { name, arguments: args, task: {} } },
    CreateTaskResultSchema,
  );

describe('in process: the server’s own tasks', () => {
  it('lists the server’s taskSupport as it is, and marks only the other tools by policy', async () => {
    const g = await open();
    const { tools } = await g.client.listTools();
    expect(tools.map((tool) => [tool.name, tool.execution?.taskSupport])).toEqual([
      ['native', 'optional'],
      ['plain', 'optional'],
    ]);
  });

  it('passes a task-augmented call to the server, and routes tasks/get and tasks/result to it', async () => {
    const g = await open();
    await g.client.listTools();
    const { task } = await createTask(g, 'native');
    expect(task.pollInterval).toBe(SERVER_POLL_INTERVAL_MS);
    expect(g.serverTasks?.getAllTasks().map((t) => t.taskId)).toEqual([task.taskId]);
    expect(g.store.size).toMatchObject({ live: 0, terminal: 0 });
    const started = await native.calls.waitFor(() => true, 'the server’s task running');
    expect((await g.client.experimental.tasks.getTask(task.taskId)).status).toBe('working');
    started.answer(textResult('natively done'));
    const result = await g.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.content).toEqual([{ type: 'text', text: 'natively done' }]);
    expect(result._meta?.[RELATED]).toEqual({ taskId: task.taskId });
  });

  it('lists its own tasks and the server’s behind one cursor, and cancels each where it lives', async () => {
    const g = await open();
    await g.client.listTools();
    const own = (await createTask(g, 'plain', { text: 'augmented' })).task.taskId;
    const theirs = (await createTask(g, 'native')).task.taskId;
    const listed: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await g.client.experimental.tasks.listTasks(cursor);
      listed.push(...page.tasks.map((task) => task.taskId));
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    expect(listed.sort()).toEqual([own, theirs].sort());

    expect((await g.client.experimental.tasks.cancelTask(theirs)).status).toBe('cancelled');
    expect((await g.serverTasks?.getTask(theirs))?.status).toBe('cancelled');
    const unknown = await thrownBy(g.client.experimental.tasks.getTask('no-such-task'));
    expect(unknown).toBeInstanceOf(McpError);
    expect((unknown as McpError).code).toBe(-32602);
  });
});

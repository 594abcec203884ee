/**
 * Per-caller limits in one process (issue 15): live tasks and the token buckets of task creation and
 * tasks/* requests, through a real Session, with the clock faked so a bucket refills exactly when it must.
 */
import type { McpError } from '@modelcontextprotocol/sdk/types.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ConfigInput } from '../../src/config/schema.js';
import { heldTool, type HeldTool } from '../helpers/held-call.js';
import { inProcessGateway, textResult, type Gateway } from '../helpers/in-process.js';
import { mcpErrorOf } from '../helpers/thrown.js';

let gate: Gateway | undefined;
let held: HeldTool;
afterEach(async () => {
  held.releaseAll();
  expect(gate?.violations ?? []).toEqual([]);
  await gate?.close();
  gate = undefined;
  vi.useRealTimers();
});

const open = async (limits: NonNullable<ConfigInput['limits']>): Promise<Gateway> => {
  held = heldTool('held');
  return (gate = await inProcessGateway({
    config: { limits },
    tools: [held, { name: 'echo', run: (args) => textResult(String(args.text)) }],
  }));
};

const createTask = (g: Gateway, name: string) =>
  g.client.request(
    { method: 'tools/call', params: { name, arguments: {}, task: {} } },
    CreateTaskResultSchema,
  );

/** A limit's refusal: -32001. */
const refusal = (promise: Promise<unknown>): Promise<McpError> => mcpErrorOf(promise, -32001);

describe('in process: limits', () => {
  it('limits.maxLiveTasks: refuses a task beyond the live ones, names the setting, and frees the slot when one ends', async () => {
    const g = await open({ maxLiveTasks: 1 });
    const first = await createTask(g, 'held');
    const started = await held.calls.waitFor(() => true, 'the first call upstream');
    expect((await refusal(createTask(g, 'echo'))).message).toMatch(/limits\.maxLiveTasks/);
    expect(g.refusals).toEqual(['max_live_tasks']);
    // Plain calls are not tasks: never counted.
    expect((await g.client.callTool({ name: 'echo', arguments: { text: 'plain' } })).content).toHaveLength(1);
    started.answer(textResult('done'));
    await g.client.experimental.tasks.getTaskResult(first.task.taskId, CallToolResultSchema);
    expect((await createTask(g, 'echo')).task.status).toBe('working');
  });

  it('limits.taskCreationRate: a burst, then one more each 1/rate seconds', async () => {
    vi.useFakeTimers();
    const g = await open({ taskCreationRate: 1, taskCreationBurst: 2 });
    await createTask(g, 'echo');
    await createTask(g, 'echo');
    expect((await refusal(createTask(g, 'echo'))).message).toMatch(
      /limits\.taskCreationRate: 1\/s\); retry in 1000 ms/,
    );
    await vi.advanceTimersByTimeAsync(999);
    // Still short of a token; waiting the retry it advises is enough (it rounds up, never down).
    const retry = Number(/retry in (\d+) ms/.exec((await refusal(createTask(g, 'echo'))).message)?.[1]);
    expect(retry).toBeGreaterThanOrEqual(1);
    expect(retry).toBeLessThanOrEqual(2);
    await vi.advanceTimersByTimeAsync(retry);
    expect((await createTask(g, 'echo')).task.status).toBe('working');
    expect(g.refusals).toEqual(['task_creation_rate', 'task_creation_rate']);
  });

  it('limits.taskRequestRate: counts tasks/get, tasks/list and tasks/cancel, not the calls themselves', async () => {
    vi.useFakeTimers();
    const g = await open({ taskRequestRate: 2, taskRequestBurst: 3 });
    const { task } = await createTask(g, 'held');
    await g.client.experimental.tasks.getTask(task.taskId);
    await g.client.experimental.tasks.listTasks();
    await g.client.experimental.tasks.getTask(task.taskId);
    expect((await refusal(g.client.experimental.tasks.cancelTask(task.taskId))).message).toMatch(
      /limits\.taskRequestRate: 2\/s\); retry in 500 ms/,
    );
    await vi.advanceTimersByTimeAsync(500);
    expect((await g.client.experimental.tasks.cancelTask(task.taskId)).status).toBe('cancelled');
    expect(g.refusals).toEqual(['task_request_rate']);
  });
});

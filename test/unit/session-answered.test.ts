/**
 * Answering one client request does not look over every other open request, unless that answer could close
 * the session: with 10 000 tasks/result waiting at once, a look per answer made their release O(n²)
 * (bench/PROFILING.md, "10 000 waiters").
 */
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, expect, it, vi } from 'vitest';
import { OpenRequests } from '../../src/session/open-requests.js';
import { heldTool } from '../helpers/held-call.js';
import { inProcessGateway, type Gateway } from '../helpers/in-process.js';

let gate: Gateway | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await gate?.close();
  gate = undefined;
});

it('releases waiting tasks/result without asking, per answer, whether only task waits are left', async () => {
  const held = heldTool('held');
  const g = (gate = await inProcessGateway({ tools: [held] }));
  const taskIds: string[] = [];
  for (let i = 0; i < 3; i++) {
    const { task } = await g.client.request(
      { method: 'tools/call', params: { name: 'held', arguments: {}, task: {} } },
      CreateTaskResultSchema,
    );
    taskIds.push(task.taskId);
  }
  await held.calls.waitFor(() => held.calls.items.length === 3, 'the three calls upstream');
  const results = taskIds.map((taskId) =>
    g.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema),
  );
  await g.client.ping(); // behind the three tasks/result: they are all waiting now

  const asked = vi.spyOn(
    OpenRequests.prototype as unknown as { onlyTasksAwaited: boolean },
    'onlyTasksAwaited',
    'get',
  );
  held.releaseAll();
  await Promise.all(results);
  await g.client.ping();
  expect(asked).not.toHaveBeenCalled();
  expect(g.violations).toEqual([]);
});

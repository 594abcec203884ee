/**
 * Per-server limits behind one endpoint (issue 32): a server of `upstreams` with `limits` of its own
 * refuses a caller at its limit only for calls to it, naming its setting; the other servers go on serving
 * that caller. A real SDK Client, the Aggregator and real SDK Servers, in process.
 */
import type { McpError } from '@modelcontextprotocol/sdk/types.js';
import { CreateTaskResultSchema, GetTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { Limits } from '../../src/security/limits.js';
import { heldTool, type HeldTool } from '../helpers/held-call.js';
import { inProcessAggregate, type AggregateGateway } from '../helpers/in-process-aggregate.js';
import { mcpErrorOf } from '../helpers/thrown.js';

let gate: AggregateGateway | undefined;
const helds: HeldTool[] = [];
afterEach(async () => {
  for (const held of helds.splice(0)) held.releaseAll();
  expect(gate?.violations ?? []).toEqual([]);
  await gate?.close();
  gate = undefined;
});

const held = (): HeldTool => {
  const tool = heldTool('slow');
  helds.push(tool);
  return tool;
};

const createTask = (g: AggregateGateway, name: string) =>
  g.client.request(
    { method: 'tools/call', params: { name, arguments: {}, task: {} } },
    CreateTaskResultSchema,
  );

const getTask = (g: AggregateGateway, taskId: string) =>
  g.client.request({ method: 'tasks/get', params: { taskId } }, GetTaskResultSchema);

/** A limit's refusal: -32001. */
const refusal = (promise: Promise<unknown>): Promise<McpError> => mcpErrorOf(promise, -32001);

describe('a server’s own limits (issue 32)', () => {
  it('maxLiveTasks: a caller at the server’s limit is refused there only, naming that server’s setting', async () => {
    const g = (gate = await inProcessAggregate([
      { name: 'tight', tools: [held()], limits: { maxLiveTasks: 1 } },
      { name: 'loose', tools: [held()] },
    ]));
    await createTask(g, 'tight__slow');
    const refused = await refusal(createTask(g, 'tight__slow'));
    expect(refused.message).toMatch(/upstreams\.tight\.limits\.maxLiveTasks/);
    await createTask(g, 'loose__slow');
    await createTask(g, 'loose__slow');
  });

  it('taskRequestRate: tasks/get of the server’s tasks is throttled, of another server’s not', async () => {
    const g = (gate = await inProcessAggregate([
      { name: 'tight', tools: [held()], limits: { taskRequestRate: 0.001, taskRequestBurst: 2 } },
      { name: 'loose', tools: [held()] },
    ]));
    const tight = (await createTask(g, 'tight__slow')).task.taskId;
    const loose = (await createTask(g, 'loose__slow')).task.taskId;
    await getTask(g, tight);
    await getTask(g, tight);
    const refused = await refusal(getTask(g, tight));
    expect(refused.message).toMatch(/upstreams\.tight\.limits\.taskRequestRate/);
    for (let i = 0; i < 4; i++) expect((await getTask(g, loose)).taskId).toBe(loose);
  });
});

describe('a server’s own limits over the HTTP front, where each session has Sessions of its own', () => {
  it('counts a caller’s requests to that server together, whichever session made them', () => {
    const shared = new Limits({});
    const own = { taskRequestRate: 0.001, taskRequestBurst: 2 };
    // What two sessions of one caller are given for server a.
    const first = shared.apart(own, 'upstreams.a.limits', 'a');
    const second = shared.apart(own, 'upstreams.a.limits', 'a');
    first.admitTaskRequest('alice');
    second.admitTaskRequest('alice');
    expect(() => first.admitTaskRequest('alice')).toThrow(/upstreams\.a\.limits\.taskRequestRate/);
    expect(() => shared.apart(own, 'upstreams.b.limits', 'b').admitTaskRequest('alice')).not.toThrow();
  });
});

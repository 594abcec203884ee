/**
 * What a first real user hits (issue 14), limits, through the built CLI: the HTTP front serves an ordinary
 * client's fan-out of task calls, a limit set by flag or variable refuses only what the operator asked it
 * to, and each refusal is counted in /metrics. The rest (the defaults' fan-outs, tasks/list) runs in
 * process: test/unit/in-process-first-use-limits.test.ts.
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

/**
 * Tasks bound to identity (spec: Security Considerations, Task Isolation and Access Control), the
 * per-caller limits and the audit log, on taskgate's core as a process composes it, each caller on a
 * Session of its own with the identity the HTTP front would give it. What only the HTTP front shows (401
 * before any MCP processing, a session's id, tokens in the log, the operator's /metrics) stays in
 * test/integration/security.test.ts.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  type McpError,
} from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { coreGateway, type CoreGateway } from '../helpers/in-process-core.js';
import { sample } from '../helpers/prometheus.js';
import { thrownBy } from '../helpers/thrown.js';

const ALICE = { identity: 'token:alice', subject: 'alice' };
const BOB = { identity: 'token:bob', subject: 'bob' };

let gate: CoreGateway | undefined;
afterEach(async () => {
  expect(gate?.violations ?? []).toEqual([]);
  await gate?.close();
  gate = undefined;
});

const refusal = async (promise: Promise<unknown>): Promise<McpError> => (await thrownBy(promise)) as McpError;
const createSleep = (client: Client, ms: number) =>
  client.request(
    { method: 'tools/call', params: { name: 'sleep', arguments: { ms }, task: {} } },
    CreateTaskResultSchema,
  );

describe('identity and binding', () => {
  it('gives another identity exactly the unknown-task answer for get, result and cancel, and lists only its own', async () => {
    gate = await coreGateway();
    const alice = await gate.caller(ALICE);
    const bob = await gate.caller(BOB);
    expect(alice.getServerCapabilities()?.tasks?.list).toEqual({});

    const { task } = await createSleep(alice, 300);
    const unknown = await refusal(bob.experimental.tasks.getTask('00000000-0000-4000-8000-000000000000'));
    for (const attempt of [
      () => bob.experimental.tasks.getTask(task.taskId),
      () => bob.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema),
      () => bob.experimental.tasks.cancelTask(task.taskId),
    ]) {
      const error = await refusal(attempt());
      expect(error.code).toBe(-32602);
      expect(error.message.replace(task.taskId, 'ID')).toBe(
        unknown.message.replace('00000000-0000-4000-8000-000000000000', 'ID'),
      );
    }
    expect((await bob.experimental.tasks.listTasks()).tasks).toEqual([]);
    expect((await alice.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)).toEqual([task.taskId]);
    const result = await alice.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.content).toEqual([{ type: 'text', text: 'slept 300 ms' }]);
  });
});

describe('limits', () => {
  it('refuses the N+1th live task of one identity, naming the limit, while the other proceeds', async () => {
    gate = await coreGateway({ limits: { maxLiveTasks: 2 } });
    const alice = await gate.caller(ALICE);
    const bob = await gate.caller(BOB);
    await createSleep(alice, 20_000);
    await createSleep(alice, 20_000);
    const refused = await refusal(createSleep(alice, 20_000));
    expect(refused.code).toBe(-32001);
    expect(refused.message).toMatch(/limits\.maxLiveTasks/);
    expect((await createSleep(bob, 20_000)).task.status).toBe('working');
    // A second session of the same identity shares its quota: the limit is the identity's, not the session's.
    const aliceAgain = await gate.caller(ALICE);
    expect((await refusal(createSleep(aliceAgain, 20_000))).message).toMatch(/limits\.maxLiveTasks/);
  });

  it('finds nothing in 10 000 random task ids and rate-limits the search', { timeout: 60_000 }, async () => {
    gate = await coreGateway({ limits: { taskRequestRate: 500, taskRequestBurst: 100 } });
    const bob = await gate.caller(BOB);
    let notFound = 0;
    let limited = 0;
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next++ < 10_000) {
        const error = await refusal(bob.experimental.tasks.getTask(crypto.randomUUID()));
        if (error.code === -32602) notFound++;
        else if (error.code === -32001 && /Rate limit/.test(error.message)) limited++;
        else throw error;
      }
    };
    await Promise.all(Array.from({ length: 32 }, worker));
    expect(notFound + limited).toBe(10_000);
    expect(limited).toBeGreaterThan(0);
    expect(gate.log).toContainEqual(
      expect.objectContaining({ event: 'limit.hit', limit: 'task_request_rate' }),
    );
    expect(sample(await gate.metrics(), 'taskgate_task_lookups_denied_total', { subject: 'bob' })).toBe(
      notFound,
    );
  });
});

describe('audit log', () => {
  it('records creation, status, result and refusals with the subject, and never an argument', async () => {
    gate = await coreGateway();
    const alice = await gate.caller(ALICE);
    const bob = await gate.caller(BOB);
    const { task } = await alice.request(
      {
        method: 'tools/call',
        params: { name: 'echo', arguments: { text: 'secret-argument-text' }, task: {} },
      },
      CreateTaskResultSchema,
    );
    await alice.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    await refusal(bob.experimental.tasks.getTask(task.taskId));
    const events = gate.log
      .filter((line) => line.name === 'audit' && line.taskId === task.taskId)
      .map((line) => `${String(line.event)}:${typeof line.subject === 'string' ? line.subject : ''}`);
    expect(events).toEqual(
      expect.arrayContaining(['task.created:alice', 'task.status:', 'task.result:alice', 'task.denied:bob']),
    );
    expect(JSON.stringify(gate.log)).not.toContain('secret-argument-text');
  });
});

/**
 * Graceful shutdown of the HTTP gateway and of stdio taskgate: on SIGTERM no new session or task, running
 * tasks finish within the grace period, the rest fail saying why (their waiters answered), and the exit
 * status is 0.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { FIXTURES, Gateway, RawPeer, TASK_AWARE } from '../helpers/taskgate.js';

describe('SIGTERM', () => {
  it('lets running tasks finish within the grace period, fails the rest, refuses new work, exits 0', async () => {
    const gateway = await Gateway.start([process.execPath, FIXTURES.legacy], ['--shutdown-grace', '1500']);
    const client = new Client({ name: 'shutdown-test', version: '1' }, { capabilities: TASK_AWARE });
    await client.connect(new StreamableHTTPClientTransport(gateway.url));
    const create = (ms: number) =>
      client.request(
        { method: 'tools/call', params: { name: 'sleep', arguments: { ms }, task: {} } },
        CreateTaskResultSchema,
      );
    const quick = (await create(300)).task;
    const slow = (await create(60_000)).task;
    const quickResult = client.experimental.tasks.getTaskResult(quick.taskId, CallToolResultSchema);
    const slowResult = client.experimental.tasks
      .getTaskResult(slow.taskId, CallToolResultSchema)
      .catch((error: unknown) => error);

    gateway.child.kill('SIGTERM');
    await gateway.logged('shutting down');
    const refusedTask = await create(10).catch((error: unknown) => error);
    expect(refusedTask).toBeInstanceOf(McpError);
    expect((refusedTask as McpError).message).toMatch(/shutting down/);
    const refusedSession = await fetch(gateway.url, {
      method: 'POST',
      headers: { accept: 'application/json, text/event-stream', 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: '2025-11-25',
          capabilities: {},
          clientInfo: { name: 'late', version: '1' },
        },
      }),
    });
    expect(refusedSession.status).toBe(503);

    expect((await quickResult).content).toEqual([{ type: 'text', text: 'slept 300 ms' }]);
    const slowError = await slowResult;
    expect(slowError).toBeInstanceOf(McpError);
    expect((slowError as McpError).message).toMatch(/taskgate is shutting down/);
    const [code] = await gateway.exited;
    expect(code).toBe(0);
  });
});

describe('SIGTERM over stdio', () => {
  it('lets running tasks finish within the grace period for the client still connected, fails the rest, exits 0', async () => {
    const peer = await RawPeer.initialized('legacy', ['--shutdown-grace', '1500']);
    const create = async (id: string, ms: number) => {
      peer.send({
        jsonrpc: '2.0',
        id,
        method: 'tools/call',
        params: { name: 'sleep', arguments: { ms }, task: {} },
      });
      return peer.response(id);
    };
    const taskIdOf = (answer: Record<string, unknown>) =>
      (answer.result as { task: { taskId: string } }).task.taskId;
    const quick = taskIdOf(await create('quick', 300));
    const slow = taskIdOf(await create('slow', 60_000));
    peer.send({ jsonrpc: '2.0', id: 'quick-result', method: 'tasks/result', params: { taskId: quick } });
    peer.send({ jsonrpc: '2.0', id: 'slow-result', method: 'tasks/result', params: { taskId: slow } });

    peer.child.kill('SIGTERM');
    await peer.logged('letting running tasks finish');
    const refused = await create('late', 10);
    expect((refused.error as { message: string }).message).toMatch(/shutting down/);
    expect((await peer.response('quick-result')).result).toMatchObject({
      content: [{ type: 'text', text: 'slept 300 ms' }],
    });
    expect((await peer.response('slow-result')).error).toMatchObject({
      message: expect.stringMatching(/taskgate is shutting down/),
    });
    const [code] = await peer.exited;
    expect(code).toBe(0);
  });
});

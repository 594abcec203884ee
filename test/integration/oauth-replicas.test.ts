/**
 * auth.oauth with auth.rules on two replicas sharing one Redis (issue 31): per-task rules hold on every
 * replica and in both eras. A caller is its token's issuer and subject, whatever token and replica it comes
 * with; a caller whose token names the `operators` group (a real oidc-provider's token, not a static one)
 * reads and cancels anyone's task on any replica; everyone else reads only their own.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema, CreateTaskResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { httpTransport } from '../helpers/http-client.js';
import { EXTENSION_META, modernRequest } from '../helpers/modern-raw.js';
import {
  AuthorizationServer,
  CLIENT,
  OPERATOR_CLIENT,
  STAFF_CLIENT,
  type OAuthClient,
} from '../helpers/oauth-server.js';
import { freshPrefix, redisForTests } from '../helpers/redis.js';
import { FIXTURES, Gateway, TASK_AWARE } from '../helpers/taskgate.js';
import { thrownBy } from '../helpers/thrown.js';

const redis = await redisForTests();
afterAll(() => redis?.stop());

/** taskgate's resource as clients reach it, through the load balancer in front of both replicas. */
const RESOURCE = 'https://mcp.example.com/mcp';
const UNKNOWN_TASK = -32602;

let as: AuthorizationServer | undefined;
let gateways: Gateway[] = [];
const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
  await Promise.all(gateways.map((gateway) => gateway.stop()));
  await as?.close();
  gateways = [];
  as = undefined;
});

/** Two replicas of one config (auth.oauth against `as`, the rules), sharing the test's Redis. */
async function replicas(as: AuthorizationServer): Promise<[Gateway, Gateway]> {
  const config = join(mkdtempSync(join(tmpdir(), 'taskgate-oauth-replicas-')), 'config.yaml');
  writeFileSync(
    config,
    [
      'auth:',
      '  oauth:',
      `    issuer: ${as.issuer}`,
      `    resource: ${RESOURCE}`,
      '    scopes: [mcp:tools]',
      '  rules:',
      "    - { subjects: ['*'], tools: { allow: ['*'] }, taskList: true }",
      '    - { groups: [operators], tasks: all }',
    ].join('\n'),
  );
  const prefix = freshPrefix();
  const start = () =>
    Gateway.start(
      [process.execPath, FIXTURES.legacy],
      ['--config', config, '--store', redis!.url, '--store-key-prefix', prefix],
      { TASKGATE_STORE_CURSOR_SECRET: 'the cursor secret of both replicas' },
    );
  gateways = await Promise.all([start(), start()]);
  return [gateways[0]!, gateways[1]!];
}

/** A fresh token of `client` for taskgate, as a client that has just refreshed it. */
const tokenOf = (client: OAuthClient) => as!.token(RESOURCE, 'mcp:tools', client);

/** A 2025 SDK client with a session on `gateway`, its requests carrying `token`. */
async function sessionOn(gateway: Gateway, token: string): Promise<Client> {
  const client = new Client({ name: 'oauth-replicas-test', version: '1' }, { capabilities: TASK_AWARE });
  await client.connect(
    httpTransport(gateway.url, {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  );
  clients.push(client);
  return client;
}

/** A 2026-07-28 request (tasks extension declared) on `gateway` with a fresh token of `client`. */
const modern = async (
  gateway: Gateway,
  client: OAuthClient,
  method: string,
  params: Record<string, unknown>,
) =>
  modernRequest(gateway.url, method, params, EXTENSION_META, {
    authorization: `Bearer ${await tokenOf(client)}`,
  });

const sleepTask = async (client: Client, ms: number) =>
  (
    await client.request(
      { method: 'tools/call', params: { name: 'sleep', arguments: { ms }, task: { ttl: 600_000 } } },
      CreateTaskResultSchema,
    )
  ).task;

describe.skipIf(!redis)('per-task rules on two replicas, callers known by their OAuth tokens', () => {
  it('an operator (by its group) on B reads and cancels tasks a caller made on A in either era; others get "not found"', async () => {
    as = await AuthorizationServer.start();
    const [a, b] = await replicas(as);
    const madeBy2025 = (await sleepTask(await sessionOn(a, await tokenOf(STAFF_CLIENT)), 30_000)).taskId;
    const made = await modern(a, STAFF_CLIENT, 'tools/call', { name: 'sleep', arguments: { ms: 30_000 } });
    expect(made.result).toMatchObject({ resultType: 'task' });
    const madeBy2026 = String(made.result!.taskId);

    const olgaOnB = await sessionOn(b, await tokenOf(OPERATOR_CLIENT));
    const svcOnB = await sessionOn(b, await tokenOf(CLIENT));
    for (const taskId of [madeBy2025, madeBy2026]) {
      expect((await olgaOnB.experimental.tasks.getTask(taskId)).status).toBe('working');
      expect((await modern(b, OPERATOR_CLIENT, 'tasks/get', { taskId })).result).toMatchObject({
        status: 'working',
      });
      const hidden = (await thrownBy(svcOnB.experimental.tasks.getTask(taskId))) as McpError;
      expect(hidden).toBeInstanceOf(McpError);
      expect(hidden.code).toBe(UNKNOWN_TASK);
      expect((await thrownBy(svcOnB.experimental.tasks.cancelTask(taskId))) as McpError).toMatchObject({
        code: UNKNOWN_TASK,
      });
      expect((await modern(b, CLIENT, 'tasks/get', { taskId })).error).toMatchObject({
        code: UNKNOWN_TASK,
        message: expect.stringContaining('Task not found'),
      });
      expect((await modern(b, CLIENT, 'tasks/cancel', { taskId })).error).toMatchObject({
        code: UNKNOWN_TASK,
      });
    }
    expect((await svcOnB.experimental.tasks.listTasks()).tasks).toEqual([]);

    expect((await olgaOnB.experimental.tasks.cancelTask(madeBy2025)).status).toBe('cancelled');
    expect((await modern(b, OPERATOR_CLIENT, 'tasks/cancel', { taskId: madeBy2026 })).result).toMatchObject({
      resultType: 'complete',
    });
    // The creator, on A with yet another token, sees what the operator did on B.
    const aliceOnA = await sessionOn(a, await tokenOf(STAFF_CLIENT));
    expect((await aliceOnA.experimental.tasks.getTask(madeBy2025)).status).toBe('cancelled');
    expect((await modern(a, STAFF_CLIENT, 'tasks/get', { taskId: madeBy2026 })).result).toMatchObject({
      status: 'cancelled',
    });
    await b.logged('"event":"task.others"');
  });

  it('a caller keeps its tasks across a token refresh and a change of replica, in either era', async () => {
    as = await AuthorizationServer.start();
    const [a, b] = await replicas(as);
    const task = await sleepTask(await sessionOn(a, await tokenOf(STAFF_CLIENT)), 300);
    const made = await modern(a, STAFF_CLIENT, 'tools/call', { name: 'sleep', arguments: { ms: 300 } });
    const modernTaskId = String(made.result!.taskId);

    const refreshed = await tokenOf(STAFF_CLIENT);
    const aliceOnB = await sessionOn(b, refreshed);
    const result = await aliceOnB.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.content).toEqual([{ type: 'text', text: 'slept 300 ms' }]);
    expect(
      (await aliceOnB.experimental.tasks.listTasks()).tasks.map((listed) => listed.taskId).sort(),
    ).toEqual([task.taskId, modernTaskId].sort());
    const deadline = Date.now() + 10_000;
    let status: unknown;
    while (status !== 'completed' && Date.now() < deadline) {
      status = (await modern(b, STAFF_CLIENT, 'tasks/get', { taskId: modernTaskId })).result?.status;
      if (status !== 'completed') await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(status).toBe('completed');
    const svcOnB = await sessionOn(b, await tokenOf(CLIENT));
    expect((await svcOnB.experimental.tasks.listTasks()).tasks).toEqual([]);
  });
});

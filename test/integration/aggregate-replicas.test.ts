/**
 * Several servers behind each of two taskgate replicas sharing one Redis (issue 32): a task that taskgate
 * runs for server "b" through replica 1 is fetched, awaited and listed through replica 2 by the same
 * identity, under the same prefixed id, once.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { CheckedTransport } from '../helpers/checked-transport.js';
import { httpTransport } from '../helpers/http-client.js';
import { freshPrefix, redisForTests } from '../helpers/redis.js';
import { FIXTURES, Gateway, TASK_AWARE } from '../helpers/taskgate.js';

const redis = await redisForTests();
const dir = mkdtempSync(join(tmpdir(), 'taskgate-aggregate-replicas-'));
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await redis?.stop();
});

const SECRET = 'the cursor secret of both replicas in this test';
const ALICE = 'alice-token-0123456789abcdef';
const CONFIG = join(dir, 'two.json');
writeFileSync(
  CONFIG,
  JSON.stringify({
    upstreams: {
      a: { command: process.execPath, args: [FIXTURES.native] },
      b: { command: process.execPath, args: [FIXTURES.legacy] },
    },
  }),
);

let gateways: Gateway[] = [];
let clients: { client: Client; transport: CheckedTransport }[] = [];
afterEach(async () => {
  for (const { transport } of clients) expect(transport.violations).toEqual([]);
  await Promise.all(clients.map(({ client }) => client.close()));
  await Promise.all(gateways.map((gateway) => gateway.stop()));
  [gateways, clients] = [[], []];
});

async function replica(prefix: string): Promise<Gateway> {
  const gateway = await Gateway.start(
    [],
    [
      '--config',
      CONFIG,
      '--store',
      redis!.url,
      '--store-key-prefix',
      prefix,
      '--auth-token',
      `${ALICE}=alice`,
    ],
    { TASKGATE_STORE_CURSOR_SECRET: SECRET },
  );
  gateways.push(gateway);
  return gateway;
}

async function alice(gateway: Gateway): Promise<Client> {
  const transport = new CheckedTransport(
    httpTransport(gateway.url, { requestInit: { headers: { authorization: `Bearer ${ALICE}` } } }),
  );
  const client = new Client({ name: 'taskgate-test', version: '1.0.0' }, { capabilities: TASK_AWARE });
  await client.connect(transport);
  clients.push({ client, transport });
  return client;
}

describe.skipIf(!redis)('several servers behind two replicas on one Redis (issue 32)', () => {
  it('fetches through replica 2 a task on server b started through replica 1, and lists it once', async () => {
    const prefix = freshPrefix();
    const [first, second] = [await replica(prefix), await replica(prefix)];
    const there = await alice(first);
    const here = await alice(second);
    const { task } = await there.request(
      {
        method: 'tools/call',
        params: { name: 'b__echo', arguments: { text: 'across replicas' }, task: {} },
      },
      CreateTaskResultSchema,
    );
    expect(task.taskId).toMatch(/^b__/);
    const tasks = here.experimental.tasks;
    const result = await tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.content).toEqual([{ type: 'text', text: 'across replicas' }]);
    expect(await tasks.getTask(task.taskId)).toMatchObject({ taskId: task.taskId, status: 'completed' });
    const listed = (await tasks.listTasks()).tasks.map(({ taskId }) => taskId);
    expect(listed).toEqual([task.taskId]);
  });
});

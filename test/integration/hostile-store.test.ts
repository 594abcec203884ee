/**
 * The task store under hostile conditions (issue 13), against the built CLI: task calls in flight racing
 * limits.maxLiveTasks, a Redis that forgot its tasks. Redis tests use the test Redis with a fresh key
 * prefix, or a private redis-server of their own when they flush it; the machine's shared Redis is
 * never flushed or stopped.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { CreateTaskResultSchema, type McpError } from '@modelcontextprotocol/sdk/types.js';
import { Redis } from 'ioredis';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { freshPrefix, privateRedisServer, redisForTests, type RedisServer } from '../helpers/redis.js';
import { connect, RawPeer, type Connection } from '../helpers/taskgate.js';

const redis = await redisForTests();
afterAll(() => redis?.stop());

const LIMIT_EXCEEDED = -32001;
const SECRET = 'the cursor secret of the hostile-store tests';
/** Long enough to outlast the test: these tasks only have to stay live. */
const SLEEP_MS = 60_000;

let peers: RawPeer[] = [];
let connections: Connection[] = [];
let servers: RedisServer[] = [];
let configs: string[] = [];
afterEach(async () => {
  // The sleeping tasks would keep taskgate waiting for them on a graceful stop.
  for (const peer of peers) peer.child.kill('SIGKILL');
  await Promise.all(peers.map((peer) => peer.exited));
  for (const { pid } of connections) if (pid !== null) process.kill(pid, 'SIGKILL');
  await Promise.all(connections.map((connection) => connection.close().catch(() => undefined)));
  await Promise.all(servers.map((server) => server.stop()));
  for (const path of configs) rmSync(dirname(path), { recursive: true, force: true });
  [peers, connections, servers, configs] = [[], [], [], []];
});

function configFile(yaml: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'taskgate-hostile-store-')), 'config.yaml');
  writeFileSync(path, yaml);
  configs.push(path);
  return path;
}

/**
 * taskgate's flags for a limit of `maxLiveTasks`, on the memory store or on the Redis at `url`, with more
 * settings in `yaml`.
 */
function flagsFor(maxLiveTasks: number, url?: string, yaml = ''): string[] {
  const config = configFile(`limits:\n  maxLiveTasks: ${maxLiveTasks}\n${yaml}`);
  const store = url === undefined ? [] : ['--store', url, '--store-key-prefix', freshPrefix()];
  return ['--config', config, ...store];
}

const ENV = { TASKGATE_STORE_CURSOR_SECRET: SECRET };

async function rawPeer(flags: string[]): Promise<RawPeer> {
  const peer = await RawPeer.initialized('legacy', flags, ENV);
  peers.push(peer);
  return peer;
}

const taskCall = (id: string): string =>
  JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name: 'sleep', arguments: { ms: SLEEP_MS }, task: {} },
  });

/** Sends the task calls in one write and sorts the answers into tasks created and refusals. */
async function callAtOnce(
  peer: RawPeer,
  ids: string[],
): Promise<{ created: string[]; refused: { code: number; message: string }[] }> {
  peer.write(ids.map(taskCall).join('\n'));
  const answers = await Promise.all(ids.map((id) => peer.response(id)));
  const created = answers.flatMap((answer) =>
    'result' in answer ? [(answer.result as { task: { taskId: string } }).task.taskId] : [],
  );
  const refused = answers.flatMap((answer) =>
    'error' in answer ? [answer.error as { code: number; message: string }] : [],
  );
  return { created, refused };
}

const ten = (tag: string): string[] => Array.from({ length: 10 }, (_, i) => `${tag}-${i}`);

describe('issue 13.4: limits.maxLiveTasks holds for task calls in flight', () => {
  it('ten task calls in one stdio write with a limit of 3 create exactly 3 (memory store)', async () => {
    const peer = await rawPeer(flagsFor(3));
    const { created, refused } = await callAtOnce(peer, ten('call'));
    expect(created).toHaveLength(3);
    expect(refused).toHaveLength(7);
    for (const error of refused) {
      expect(error.code).toBe(LIMIT_EXCEEDED);
      expect(error.message).toMatch(/3 live tasks .*limits\.maxLiveTasks/);
    }
  });

  describe.skipIf(!redis)('on Redis', () => {
    it('ten task calls in one stdio write with a limit of 3 create exactly 3', async () => {
      const peer = await rawPeer(flagsFor(3, redis!.url));
      const { created, refused } = await callAtOnce(peer, ten('call'));
      expect(created).toHaveLength(3);
      expect(refused.map((error) => error.code)).toEqual(Array(7).fill(LIMIT_EXCEEDED));
    });

    it('ten concurrent POSTs of one session over HTTP with a limit of 3 create exactly 3', async () => {
      const connection = await connect('legacy', {
        front: 'http',
        flags: flagsFor(3, redis!.url),
        env: ENV,
      });
      connections.push(connection);
      const outcomes = await Promise.allSettled(
        Array.from({ length: 10 }, () =>
          connection.client.request(
            { method: 'tools/call', params: { name: 'sleep', arguments: { ms: SLEEP_MS }, task: {} } },
            CreateTaskResultSchema,
          ),
        ),
      );
      const created = outcomes.filter((outcome) => outcome.status === 'fulfilled');
      const refused = outcomes.flatMap((outcome) => (outcome.status === 'rejected' ? [outcome.reason] : []));
      expect(created).toHaveLength(3);
      expect(refused).toHaveLength(7);
      for (const error of refused)
        expect(error).toMatchObject({ code: LIMIT_EXCEEDED } satisfies Partial<McpError>);
      expect(connection.transport.violations).toEqual([]);
    });
  });
});

describe('issue 13.5: a Redis that forgot its tasks', () => {
  it("no longer counts them: after FLUSHALL the caller's task calls are accepted again", async (context) => {
    // Flushed: a private server, even when REDIS_URL names a shared one.
    const server = await privateRedisServer(context);
    servers.push(server);
    const peer = await rawPeer(flagsFor(2, server.url));
    expect((await callAtOnce(peer, ['a', 'b'])).created).toHaveLength(2);
    const before = await callAtOnce(peer, ['c']);
    expect(before.refused).toMatchObject([{ code: LIMIT_EXCEEDED }]);
    const raw = new Redis(server.url);
    try {
      await raw.flushall();
    } finally {
      await raw.quit();
    }
    const after = await callAtOnce(peer, ['d', 'e']);
    expect(after.refused).toEqual([]);
    expect(after.created).toHaveLength(2);
    expect((await callAtOnce(peer, ['f'])).refused).toMatchObject([{ code: LIMIT_EXCEEDED }]);
  });
});

describe('issue 13.2: no task without its call', () => {
  it(
    'a task call during a Redis stall is refused, and the task Redis makes once it wakes fails instead of staying working',
    { timeout: 60_000 },
    async (context) => {
      // Paused: a private server, even when REDIS_URL names a shared one.
      const server = await privateRedisServer(context);
      servers.push(server);
      // A command timeout of 3 s, not the default 10 s: the stall only has to outlast it.
      const peer = await rawPeer([
        ...flagsFor(10, server.url, 'store:\n  commandTimeout: 3000\n'),
        '--expose-task-list',
      ]);
      // A task of its own keeps this replica's lease renewed: only taskgate itself can end the other one.
      const { created } = await callAtOnce(peer, ['keep']);
      const raw = new Redis(server.url);
      const pid = Number(/process_id:(\d+)/.exec(await raw.info('server'))![1]);
      await raw.quit();
      process.kill(pid, 'SIGSTOP');
      try {
        const sent = performance.now();
        peer.write(taskCall('late'));
        // Refused once the store's command timeout (3 s) has passed; the create is still in Redis's input.
        expect(await peer.response('late', 20_000)).toMatchObject({ error: { code: -32002 } });
        // Not at once but by the timeout (a command sent just before the pause may time out a little
        // earlier), and by the one configured, not the default 10 s.
        expect(performance.now() - sent).toBeGreaterThanOrEqual(2_000);
        expect(performance.now() - sent).toBeLessThan(9_000);
      } finally {
        process.kill(pid, 'SIGCONT');
      }
      const failed = await peer.messages.waitFor(
        (message) =>
          message.method === 'notifications/tasks/status' &&
          (message.params as { status?: string }).status === 'failed',
        'the failure of the task Redis made late',
      );
      expect(failed.params).toMatchObject({ statusMessage: expect.stringMatching(/did not confirm/) });
      peer.send({ jsonrpc: '2.0', id: 'list', method: 'tasks/list', params: {} });
      const listed = (await peer.response('list')).result as { tasks: { taskId: string; status: string }[] };
      expect(listed.tasks.map((task) => task.status).sort()).toEqual(['failed', 'working']);
      expect(listed.tasks.find((task) => task.status === 'working')?.taskId).toBe(created[0]);
    },
  );
});

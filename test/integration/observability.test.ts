/**
 * Metrics and the operator's pages from a running taskgate: on the HTTP front beside /mcp, and on the
 * admin listener (--admin-listen) in stdio mode, after real tasks ran through it.
 */
import type { Readable } from 'node:stream';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { FIXTURES, Gateway, RawPeer, TASKGATE, TASK_AWARE } from '../helpers/taskgate.js';
import { sample } from '../helpers/prometheus.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Runs one task to its end: a completed echo, or a failed `fail`. */
async function runTask(client: Client, name: 'echo' | 'fail'): Promise<string> {
  const args = name === 'echo' ? { text: 'hi' } : { message: 'boom' };
  const { task } = await client.request(
    { method: 'tools/call', params: { name, arguments: args, task: {} } },
    CreateTaskResultSchema,
  );
  await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema).catch(() => undefined);
  return task.taskId;
}

async function scrape(url: URL): Promise<string> {
  const response = await fetch(url);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
  return response.text();
}

describe('metrics on the HTTP front', () => {
  it('serves /metrics beside /mcp, counting the tasks that ran and the sessions open', async () => {
    const gateway = await Gateway.start([process.execPath, FIXTURES.legacy]);
    cleanups.push(() => gateway.stop());
    const client = new Client({ name: 'metrics-test', version: '1' }, { capabilities: TASK_AWARE });
    await client.connect(new StreamableHTTPClientTransport(gateway.url));
    cleanups.push(() => client.close());

    await runTask(client, 'echo');
    await runTask(client, 'echo');
    await runTask(client, 'fail');
    const text = await scrape(new URL('/metrics', gateway.url));
    expect(sample(text, 'taskgate_tasks_created_total', { tool: 'echo' })).toBe(2);
    expect(sample(text, 'taskgate_tasks_created_total', { tool: 'fail' })).toBe(1);
    expect(sample(text, 'taskgate_tasks_finished_total', { tool: 'echo', status: 'completed' })).toBe(2);
    expect(sample(text, 'taskgate_tasks_finished_total', { tool: 'fail', status: 'failed' })).toBe(1);
    expect(sample(text, 'taskgate_task_duration_seconds_count', { tool: 'echo', status: 'completed' })).toBe(
      2,
    );
    expect(sample(text, 'taskgate_tasks_live', { status: 'working' })).toBe(0);
    expect(sample(text, 'taskgate_task_result_waiters')).toBe(0);
    expect(sample(text, 'taskgate_store_tasks', { state: 'finished' })).toBe(3);
    expect(sample(text, 'taskgate_sessions_open')).toBe(1);
    expect(sample(text, 'process_resident_memory_bytes')).toBeGreaterThan(0);

    const data = (await (await fetch(new URL('/dashboard/data', gateway.url))).json()) as {
      recent: { tool: string; status: string }[];
    };
    expect(data.recent.map((task) => `${task.tool}:${task.status}`)).toEqual([
      'fail:failed',
      'echo:completed',
      'echo:completed',
    ]);
  });

  it('counts a tasks/result that is waiting while it waits', async () => {
    const gateway = await Gateway.start([process.execPath, FIXTURES.legacy]);
    cleanups.push(() => gateway.stop());
    const client = new Client({ name: 'metrics-test', version: '1' }, { capabilities: TASK_AWARE });
    await client.connect(new StreamableHTTPClientTransport(gateway.url));
    cleanups.push(() => client.close());
    const { task } = await client.request(
      { method: 'tools/call', params: { name: 'sleep', arguments: { ms: 60_000 }, task: {} } },
      CreateTaskResultSchema,
    );
    const waiting = client.experimental.tasks
      .getTaskResult(task.taskId, CallToolResultSchema)
      .catch(() => 'done');
    const metricsUrl = new URL('/metrics', gateway.url);
    // Bounded: the waiter registers as soon as taskgate has read the request.
    for (let i = 0; i < 500 && sample(await scrape(metricsUrl), 'taskgate_task_result_waiters') !== 1; i++) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    const text = await scrape(metricsUrl);
    expect(sample(text, 'taskgate_task_result_waiters')).toBe(1);
    expect(sample(text, 'taskgate_tasks_live', { status: 'working' })).toBe(1);
    await client.experimental.tasks.cancelTask(task.taskId);
    await waiting;
    const after = await scrape(metricsUrl);
    expect(sample(after, 'taskgate_task_result_waiters')).toBe(0);
    expect(sample(after, 'taskgate_tasks_finished_total', { tool: 'sleep', status: 'cancelled' })).toBe(1);
  });

  it('moves the pages to the admin listener when one is given', async () => {
    const gateway = await Gateway.start(
      [process.execPath, FIXTURES.legacy],
      ['--admin-listen', '127.0.0.1:0'],
    );
    cleanups.push(() => gateway.stop());
    expect((await fetch(new URL('/metrics', gateway.url))).status).toBe(404);
    const found = ADMIN_LINE.exec(gateway.stderr);
    const admin = found ? new URL(found[1]!) : await adminUrlFrom(gateway.child.stderr);
    expect(admin.port).not.toBe(gateway.url.port);
    expect(sample(await scrape(new URL('/metrics', admin)), 'taskgate_sessions_open')).toBe(0);
  });

  it('answers /readyz on the admin listener as on the front: 503 with the cause while the command is not found (issue 27)', async () => {
    const gateway = await Gateway.start(['no-such-command-27'], ['--admin-listen', '0']);
    cleanups.push(() => gateway.stop());
    const found = ADMIN_LINE.exec(gateway.stderr);
    const admin = found ? new URL(found[1]!) : await adminUrlFrom(gateway.child.stderr);
    const expected = {
      status: 'upstream unavailable',
      cause: 'the upstream command "no-such-command-27" is not found on PATH',
    };
    for (const base of [admin, gateway.url]) {
      const answer = await fetch(new URL('/readyz', base));
      expect({ status: answer.status, body: await answer.json() }).toEqual({ status: 503, body: expected });
    }
  });
});

const ADMIN_LINE = /"url":"([^"]+)","msg":"admin listener/;

/** The admin listener's URL, from its log line on this stream, waited for with a bound. */
function adminUrlFrom(stream: Readable, timeoutMs = 15_000): Promise<URL> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => {
      stream.off('data', onData);
      reject(new Error(`no admin listener in the log: ${seen}`));
    }, timeoutMs);
    const onData = (chunk: Buffer): void => {
      seen += chunk.toString();
      const found = ADMIN_LINE.exec(seen);
      if (!found) return;
      clearTimeout(timer);
      stream.off('data', onData);
      resolve(new URL(found[1]!));
    };
    stream.on('data', onData);
  });
}

/** An SDK client → taskgate on stdio with an admin listener → the legacy fixture. */
async function stdioWithAdmin(): Promise<{ client: Client; admin: URL }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [TASKGATE, '--admin-listen', '127.0.0.1:0', '--', process.execPath, FIXTURES.legacy],
    stderr: 'pipe',
    // The whole environment (the SDK's default keeps a few variables): the run's leak check finds it by it.
    env: process.env as Record<string, string>,
  });
  const admin = adminUrlFrom(transport.stderr as Readable);
  const client = new Client({ name: 'metrics-test', version: '1' }, { capabilities: TASK_AWARE });
  await client.connect(transport);
  cleanups.push(() => client.close());
  return { client, admin: await admin };
}

describe('the admin listener in stdio mode', () => {
  it('serves /metrics, /healthz and /dashboard on --admin-listen, counting the tasks that ran', async () => {
    const { client, admin } = await stdioWithAdmin();
    expect(admin.hostname).toBe('127.0.0.1');
    const taskId = await runTask(client, 'echo');
    await runTask(client, 'fail');

    const text = await scrape(new URL('/metrics', admin));
    expect(sample(text, 'taskgate_tasks_created_total', { tool: 'echo' })).toBe(1);
    expect(sample(text, 'taskgate_tasks_finished_total', { tool: 'echo', status: 'completed' })).toBe(1);
    expect(sample(text, 'taskgate_tasks_finished_total', { tool: 'fail', status: 'failed' })).toBe(1);
    expect(sample(text, 'taskgate_sessions_open')).toBe(1);
    expect(await (await fetch(new URL('/healthz', admin))).json()).toEqual({ status: 'ok' });
    expect(await (await fetch(new URL('/readyz', admin))).json()).toEqual({ status: 'ready' });

    const page = await fetch(new URL('/dashboard', admin));
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain(`data-task="${taskId.slice(0, 8)}" data-status="completed"`);
    // The full id is the key to the task: the page never shows it.
    expect(html).not.toContain(taskId);
  });

  it('exits with code 1 and the reason when the admin address is taken', async () => {
    const { admin } = await stdioWithAdmin();
    const peer = RawPeer.start(['--admin-listen', admin.host, '--', process.execPath, FIXTURES.legacy]);
    const [code] = await peer.exited;
    expect(code).toBe(1);
    expect(peer.stderr).toContain(`cannot listen on ${admin.host}: the address is already in use`);
  });
});

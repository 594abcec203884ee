/**
 * 2026-07-28 servers among the servers behind one endpoint (issue 32), in process, with a 2025 SDK Client:
 * a server built on the SDK v2 (@modelcontextprotocol/server, test/fixtures/modern-server.js, which has no
 * tasks) and a server of the v2 tasks extension (test/fixtures/v2-task-server.js), beside an SDK 1.x
 * server without tasks and one with tasks of its own (v1). Each is reached as taskgate reaches a stdio
 * server (the era probe, then 2026-07-28 translated): their tools are merged with the others', calls reach
 * them, a task on each (taskgate's on a server without tasks, the server's own v1 or v2 task on the
 * others) is listed with the others' and fetched, awaited and cancelled on the server that holds it.
 */
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import type { MemoryChannel } from '../../src/transport/memory-channel.js';
import { makeServer } from '../fixtures/modern-server.js';
import { ChannelTransport } from '../helpers/channel-transport.js';
import { textResult, type FakeTool } from '../helpers/in-process.js';
import {
  inProcessAggregate,
  type AggregateGateway,
  type ModernPeer,
  type ServerBehind,
  v2TasksPeer,
} from '../helpers/in-process-aggregate.js';

let gate: AggregateGateway | undefined;
afterEach(async () => {
  expect(gate?.violations ?? []).toEqual([]);
  await gate?.close();
  gate = undefined;
});

/** The methods the SDK v2 server was sent, in order. */
let sdk2Methods: string[] = [];

/** The SDK v2 fixture, served on the channel as serveStdio serves a connection. */
const sdkV2 = (serverSide: MemoryChannel): ModernPeer => {
  sdk2Methods = [];
  const start = serverSide.start.bind(serverSide);
  serverSide.start = (handlers) =>
    start({
      ...handlers,
      message: (raw) => {
        sdk2Methods.push(String((JSON.parse(raw.toString()) as { method?: string }).method));
        handlers.message(raw);
      },
    });
  return serveStdio(makeServer, { transport: new ChannelTransport(serverSide) });
};

const echoOf = (server: string): FakeTool => ({
  name: 'echo',
  run: (args) => textResult(`${server}: ${String(args.text)}`),
});

const FOUR: ServerBehind[] = [
  { name: 'plain', tools: [echoOf('plain')] },
  { name: 'v1tasks', tools: [{ ...echoOf('v1tasks'), taskSupport: 'optional' }] },
  { name: 'sdk2', modern: sdkV2 },
  { name: 'v2tasks', modern: v2TasksPeer },
];

const text = (result: unknown): string =>
  ((result as { content: { text: string }[] }).content[0] ?? { text: '' }).text;

const createTask = (g: AggregateGateway, name: string, args: Record<string, unknown>) =>
  g.client.request(
    { method: 'tools/call', params: { name, arguments: args, task: {} } },
    CreateTaskResultSchema,
  );

describe('2026-07-28 servers among the servers (issue 32)', () => {
  it('merges an SDK v2 server’s and a v2 task server’s tools, prompts and resources with the others’, and calls each', async () => {
    const g = (gate = await inProcessAggregate(FOUR));
    const names = (await g.client.listTools()).tools.map((tool) => tool.name);
    expect(names).toEqual(
      expect.arrayContaining([
        'plain__echo',
        'v1tasks__echo',
        'sdk2__echo',
        'sdk2__sleep',
        'v2tasks__echo',
        'v2tasks__slow',
      ]),
    );
    expect(text(await g.client.callTool({ name: 'sdk2__echo', arguments: { text: 'a' } }))).toBe('a');
    expect(text(await g.client.callTool({ name: 'v2tasks__echo', arguments: { text: 'b' } }))).toBe('b');
    expect(text(await g.client.callTool({ name: 'plain__echo', arguments: { text: 'c' } }))).toBe('plain: c');
    const prompt = await g.client.getPrompt({ name: 'sdk2__greet', arguments: { name: 'Ada' } });
    expect(prompt.messages[0]?.content).toMatchObject({ text: 'Hello, Ada!' });
    const listed = (await g.client.listResources()).resources.map((resource) => resource.uri);
    expect(listed).toContain('taskgate:sdk2/fixture://hello');
    const read = await g.client.readResource({ uri: 'taskgate:sdk2/fixture://hello' });
    expect(read.contents[0]).toMatchObject({
      uri: 'taskgate:sdk2/fixture://hello',
      text: 'hello from fixture',
    });
    // Spoken to in 2026-07-28 (asked server/discover, never initialize), as it answered the probe.
    expect(sdk2Methods[0]).toBe('server/discover');
    expect(sdk2Methods).not.toContain('initialize');
  });

  it('runs a task on each kind of server, lists them together, and fetches each from the server that holds it', async () => {
    const g = (gate = await inProcessAggregate(FOUR));
    const made = {
      plain: await createTask(g, 'plain__echo', { text: 'p' }),
      v1tasks: await createTask(g, 'v1tasks__echo', { text: 'n' }),
      sdk2: await createTask(g, 'sdk2__sleep', { ms: 10 }),
      v2tasks: await createTask(g, 'v2tasks__slow', { ms: 20, text: 'from v2' }),
    };
    for (const [server, { task }] of Object.entries(made)) {
      expect(task.taskId.startsWith(`${server}__`)).toBe(true);
    }
    // taskgate's tasks (augment) are in its store; a server's own (v1 or v2) only in that server.
    const inStore = async (taskId: string) =>
      (await g.store.get(taskId.slice(taskId.indexOf('__') + 2)).catch(() => undefined)) !== undefined;
    expect(await inStore(made.sdk2.task.taskId)).toBe(true);
    expect(await inStore(made.v2tasks.task.taskId)).toBe(false);
    expect(await inStore(made.v1tasks.task.taskId)).toBe(false);

    const listed = (await g.client.experimental.tasks.listTasks()).tasks.map((task) => task.taskId);
    expect(listed.sort()).toEqual(
      Object.values(made)
        .map(({ task }) => task.taskId)
        .sort(),
    );

    const result = (taskId: string) =>
      g.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    expect(text(await result(made.plain.task.taskId))).toBe('plain: p');
    expect(text(await result(made.v1tasks.task.taskId))).toBe('v1tasks: n');
    expect(text(await result(made.sdk2.task.taskId))).toBe('slept 10 ms');
    expect(text(await result(made.v2tasks.task.taskId))).toBe('from v2');
    const got = await g.client.experimental.tasks.getTask(made.v2tasks.task.taskId);
    expect(got).toMatchObject({ taskId: made.v2tasks.task.taskId, status: 'completed' });
  });

  it('cancels a task on the SDK v2 server and one on the v2 task server, each where it runs', async () => {
    const g = (gate = await inProcessAggregate(FOUR));
    const onSdk2 = await createTask(g, 'sdk2__sleep', { ms: 60_000, label: 'cancel-me' });
    const onV2 = await createTask(g, 'v2tasks__slow', { ms: 60_000 });
    const tasks = g.client.experimental.tasks;
    expect(await tasks.cancelTask(onSdk2.task.taskId)).toMatchObject({ status: 'cancelled' });
    expect(await tasks.cancelTask(onV2.task.taskId)).toMatchObject({ status: 'cancelled' });
    expect(await tasks.getTask(onV2.task.taskId)).toMatchObject({ status: 'cancelled' });
  });
});

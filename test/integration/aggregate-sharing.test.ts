/**
 * A server of `upstreams` shared by the HTTP front's sessions (`sharing: shared`) among servers each
 * session has of its own (issue 32): one process of it for every session, and what sharing keeps apart
 * with one server (each session's tasks and progress, a crash failing only calls to it) kept apart here.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
  McpError,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
  type Progress,
} from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { CheckedTransport } from '../helpers/checked-transport.js';
import { httpTransport } from '../helpers/http-client.js';
import { Inbox } from '../helpers/inbox.js';
import { FIXTURES, Gateway, TASK_AWARE } from '../helpers/taskgate.js';
import { thrownBy } from '../helpers/thrown.js';
import { textOf } from '../helpers/tool-results.js';

const node = process.execPath;
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

async function gatewayWith(upstreams: object): Promise<Gateway> {
  const config = join(mkdtempSync(join(tmpdir(), 'taskgate-sharing-')), 'servers.json');
  writeFileSync(config, JSON.stringify({ upstreams }));
  const gateway = await Gateway.start(
    [],
    ['--config', config, '--no-upstream-restart', '--log-level', 'info'],
  );
  cleanups.push(() => gateway.stop());
  return gateway;
}

async function session(gateway: Gateway): Promise<{ client: Client; transport: CheckedTransport }> {
  const transport = new CheckedTransport(httpTransport(gateway.url));
  const client = new Client({ name: 'taskgate-test', version: '1.0.0' }, { capabilities: TASK_AWARE });
  await client.connect(transport);
  cleanups.push(() => client.close());
  return { client, transport };
}

/** How many processes of the server `name` taskgate started (it logs each child's pid). */
const started = (gateway: Gateway, name: string): number =>
  gateway.stderr
    .split('\n')
    .filter((line) => /"pid":\d+,"command"/.test(line) && line.includes(`"server":"${name}"`)).length;

const rpcError = async (promise: Promise<unknown>): Promise<McpError> => {
  const error = await thrownBy(promise);
  expect(error).toBeInstanceOf(McpError);
  return error as McpError;
};

describe('sharing per server of upstreams over the HTTP front (issue 32)', () => {
  it('two sessions share one process of the shared server, each with its own tasks and progress; a crash of it fails only its calls', async () => {
    const gateway = await gatewayWith({
      shared: { command: node, args: [FIXTURES.native], sharing: 'shared' },
      own: { command: node, args: [FIXTURES.legacy] },
    });
    const a = await session(gateway);
    const b = await session(gateway);
    for (const { client } of [a, b]) {
      const names = (await client.listTools()).tools.map((tool) => tool.name);
      expect(names).toEqual(expect.arrayContaining(['shared__echo', 'own__echo']));
    }
    expect(started(gateway, 'shared')).toBe(1);
    expect(started(gateway, 'own')).toBe(2);

    // The shared server's own task (passed through) is the session's that started it.
    const { task } = await a.client.request(
      { method: 'tools/call', params: { name: 'shared__echo', arguments: { text: 'mine' }, task: {} } },
      CreateTaskResultSchema,
    );
    expect(task.taskId).toMatch(/^shared__/);
    expect((await rpcError(b.client.experimental.tasks.getTask(task.taskId))).code).toBe(-32602);
    const result = await a.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(textOf(result)).toBe('mine');

    // Both SDK clients number their requests and progress tokens alike: each gets its own progress.
    const progressOf = { a: [] as Progress[], b: [] as Progress[] };
    const answers = await Promise.all(
      (['a', 'b'] as const).map((name, i) =>
        (name === 'a' ? a : b).client.callTool(
          { name: 'shared__progress', arguments: { steps: 2 + i } },
          CallToolResultSchema,
          { onprogress: (progress) => progressOf[name].push(progress) },
        ),
      ),
    );
    expect(answers.map(textOf)).toEqual(['done 2 steps', 'done 3 steps']);
    expect(progressOf.a.map((p) => p.progress)).toEqual([1, 2]);
    expect(progressOf.b.map((p) => p.progress)).toEqual([1, 2, 3]);

    // Each session hears the shared server's log messages at its own level.
    const heard = { a: [] as unknown[], b: new Inbox<unknown>() };
    a.client.setNotificationHandler(
      LoggingMessageNotificationSchema,
      (n) => void heard.a.push(n.params.data),
    );
    b.client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => heard.b.push(n.params.data));
    await a.client.setLoggingLevel('error');
    await b.client.callTool({ name: 'shared__announce', arguments: { text: 'first' } });
    await heard.b.waitFor((data) => data === 'first', 'first', 5_000);
    await a.client.setLoggingLevel('info');
    await b.client.callTool({ name: 'shared__announce', arguments: { text: 'second' } });
    await heard.b.waitFor((data) => data === 'second', 'second', 5_000);
    // Each session's messages arrive in order: once a has the second, it has had its chance at the first.
    await expect.poll(() => heard.a, { timeout: 5_000 }).toEqual(['second']);

    // The shared server crashes: its calls fail in both sessions, their own servers go on serving.
    expect((await rpcError(a.client.callTool({ name: 'shared__crash', arguments: {} }))).code).toBe(-32000);
    for (const [i, { client }] of [a, b].entries()) {
      expect((await rpcError(client.callTool({ name: 'shared__echo', arguments: {} }))).code).toBe(-32000);
      expect(textOf(await client.callTool({ name: 'own__echo', arguments: { text: `own ${i}` } }))).toBe(
        `own ${i}`,
      );
    }
    expect([...a.transport.violations, ...b.transport.violations]).toEqual([]);
  });

  it("sends the shared server's resource updates to the sessions that subscribed, and list_changed to every session", async () => {
    const gateway = await gatewayWith({
      watched: {
        command: node,
        args: [FIXTURES.legacy],
        env: { FIXTURE_WATCH: '1' },
        sharing: 'shared',
      },
      own: { command: node, args: [FIXTURES.legacy] },
    });
    const a = await session(gateway);
    const b = await session(gateway);
    const heard = { a: new Inbox<string>(), b: new Inbox<string>() };
    for (const name of ['a', 'b'] as const) {
      const { client } = { a, b }[name];
      client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => heard[name].push(n.params.uri));
      client.setNotificationHandler(ToolListChangedNotificationSchema, () =>
        heard[name].push('list_changed'),
      );
    }
    const uri = 'taskgate:watched/test://watched';
    await a.client.subscribeResource({ uri });
    // b touches what a subscribed to on the one server they share.
    expect(
      textOf(await b.client.callTool({ name: 'watched__touch', arguments: { uri: 'test://watched' } })),
    ).toBe('updated');
    // The update comes before the list_changed that follows it: once each has that, it has had its chance.
    await heard.a.waitFor((item) => item === 'list_changed', 'list_changed in a', 5_000);
    await heard.b.waitFor((item) => item === 'list_changed', 'list_changed in b', 5_000);
    expect(heard.a.items.filter((item) => item === uri)).toHaveLength(1);
    expect(heard.b.items.filter((item) => item === uri)).toHaveLength(0);
  });

  it('spreads the sessions over a pool of the server, and sends its elicitation for a task to the session of that task', async () => {
    const gateway = await gatewayWith({
      pooled: { command: node, args: [FIXTURES.native], sharing: 'pool', poolSize: 2 },
      own: { command: node, args: [FIXTURES.legacy] },
    });
    // a and c are given the first of the two processes.
    const [a, b, c] = [await session(gateway), await session(gateway), await session(gateway)];
    const asked: string[] = [];
    for (const [name, { client }] of Object.entries({ a, b, c })) {
      client.setRequestHandler(ElicitRequestSchema, () => {
        asked.push(name);
        return { action: 'accept', content: { answer: `from ${name}` } };
      });
    }
    for (const { client } of [a, b, c]) {
      expect(textOf(await client.callTool({ name: 'pooled__echo', arguments: { text: 'hi' } }))).toBe('hi');
    }
    expect(started(gateway, 'pooled')).toBe(2);
    expect(started(gateway, 'own')).toBe(3);
    const { task } = await c.client.request(
      { method: 'tools/call', params: { name: 'pooled__elicit', arguments: { message: 'who?' }, task: {} } },
      CreateTaskResultSchema,
    );
    const result = await c.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(textOf(result)).toContain('from c');
    expect(asked).toEqual(['c']);
    expect((await rpcError(a.client.experimental.tasks.getTask(task.taskId))).code).toBe(-32602);
  });
});

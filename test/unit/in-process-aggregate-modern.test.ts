/**
 * 2026-07-28 clients in front of several servers (issue 32), in process: the aggregator with the modern
 * bridge as its client (src/aggregate/modern.ts), as taskgate on stdio serves a client whose first request
 * is a 2026-07-28 one. Behind it an SDK 1.x server without tasks (taskgate augments it), one with v1 tasks
 * of its own, an SDK v2 server (test/fixtures/modern-server.js) and a server of the v2 tasks extension
 * (test/fixtures/v2-task-server.js). In front, a pinned SDK v2 client and the official ext-tasks requester
 * (createTaskSessionFromClient with v2 framing, dispatching to the bridge as the HTTP front hands it
 * requests).
 */
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import {
  createTaskSessionFromClient,
  type ApplicationInputRequest,
  type RawClientDispatch,
  type TaskEnabledSession,
  type TaskOutcome,
} from '@modelcontextprotocol/ext-tasks/client';
import { ElicitResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Aggregator } from '../../src/aggregate/aggregator.js';
import { ClientGiveUp } from '../../src/protocol/modern/exchange.js';
import type { MemoryChannel } from '../../src/transport/memory-channel.js';
import { makeServer } from '../fixtures/modern-server.js';
import { ChannelTransport } from '../helpers/channel-transport.js';
import { subscribableServer, textResult, type FakeTool } from '../helpers/in-process.js';
import {
  inProcessModernAggregate,
  type ModernAggregateGateway,
  type ModernPeer,
  type ServerBehind,
  v2TasksPeer,
} from '../helpers/in-process-aggregate.js';
import { MODERN_META } from '../helpers/in-process-bridge.js';
import { Inbox } from '../helpers/inbox.js';
import { textOf } from '../helpers/tool-results.js';

let gate: ModernAggregateGateway | undefined;
let requester: TaskEnabledSession | undefined;
afterEach(async () => {
  await requester?.close();
  requester = undefined;
  await gate?.close();
  gate = undefined;
});

const echoOf = (server: string): FakeTool => ({
  name: 'echo',
  run: (args) => textResult(`${server}: ${String(args.text)}`),
});

/** Asks its client a yes/no question (a 2025 elicitation/create) and answers with what it was told. */
const asking: FakeTool = {
  name: 'ask',
  run: async (_args, extra) => {
    const answer = await extra.sendRequest(
      {
        method: 'elicitation/create',
        params: {
          message: 'go on?',
          requestedSchema: { type: 'object', properties: { confirm: { type: 'boolean' } } },
        },
      },
      ElicitResultSchema,
    );
    return textResult(`plain was told ${answer.action} ${JSON.stringify(answer.content ?? {})}`);
  },
};

const sdkV2 = (serverSide: MemoryChannel): ModernPeer =>
  serveStdio(makeServer, { transport: new ChannelTransport(serverSide) });

const FOUR: ServerBehind[] = [
  { name: 'plain', tools: [echoOf('plain'), asking] },
  { name: 'v1tasks', tools: [{ ...echoOf('v1tasks'), taskSupport: 'optional' }] },
  { name: 'sdk2', modern: sdkV2 },
  { name: 'v2tasks', modern: v2TasksPeer },
];

const VERSION = '2026-07-28';

/** The request `_meta` of a 2026-07-28 client that declares the tasks extension. */
const WITH_TASKS = {
  ...MODERN_META,
  'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
};

/** The ext-tasks requester on the gateway's client, its requests handed to the bridge as exchanges. */
function tasksRequester(g: ModernAggregateGateway, inputs: ApplicationInputRequest[]): TaskEnabledSession {
  let nextId = 1;
  const rawDispatch: RawClientDispatch = async (request) => {
    const { method, params } = request as { method: string; params?: Record<string, unknown> };
    const answer = await g.handle({
      request: { jsonrpc: '2.0', id: nextId++, method, ...(params === undefined ? {} : { params }) },
      notify: () => undefined,
      signal: new ClientGiveUp(),
    });
    const response = answer?.response as { result?: never; error?: never } | undefined;
    if (response === undefined) throw new Error(`no answer to ${method}`);
    return response.error !== undefined
      ? { kind: 'error', error: response.error }
      : { kind: 'result', result: response.result! };
  };
  return createTaskSessionFromClient(g.client as never, {
    endpointId: 'in-process-aggregate',
    rawDispatch,
    v2RequestFraming: {
      protocolVersion: VERSION,
      clientInfo: { name: 'ext-tasks-in-process', version: '1.0.0' },
      clientCapabilities: { elicitation: { form: {} } },
    },
    onInputRequest: async <T extends ApplicationInputRequest>(input: T) => {
      inputs.push(input);
      return { action: 'accept', content: { confirm: true, answer: 'yes' } } as never;
    },
  });
}

/** Calls `tool` as a task, checks it was one, and waits for how it ended; with the task's id. */
async function asTask(
  session: TaskEnabledSession,
  tool: string,
  args: Record<string, string | number>,
): Promise<TaskOutcome<unknown> & { taskId: string | undefined }> {
  const execution = await session.callTool(tool, args, {
    task: { preference: 'require' },
    requestTimeoutMs: 10_000,
  });
  expect(execution.kind, tool).toBe('task');
  const { outcome, lastTask } = await execution.settle({ signal: AbortSignal.timeout(10_000) });
  return { ...outcome, taskId: lastTask?.taskId };
}

function resultText(outcome: TaskOutcome<unknown>): string {
  if (outcome.status !== 'completed') throw new Error(`the task ended ${outcome.status}`);
  return textOf(outcome.result as object);
}

describe('2026-07-28 clients in front of several servers (issue 32)', () => {
  it('discovers the merged server: the union of the capabilities, taskgate as the server, each server’s instructions, the tasks extension', async () => {
    const g = (gate = await inProcessModernAggregate([
      { name: 'plain', tools: [echoOf('plain')], instructions: 'Echoes plainly.' },
      {
        name: 'v1tasks',
        tools: [{ ...echoOf('v1tasks'), taskSupport: 'optional' }],
        instructions: 'Runs tasks.',
      },
      { name: 'sdk2', modern: sdkV2 },
    ]));
    expect(g.client.getProtocolEra()).toBe('modern');
    expect(g.client.getServerVersion()).toMatchObject({ name: 'taskgate' });
    const capabilities = g.client.getServerCapabilities();
    // tools from every server; prompts and resources from the SDK v2 server alone.
    expect(capabilities).toMatchObject({ tools: {}, prompts: {}, resources: {} });
    expect(capabilities?.extensions).toHaveProperty(['io.modelcontextprotocol/tasks']);
    expect(g.client.getInstructions()).toBe('plain: Echoes plainly.\n\nv1tasks: Runs tasks.');
  });

  it('lists every server’s tools, prompts and resources under their prefixes and calls each server’s tools', async () => {
    const g = (gate = await inProcessModernAggregate(FOUR));
    const names = (await g.client.listTools()).tools.map((tool) => tool.name);
    expect(names).toEqual(
      expect.arrayContaining([
        'plain__echo',
        'v1tasks__echo',
        'sdk2__echo',
        'sdk2__elicit',
        'v2tasks__echo',
        'v2tasks__slow',
      ]),
    );
    const call = async (name: string, args: Record<string, unknown>) =>
      textOf(await g.client.callTool({ name, arguments: args }));
    expect(await call('plain__echo', { text: 'a' })).toBe('plain: a');
    expect(await call('v1tasks__echo', { text: 'b' })).toBe('v1tasks: b');
    expect(await call('sdk2__echo', { text: 'c' })).toBe('c');
    expect(await call('v2tasks__echo', { text: 'd' })).toBe('d');
    const result = await g.client.callTool({ name: 'sdk2__echo', arguments: { text: 'e' } });
    expect(result._meta?.['io.modelcontextprotocol/serverInfo']).toMatchObject({ name: 'taskgate' });
    const prompt = await g.client.getPrompt({ name: 'sdk2__greet', arguments: { name: 'Ada' } });
    expect(prompt.messages[0]?.content).toMatchObject({ text: 'Hello, Ada!' });
    const uris = (await g.client.listResources()).resources.map((resource) => resource.uri);
    expect(uris).toContain('taskgate:sdk2/fixture://hello');
    const read = await g.client.readResource({ uri: 'taskgate:sdk2/fixture://hello' });
    expect(read.contents[0]).toMatchObject({ uri: 'taskgate:sdk2/fixture://hello' });
  });

  it('puts a server’s elicitation to the caller whose call raised it (MRTR), from a 2025 server and from an SDK v2 one', async () => {
    const asked: unknown[] = [];
    const g = (gate = await inProcessModernAggregate(FOUR, {
      onElicit: (params) => {
        asked.push(params.message);
        return { action: 'accept', content: { confirm: true, answer: 'forty-two' } };
      },
    }));
    expect(textOf(await g.client.callTool({ name: 'plain__ask', arguments: {} }))).toBe(
      'plain was told accept {"confirm":true,"answer":"forty-two"}',
    );
    const v2 = await g.client.callTool({ name: 'sdk2__elicit', arguments: { message: 'answer?' } });
    expect(JSON.parse(textOf(v2))).toMatchObject({ action: 'accept', content: { answer: 'forty-two' } });
    expect(asked).toEqual(['go on?', 'answer?']);
  });

  it('runs a task on each server for the ext-tasks requester: taskgate’s, a v1 server’s own, a v2 server’s own', async () => {
    const g = (gate = await inProcessModernAggregate(FOUR));
    const session = (requester = tasksRequester(g, []));
    const ran = {
      plain: await asTask(session, 'plain__echo', { text: 'p' }),
      v1tasks: await asTask(session, 'v1tasks__echo', { text: 'n' }),
      sdk2: await asTask(session, 'sdk2__sleep', { ms: 10 }),
      v2tasks: await asTask(session, 'v2tasks__slow', { ms: 20, text: 'from v2' }),
    };
    expect(resultText(ran.plain)).toBe('plain: p');
    expect(resultText(ran.v1tasks)).toBe('v1tasks: n');
    expect(resultText(ran.sdk2)).toBe('slept 10 ms');
    expect(resultText(ran.v2tasks)).toBe('from v2');
    // Each task id names its server; taskgate's tasks (augment) are in its store, a server's own only there.
    const inStore = async (taskId: string) =>
      (await g.store.get(taskId.slice(taskId.indexOf('__') + 2)).catch(() => undefined)) !== undefined;
    for (const [server, { taskId }] of Object.entries(ran)) {
      expect(taskId?.startsWith(`${server}__`), server).toBe(true);
      expect(await inStore(taskId!), server).toBe(server === 'plain' || server === 'sdk2');
    }
    // The v2 server was asked with the extension declared, and made the task itself.
    const seen = await g.client.callTool({ name: 'v2tasks__calls-seen', arguments: {} });
    expect(JSON.parse(textOf(seen))).toContainEqual({ tool: 'slow', extension: true, task: false });
  });

  it('decides a first call to a server mounted without prefix as a task by that server, before any tools/list', async () => {
    const g = (gate = await inProcessModernAggregate([
      { name: 'plain', tools: [echoOf('plain')], prefix: false },
      {
        name: 'v1tasks',
        tools: [{ name: 'report', taskSupport: 'required', run: () => textResult('reported') }],
        prefix: false,
      },
    ]));
    let nextId = 1;
    const ask = async (method: string, params: Record<string, unknown>) => {
      const answer = await g.handle({
        request: { jsonrpc: '2.0', id: nextId++, method, params: { ...params, _meta: WITH_TASKS } },
        notify: () => undefined,
        signal: new ClientGiveUp(),
      });
      const response = answer?.response as { result?: Record<string, unknown>; error?: unknown };
      if (response?.result === undefined) throw new Error(`${method}: ${JSON.stringify(response)}`);
      return response.result;
    };
    // taskgate's task on the server without tasks; the server's own where its tool must be one.
    for (const [tool, text] of [
      ['echo', 'plain: first'],
      ['report', 'reported'],
    ] as const) {
      const created = await ask('tools/call', { name: tool, arguments: { text: 'first' } });
      expect(created, tool).toMatchObject({ resultType: 'task' });
      const deadline = Date.now() + 10_000;
      let task = created;
      while (task.status === 'working' && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, Number(task.pollIntervalMs ?? 50)));
        task = await ask('tasks/get', { taskId: created.taskId });
      }
      expect(task, tool).toMatchObject({ status: 'completed', result: { content: [{ text }] } });
    }
  });

  it('takes a task’s input request from its server to the requester and its answer back (tasks/get, tasks/update)', async () => {
    const g = (gate = await inProcessModernAggregate(FOUR));
    const inputs: ApplicationInputRequest[] = [];
    const session = (requester = tasksRequester(g, inputs));
    expect(resultText(await asTask(session, 'plain__ask', {}))).toBe(
      'plain was told accept {"confirm":true,"answer":"yes"}',
    );
    const fromV2 = await asTask(session, 'v2tasks__ask', { question: 'which?' });
    expect(resultText(fromV2)).toContain('yes');
    expect(inputs.map((input) => input.kind)).toEqual(['elicitation', 'elicitation']);
  });

  it('cancels a task where it runs: taskgate’s and a v2 server’s own', async () => {
    const g = (gate = await inProcessModernAggregate(FOUR));
    const session = (requester = tasksRequester(g, []));
    for (const [tool, args] of [
      ['sdk2__sleep', { ms: 60_000 }],
      ['v2tasks__slow', { ms: 60_000 }],
    ] as const) {
      const execution = await session.callTool(tool, args, {
        task: { preference: 'require' },
        requestTimeoutMs: 10_000,
      });
      expect(execution.kind, tool).toBe('task');
      await execution.cancel();
      const { outcome } = await execution.settle({ signal: AbortSignal.timeout(10_000) });
      expect(outcome.status, tool).toBe('cancelled');
    }
  });

  it('carries a subscriptions/listen stream through two servers: each subscribed by its own URI, their resources/updated and list changes on the stream under the client’s', async () => {
    const asked = new Inbox<string>();
    const servers = { a: subscribableServer('a', asked), b: subscribableServer('b', asked) };
    const g = (gate = await inProcessModernAggregate(
      Object.entries(servers).map(([name, server]) => ({ name, server })),
    ));
    const heard = new Inbox<{ method: string; params?: Record<string, unknown> }>();
    const stream = new ClientGiveUp();
    const uris = ['taskgate:a/mem://doc', 'taskgate:b/mem://doc'];
    const listening = g.handle({
      request: {
        jsonrpc: '2.0',
        id: 'listen-2',
        method: 'subscriptions/listen',
        params: {
          notifications: { resourceSubscriptions: uris, toolsListChanged: true, resourcesListChanged: true },
          _meta: MODERN_META,
        },
      },
      notify: (message) => heard.push(message as never),
      signal: stream,
    });
    const acknowledged = await heard.waitFor(
      (message) => message.method === 'notifications/subscriptions/acknowledged',
      'the acknowledgment',
    );
    expect(acknowledged.params?.notifications).toEqual({
      toolsListChanged: true,
      resourcesListChanged: true,
      resourceSubscriptions: uris,
    });
    for (const name of ['a', 'b']) {
      await asked.waitFor((seen) => seen === `${name} subscribe mem://doc`, `${name}'s subscribe`);
    }
    const subscriptionOf = (message: { params?: Record<string, unknown> }) =>
      (message.params?._meta as Record<string, unknown>)['io.modelcontextprotocol/subscriptionId'];

    await servers.b.sendResourceUpdated({ uri: 'mem://doc' });
    const fromB = await heard.waitFor(
      (message) => message.method === 'notifications/resources/updated',
      "b's resources/updated",
    );
    expect(fromB.params?.uri).toBe('taskgate:b/mem://doc');
    expect(subscriptionOf(fromB)).toBe('listen-2');
    await servers.a.sendResourceUpdated({ uri: 'mem://doc' });
    await heard.waitFor(
      (message) =>
        message.method === 'notifications/resources/updated' &&
        message.params?.uri === 'taskgate:a/mem://doc',
      "a's resources/updated",
    );
    await servers.a.sendToolListChanged();
    await servers.b.sendResourceListChanged();
    for (const kind of ['tools', 'resources']) {
      const changed = await heard.waitFor(
        (message) => message.method === `notifications/${kind}/list_changed`,
        `${kind}/list_changed`,
      );
      expect(subscriptionOf(changed)).toBe('listen-2');
    }

    stream.giveUp();
    expect(await listening).toBeUndefined();
    for (const name of ['a', 'b']) {
      await asked.waitFor((seen) => seen === `${name} unsubscribe mem://doc`, `${name}'s unsubscribe`);
    }
  });

  it('tells a subscriptions/listen stream of the merged tool list’s change when a server goes away', async () => {
    const g = (gate = await inProcessModernAggregate(FOUR));
    const heard = new Inbox<{ method: string; params?: Record<string, unknown> }>();
    const stream = new ClientGiveUp();
    const listening = g.handle({
      request: {
        jsonrpc: '2.0',
        id: 'listen-1',
        method: 'subscriptions/listen',
        params: { notifications: { toolsListChanged: true }, _meta: MODERN_META },
      },
      notify: (message) => heard.push(message as never),
      signal: stream,
    });
    const acknowledged = await heard.waitFor(
      (message) => message.method === 'notifications/subscriptions/acknowledged',
      'the acknowledgment',
    );
    // The merged list changes as servers come and go, whatever each server's own does.
    expect(acknowledged.params?.notifications).toEqual({ toolsListChanged: true });
    await g.crash('v1tasks');
    await heard.waitFor((message) => message.method === 'notifications/tools/list_changed', 'list_changed');
    stream.giveUp();
    expect(await listening).toBeUndefined();
  });
});

describe('the bridge and the aggregator behind it, handing each other values (issue 28)', () => {
  afterEach(() => void vi.restoreAllMocks());

  it("hands the aggregator a call and the client's giving up as values: the cancellation reaches the call's server, nothing is read off bytes", async () => {
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    let cancelled!: () => void;
    const cancelledThere = new Promise<void>((resolve) => (cancelled = resolve));
    const hang: FakeTool = {
      name: 'hang',
      run: (_args, extra) => {
        extra.signal.addEventListener('abort', () => cancelled());
        started();
        return new Promise(() => undefined);
      },
    };
    const readOffBytes = vi.spyOn(Aggregator.prototype as unknown as { fromClient(): void }, 'fromClient');
    const took = vi.spyOn(Aggregator.prototype, 'take');
    const tookMessage = vi.spyOn(Aggregator.prototype, 'takeMessage');
    gate = await inProcessModernAggregate([{ name: 'plain', tools: [echoOf('plain'), hang] }]);
    const signal = new ClientGiveUp();
    const call = gate.handle({
      request: {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'plain__hang', arguments: {}, _meta: MODERN_META },
      },
      notify: () => undefined,
      signal,
    });
    await running;
    signal.giveUp();
    expect(await call).toBeUndefined();
    await cancelledThere;

    expect(took.mock.calls.map(([request]) => request.method)).toEqual(
      expect.arrayContaining(['initialize', 'tools/call']),
    );
    expect(tookMessage.mock.calls.map(([message]) => 'method' in message && message.method)).toEqual(
      expect.arrayContaining(['notifications/initialized', 'notifications/cancelled']),
    );
    expect(readOffBytes).not.toHaveBeenCalled();
  });
});

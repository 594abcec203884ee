/**
 * Several servers behind one endpoint, in process (issue 32): a 2025-11-25 SDK Client sees the servers'
 * tools and prompts merged under `{server}__{name}`, its calls reach the right server under the server's
 * own name, a task on a server without tasks is taskgate's (augment) and one on a task server is that
 * server's (pass-through), both fetched by their prefixed ids; a collision between servers mounted without
 * prefix is refused naming both; a server that goes away fails only the calls to it.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  CallToolResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  ElicitResultSchema,
  EmptyResultSchema,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  ListToolsResultSchema,
  McpError,
  ReadResourceRequestSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { createServer } from '@modelcontextprotocol/server-everything/dist/server/index.js';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createAuditLog } from '../../src/observability/audit.js';
import { heldTool, type HeldTool } from '../helpers/held-call.js';
import { textResult, type FakeTool } from '../helpers/in-process.js';
import {
  inProcessAggregate,
  type AggregateGateway,
  type ServerBehind,
} from '../helpers/in-process-aggregate.js';
import { thrownBy } from '../helpers/thrown.js';

/** A server's echo says which server answered. */
const echoOf = (server: string): FakeTool => ({
  name: 'echo',
  run: (args) => textResult(`${server}: ${String(args.text)}`),
});
const nativeEcho: FakeTool = { ...echoOf('native'), taskSupport: 'optional' };

let gate: AggregateGateway | undefined;
const helds: HeldTool[] = [];
const cleanups: (() => void)[] = [];
afterEach(async () => {
  for (const held of helds.splice(0)) held.releaseAll();
  expect(gate?.violations ?? []).toEqual([]);
  await gate?.close();
  gate = undefined;
  for (const cleanup of cleanups.splice(0)) cleanup();
});

const open = async (servers: ServerBehind[], separator?: string) =>
  (gate = await inProcessAggregate(servers, separator === undefined ? {} : { separator }));

const held = (name: string, taskSupport?: FakeTool['taskSupport']): HeldTool => {
  const tool = heldTool(name, taskSupport);
  helds.push(tool);
  return tool;
};

const text = (result: unknown): string =>
  ((result as { content: { text: string }[] }).content[0] ?? { text: '' }).text;

const rpcError = async (promise: Promise<unknown>): Promise<McpError> => {
  const error = await thrownBy(promise);
  expect(error).toBeInstanceOf(McpError);
  return error as McpError;
};

/** A server whose tools and resources come two a page, by cursors of its own. */
const pagedServer = (tools: string[], resources: string[] = []): Server => {
  const server = new Server(
    { name: 'paged', version: '1.0.0' },
    { capabilities: { tools: {}, ...(resources.length === 0 ? {} : { resources: {} }) } },
  );
  const page = <T>(all: T[], cursor: string | undefined) => {
    const at = Number(cursor ?? 0);
    return { items: all.slice(at, at + 2), ...(at + 2 < all.length ? { nextCursor: String(at + 2) } : {}) };
  };
  server.setRequestHandler(ListToolsRequestSchema, (request) => {
    const { items, ...next } = page(tools, request.params?.cursor);
    return { tools: items.map((name) => ({ name, inputSchema: { type: 'object' as const } })), ...next };
  });
  server.setRequestHandler(CallToolRequestSchema, (request) => textResult(`paged: ${request.params.name}`));
  if (resources.length > 0) {
    server.setRequestHandler(ListResourcesRequestSchema, (request) => {
      const { items, ...next } = page(resources, request.params?.cursor);
      return { resources: items.map((uri) => ({ uri, name: uri })), ...next };
    });
    server.setRequestHandler(ReadResourceRequestSchema, (request) => ({
      contents: [{ uri: request.params.uri, text: 'paged' }],
    }));
  }
  return server;
};

/** A server whose tools/list answers are counted. */
const countedServer = (tools: string[]): { server: Server; listed: () => number } => {
  let listed = 0;
  const server = new Server({ name: 'counted', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => {
    listed++;
    return { tools: tools.map((name) => ({ name, inputSchema: { type: 'object' as const } })) };
  });
  server.setRequestHandler(CallToolRequestSchema, (request) => textResult(`counted: ${request.params.name}`));
  return { server, listed: () => listed };
};

/** Every page of a list, by its cursors, each page's names. */
const allPages = async (
  list: (cursor: string | undefined) => Promise<{ names: string[]; nextCursor?: string | undefined }>,
): Promise<string[][]> => {
  const pages: string[][] = [];
  let cursor: string | undefined;
  do {
    const page = await list(cursor);
    pages.push(page.names);
    cursor = page.nextCursor;
  } while (cursor !== undefined && pages.length < 10);
  return pages;
};

const createTask = (g: AggregateGateway, name: string, args: Record<string, unknown> = {}) =>
  g.client.request(
    { method: 'tools/call', params: { name, arguments: args, task: {} } },
    CreateTaskResultSchema,
  );

describe('several servers behind one endpoint (issue 32)', () => {
  it('answers initialize with the union of the servers’ capabilities, as taskgate', async () => {
    const g = await open([
      { name: 'legacy', tools: [echoOf('legacy')] },
      { name: 'native', tools: [nativeEcho] },
    ]);
    expect(g.client.getServerVersion()?.name).toBe('taskgate');
    const capabilities = g.client.getServerCapabilities();
    expect(capabilities?.tools).toBeDefined();
    expect(capabilities?.tasks?.requests?.tools?.call).toBeDefined();
  });

  it('lists every server’s tools as {server}__{name} and routes each call to its server without the prefix', async () => {
    const g = await open([
      { name: 'legacy', tools: [echoOf('legacy')] },
      { name: 'native', tools: [nativeEcho] },
    ]);
    const { tools } = await g.client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(['legacy__echo', 'native__echo']);
    expect(text(await g.client.callTool({ name: 'legacy__echo', arguments: { text: 'a' } }))).toBe(
      'legacy: a',
    );
    expect(text(await g.client.callTool({ name: 'native__echo', arguments: { text: 'b' } }))).toBe(
      'native: b',
    );
    const calls = g.servers
      .get('legacy')!
      .received.received.items.filter((message) => 'method' in message && message.method === 'tools/call');
    expect(calls.map((call) => ('params' in call ? call.params?.name : undefined))).toEqual(['echo']);
    const unknown = await rpcError(g.client.callTool({ name: 'other__echo', arguments: {} }));
    expect(unknown.code).toBe(-32602);
  });

  it('takes another separator the tool-name rules allow', async () => {
    const g = await open(
      [
        { name: 'a', tools: [echoOf('a')] },
        { name: 'b', tools: [echoOf('b')] },
      ],
      '.',
    );
    expect((await g.client.listTools()).tools.map((tool) => tool.name)).toEqual(['a.echo', 'b.echo']);
    expect(text(await g.client.callTool({ name: 'b.echo', arguments: { text: 'x' } }))).toBe('b: x');
  });

  it('augments on a server without tasks and passes a task server’s own task through, each fetched by its prefixed id', async () => {
    const g = await open([
      { name: 'legacy', tools: [echoOf('legacy')] },
      { name: 'native', tools: [nativeEcho] },
    ]);
    const augmented = await createTask(g, 'legacy__echo', { text: 'kept here' });
    const native = await createTask(g, 'native__echo', { text: 'kept there' });
    expect(augmented.task.taskId.startsWith('legacy__')).toBe(true);
    expect(native.task.taskId.startsWith('native__')).toBe(true);
    // The augmented task is in taskgate's store; the native one only in the server's.
    const stored = augmented.task.taskId.slice('legacy__'.length);
    expect(await g.store.get(stored).catch(() => undefined)).toBeDefined();
    const nativeOwn = native.task.taskId.slice('native__'.length);
    expect(await g.store.get(nativeOwn).catch(() => undefined)).toBeUndefined();

    const tasks = g.client.experimental.tasks;
    const first = await tasks.getTaskResult(augmented.task.taskId, CallToolResultSchema);
    expect(text(first)).toBe('legacy: kept here');
    const second = await tasks.getTaskResult(native.task.taskId, CallToolResultSchema);
    expect(text(second)).toBe('native: kept there');
    expect((await tasks.getTask(augmented.task.taskId)).taskId).toBe(augmented.task.taskId);
    expect((await tasks.getTask(native.task.taskId)).status).toBe('completed');

    const listed = await tasks.listTasks();
    expect(listed.tasks.map((task) => task.taskId).sort()).toEqual(
      [augmented.task.taskId, native.task.taskId].sort(),
    );
    const unknown = await rpcError(tasks.getTask('nobody__123'));
    expect(unknown.code).toBe(-32602);
  });

  it('cancels a task on the server that holds it', async () => {
    const slow = held('slow');
    const g = await open([
      { name: 'legacy', tools: [slow] },
      { name: 'native', tools: [nativeEcho] },
    ]);
    const { task } = await createTask(g, 'legacy__slow');
    const started = await slow.calls.waitFor(() => true, 'the call upstream');
    const cancelled = await g.client.experimental.tasks.cancelTask(task.taskId);
    expect(cancelled).toMatchObject({ taskId: task.taskId, status: 'cancelled' });
    await started.cancelled;
  });

  it('runs a task on servers mounted without prefix when it is the first thing asked, before any tools/list', async () => {
    const g = await open([
      { name: 'legacy', tools: [echoOf('legacy')], prefix: false },
      { name: 'native', tools: [{ ...nativeEcho, name: 'report', taskSupport: 'required' }], prefix: false },
    ]);
    const tasks = g.client.experimental.tasks;
    for (const [tool, expected] of [
      ['echo', 'legacy: first'],
      ['report', 'native: first'],
    ] as const) {
      const { task } = await createTask(g, tool, { text: 'first' });
      expect(text(await tasks.getTaskResult(task.taskId, CallToolResultSchema)), tool).toBe(expected);
    }
  });

  it('refuses a tool name two servers mounted without prefix both list, naming both', async () => {
    const g = await open([
      { name: 'first', tools: [echoOf('first')], prefix: false },
      { name: 'second', tools: [echoOf('second')], prefix: false },
    ]);
    const error = await rpcError(g.client.listTools());
    expect(error.message).toMatch(/"echo" is listed by server "first" and by server "second"/);
  });

  it('pages the merged tools behind one cursor, each server as it pages its own, and calls a tool of any page', async () => {
    const g = await open([
      { name: 'paged', server: pagedServer(['t1', 't2', 't3', 't4', 't5']) },
      { name: 'b', tools: [echoOf('b')] },
    ]);
    const pages = await allPages(async (cursor) => {
      const { tools, nextCursor } = await g.client.listTools(cursor === undefined ? {} : { cursor });
      return { names: tools.map((tool) => tool.name), nextCursor };
    });
    expect(pages).toEqual([['paged__t1', 'paged__t2', 'b__echo'], ['paged__t3', 'paged__t4'], ['paged__t5']]);
    // The server was asked with its own cursors, and b only once.
    const asked = (server: string) =>
      g.servers
        .get(server)!
        .received.received.items.filter((m) => 'method' in m && m.method === 'tools/list')
        .map((m) => ('params' in m ? m.params?.cursor : undefined));
    expect(asked('paged')).toEqual([undefined, '2', '4']);
    expect(asked('b')).toEqual([undefined]);
    expect(text(await g.client.callTool({ name: 'paged__t5', arguments: {} }))).toBe('paged: t5');
    expect((await rpcError(g.client.listTools({ cursor: 'not-one-of-ours' }))).code).toBe(-32602);
    const { nextCursor } = await g.client.listTools();
    expect((await rpcError(g.client.listPrompts({ cursor: nextCursor! }))).code).toBe(-32602);
  });

  it('pages the merged resources, and reads a URI of a page the client has not listed yet from a server without prefix', async () => {
    const g = await open([
      { name: 'paged', server: pagedServer(['t1'], ['mem://1', 'mem://2', 'mem://3']), prefix: false },
      { name: 'b', tools: [echoOf('b')] },
    ]);
    expect((await g.client.readResource({ uri: 'mem://3' })).contents[0]?.uri).toBe('mem://3');
    const pages = await allPages(async (cursor) => {
      const { resources, nextCursor } = await g.client.listResources(cursor === undefined ? {} : { cursor });
      return { names: resources.map((resource) => resource.uri), nextCursor };
    });
    expect(pages).toEqual([['mem://1', 'mem://2'], ['mem://3']]);
  });

  it('finds the tool of a later page of a server without prefix, and refuses a collision on any page at the first', async () => {
    let g = await open([
      { name: 'plain', server: pagedServer(['t1', 't2', 't3']), prefix: false },
      { name: 'b', tools: [echoOf('b')] },
    ]);
    expect(text(await g.client.callTool({ name: 't3', arguments: {} }))).toBe('paged: t3');
    expect((await g.client.listTools()).tools.map((tool) => tool.name)).toEqual(['t1', 't2', 'b__echo']);
    await g.close();
    g = await open([
      { name: 'first', server: pagedServer(['t1', 't2', 'echo']), prefix: false },
      { name: 'second', tools: [echoOf('second')], prefix: false },
    ]);
    const error = await rpcError(g.client.listTools());
    expect(error.message).toMatch(/"echo" is listed by server "first" and by server "second"/);
  });

  it('tells the client of several servers’ list changes at once with one list_changed, and of a later one with another', async () => {
    const g = await open([
      { name: 'a', tools: [echoOf('a')] },
      { name: 'b', tools: [echoOf('b')] },
    ]);
    const a = g.servers.get('a')!.server;
    const b = g.servers.get('b')!.server;
    const inbox = g.clientTransport.received;
    const changes = () =>
      inbox.items.filter((m) => 'method' in m && m.method === 'notifications/tools/list_changed').length;
    await Promise.all([a.sendToolListChanged(), b.sendToolListChanged(), a.sendToolListChanged()]);
    await inbox.waitFor(() => changes() >= 1, 'a list_changed');
    await b.sendToolListChanged();
    await inbox.waitFor(() => changes() >= 2, 'a second list_changed');
    expect(changes()).toBe(2);
  });

  it('mounts a server without prefix where nothing collides, and routes by the listed name', async () => {
    const ping: FakeTool = { name: 'ping-tool', run: () => textResult('pong') };
    const g = await open([
      { name: 'plain', tools: [ping], prefix: false },
      { name: 'other', tools: [echoOf('other')] },
    ]);
    // Called before any tools/list: the aggregator lists first to find the server.
    expect(text(await g.client.callTool({ name: 'ping-tool', arguments: {} }))).toBe('pong');
    expect((await g.client.listTools()).tools.map((tool) => tool.name)).toEqual(['ping-tool', 'other__echo']);
  });

  it('lists every server once for concurrent first calls to servers without prefix, and once for all the calls after a collision', async () => {
    const [first, second] = [countedServer(['t1', 'shared']), countedServer(['t2'])];
    let g = await open([
      { name: 'first', server: first.server, prefix: false },
      { name: 'second', server: second.server, prefix: false },
    ]);
    const called = await Promise.all(
      ['t1', 't2', 't1', 't2', 't1'].map((name) => g.client.callTool({ name, arguments: {} })),
    );
    expect(called.map(text)).toEqual(['t1', 't2', 't1', 't2', 't1'].map((name) => `counted: ${name}`));
    expect([first.listed(), second.listed()]).toEqual([1, 1]);
    await g.close();

    const [colliding, other] = [countedServer(['shared']), countedServer(['shared', 't3'])];
    g = await open([
      { name: 'colliding', server: colliding.server, prefix: false },
      { name: 'other', server: other.server, prefix: false },
    ]);
    const refused = await Promise.all(
      [1, 2, 3].map(() => rpcError(g.client.callTool({ name: 't3', arguments: {} }))),
    );
    refused.push(await rpcError(g.client.callTool({ name: 't3', arguments: {} })));
    for (const error of refused) expect(error.message).toMatch(/"shared" is listed by server "colliding"/);
    expect([colliding.listed(), other.listed()]).toEqual([1, 1]);
  });

  it('calls the tool the merged list named, also where a server without prefix lists a name that looks prefixed', async () => {
    const lookalike: FakeTool = { name: 'a__other', run: () => textResult('the plain one') };
    const g = await open([
      { name: 'a', tools: [echoOf('a')] },
      { name: 'plain', tools: [lookalike], prefix: false },
    ]);
    expect((await g.client.listTools()).tools.map((tool) => tool.name)).toEqual(['a__echo', 'a__other']);
    expect(text(await g.client.callTool({ name: 'a__other', arguments: {} }))).toBe('the plain one');
    expect(text(await g.client.callTool({ name: 'a__echo', arguments: { text: 'x' } }))).toBe('a: x');
  });

  it('lists and calls only the tools a server’s include and exclude globs let through', async () => {
    const g = await open([
      {
        name: 'a',
        tools: [
          echoOf('a'),
          { name: 'echo-loud', run: () => textResult('LOUD') },
          { name: 'rm', run: () => textResult('gone') },
        ],
        include: ['echo*'],
        exclude: ['*-loud'],
      },
      { name: 'b', tools: [echoOf('b')] },
    ]);
    expect((await g.client.listTools()).tools.map((tool) => tool.name)).toEqual(['a__echo', 'b__echo']);
    expect((await rpcError(g.client.callTool({ name: 'a__rm', arguments: {} }))).code).toBe(-32602);
    expect((await rpcError(g.client.callTool({ name: 'a__echo-loud', arguments: {} }))).code).toBe(-32602);
  });

  it('takes a server’s elicitation to the client and its answer back to that server', async () => {
    const asking: FakeTool = {
      name: 'ask',
      run: async (_args, extra) => {
        const answer = await extra.sendRequest(
          {
            method: 'elicitation/create',
            params: { message: 'name?', requestedSchema: { type: 'object', properties: {} } },
          },
          ElicitResultSchema,
        );
        return textResult(`got ${answer.action}`);
      },
    };
    const g = await open([
      { name: 'a', tools: [echoOf('a')] },
      { name: 'b', tools: [asking] },
    ]);
    g.client.setRequestHandler(ElicitRequestSchema, () => ({ action: 'decline' }));
    expect(text(await g.client.callTool({ name: 'b__ask', arguments: {} }))).toBe('got decline');
  });

  it('names the task of a server’s elicitation by its prefixed id, and takes progress to the client', async () => {
    const asking: FakeTool = {
      name: 'ask',
      run: async (_args, extra) => {
        const token = extra._meta?.progressToken;
        if (token !== undefined) {
          await extra.sendNotification({
            method: 'notifications/progress',
            params: { progressToken: token, progress: 1, total: 2 },
          });
        }
        const answer = await extra.sendRequest(
          {
            method: 'elicitation/create',
            params: { message: 'go on?', requestedSchema: { type: 'object', properties: {} } },
          },
          ElicitResultSchema,
        );
        return textResult(`got ${answer.action}`);
      },
    };
    const g = await open([
      { name: 'plain', tools: [asking] },
      { name: 'b', tools: [nativeEcho] },
    ]);
    const related: unknown[] = [];
    g.client.setRequestHandler(ElicitRequestSchema, (request) => {
      related.push(request.params._meta?.['io.modelcontextprotocol/related-task']);
      return { action: 'accept', content: {} };
    });
    const { task } = await g.client.request(
      {
        method: 'tools/call',
        params: { name: 'plain__ask', arguments: {}, task: {}, _meta: { progressToken: 'p1' } },
      },
      CreateTaskResultSchema,
    );
    const result = await g.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(text(result)).toBe('got accept');
    expect(related).toEqual([{ taskId: task.taskId }]);
    const progress = g.clientTransport.received.items.filter(
      (message) => 'method' in message && message.method === 'notifications/progress',
    );
    expect(
      progress.map((message) => ('params' in message ? message.params?.progressToken : undefined)),
    ).toEqual(['p1']);
  });

  it('merges server-everything’s prompts and resources with another server’s, and routes prompts/get, completion and resources/read', async () => {
    const everything = createServer();
    cleanups.push(() => everything.cleanup(undefined));
    const g = await open([
      { name: 'a', tools: [echoOf('a')] },
      { name: 'everything', server: everything.server.server },
    ]);
    const prompts = (await g.client.listPrompts()).prompts.map((prompt) => prompt.name);
    expect(prompts).toContain('everything__simple-prompt');
    expect(prompts.every((name) => name.startsWith('everything__'))).toBe(true);
    const prompt = await g.client.getPrompt({ name: 'everything__simple-prompt' });
    expect(prompt.messages.length).toBeGreaterThan(0);
    const { resources } = await g.client.listResources();
    const first = resources[0]!;
    const read = await g.client.readResource({ uri: first.uri });
    expect(read.contents[0]?.uri).toBe(first.uri);
    const { resourceTemplates } = await g.client.listResourceTemplates();
    expect(resourceTemplates.length).toBeGreaterThan(0);
    const withArguments = (await g.client.listPrompts()).prompts.find((p) => (p.arguments ?? []).length > 0)!;
    const completed = await g.client.complete({
      ref: { type: 'ref/prompt', name: withArguments.name },
      argument: { name: withArguments.arguments![0]!.name, value: '' },
    });
    expect(Array.isArray(completed.completion.values)).toBe(true);
    const unknown = await rpcError(g.client.readResource({ uri: 'nowhere://at/all' }));
    expect(unknown.code).toBe(-32602);
  });

  it('refuses a 2026-07-28 request on a connection opened with initialize with -32022 naming the versions it serves, and server/discover as a 2025 server would', async () => {
    const g = await open([
      { name: 'a', tools: [echoOf('a')] },
      { name: 'b', tools: [echoOf('b')] },
    ]);
    const modern = await rpcError(
      g.client.request(
        {
          method: 'tools/list',
          params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } },
        },
        ListToolsResultSchema,
      ),
    );
    expect(modern.code).toBe(-32022);
    expect(modern.data).toMatchObject({
      supported: expect.arrayContaining(['2025-11-25']),
      requested: '2026-07-28',
    });
    const discover = await rpcError(
      g.client.request({ method: 'server/discover', params: {} }, EmptyResultSchema),
    );
    expect(discover.code).toBe(-32601);
  });

  it('does not hold the handshake for a server slower than the grace: it joins when it answers, the lists then changed', async () => {
    gate = await inProcessAggregate(
      [
        { name: 'fast', tools: [echoOf('fast')] },
        { name: 'slow', tools: [echoOf('slow')], late: true },
      ],
      { config: { aggregate: { slowServerGrace: 50 } } },
    );
    const g = gate;
    expect(g.client.getServerCapabilities()?.tools?.listChanged).toBe(true);
    expect((await g.client.listTools()).tools.map((tool) => tool.name)).toEqual(['fast__echo']);
    const early = await rpcError(g.client.callTool({ name: 'slow__echo', arguments: { text: 'x' } }));
    expect(early.message).toMatch(/"slow" has not answered initialize yet/);
    const changed = new Promise<void>((resolve) =>
      g.client.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()),
    );
    await g.connectLate('slow');
    await changed;
    expect((await g.client.listTools()).tools.map((tool) => tool.name)).toEqual(['fast__echo', 'slow__echo']);
    expect(text(await g.client.callTool({ name: 'slow__echo', arguments: { text: 'now' } }))).toBe(
      'slow: now',
    );
    // It was told the client's handshake is over, as every server is.
    const initialized = g.servers
      .get('slow')!
      .received.received.items.filter((m) => 'method' in m && m.method === 'notifications/initialized');
    expect(initialized).toHaveLength(1);
  });

  it('fails only the calls to a server that went away; the others keep serving', async () => {
    const slow = held('slow');
    const g = await open([
      { name: 'crashing', tools: [echoOf('crashing'), slow] },
      { name: 'steady', tools: [echoOf('steady')] },
    ]);
    await g.client.listTools();
    const inFlight = rpcError(g.client.callTool({ name: 'crashing__slow', arguments: {} }));
    await slow.calls.waitFor(() => true, 'the call upstream');
    const changed = new Promise<void>((resolve) =>
      g.client.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()),
    );
    await g.crash('crashing');
    await changed;
    expect((await inFlight).code).toBe(-32000);
    const later = await rpcError(g.client.callTool({ name: 'crashing__echo', arguments: { text: 'x' } }));
    expect(later.code).toBe(-32000);
    expect(later.message).toMatch(/crashing/);
    expect(text(await g.client.callTool({ name: 'steady__echo', arguments: { text: 'still' } }))).toBe(
      'steady: still',
    );
    expect((await g.client.listTools()).tools.map((tool) => tool.name)).toEqual(['steady__echo']);
  });

  it('names the server a task was made through on its record and on every audit line about it', async () => {
    const slow = held('slow');
    const lines: Record<string, unknown>[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const g = (gate = await inProcessAggregate(
      [
        { name: 'alpha', tools: [echoOf('alpha')] },
        { name: 'beta', tools: [slow] },
      ],
      { audit: (store) => createAuditLog(logger, store, { enabled: true, logArguments: false }) },
    ));
    const tasks = g.client.experimental.tasks;
    const done = await createTask(g, 'alpha__echo', { text: 'hi' });
    expect(text(await tasks.getTaskResult(done.task.taskId, CallToolResultSchema))).toBe('alpha: hi');
    const waiting = await createTask(g, 'beta__slow');
    await slow.calls.waitFor(() => true, 'the call upstream');
    await tasks.cancelTask(waiting.task.taskId);

    const alpha = done.task.taskId.slice('alpha__'.length);
    const beta = waiting.task.taskId.slice('beta__'.length);
    expect((await g.store.get(alpha)).server).toBe('alpha');
    expect((await g.store.get(beta)).server).toBe('beta');
    const about = (taskId: string) =>
      lines
        .filter((line) => line.taskId === taskId)
        .map((line) => `${String(line.event)}@${String(line.server)}`);
    expect(about(alpha)).toEqual(['task.created@alpha', 'task.status@alpha', 'task.result@alpha']);
    expect(about(beta)).toEqual(
      expect.arrayContaining(['task.created@beta', 'task.status@beta', 'task.cancel@beta']),
    );
    expect(about(beta)).toHaveLength(3);
  });
});

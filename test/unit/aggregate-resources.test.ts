/**
 * The resources of several servers behind one endpoint, in process (issue 32): a prefixed server's URIs
 * reach the client as `taskgate:{server}/{uri}` and come back to that server as its own, character for
 * character (reads, templates, subscriptions, completions, and the URIs a tool's result, a task's result
 * or a prompt's messages embed); a server mounted without prefix keeps its URIs.
 */
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolResultSchema,
  CompleteRequestSchema,
  CreateTaskResultSchema,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ReadResourceRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';
import { createServer } from '@modelcontextprotocol/server-everything/dist/server/index.js';
import { afterEach, describe, expect, it } from 'vitest';
import { fakeServer, type FakeTool } from '../helpers/in-process.js';
import { inProcessAggregate, type AggregateGateway } from '../helpers/in-process-aggregate.js';

/** The same URIs on every server, so that only the rule tells them apart. */
const SAME = 'mem://same';
const TEMPLATE = 'mem://items/{id}';
/** A URI a server of its own never lists as such (an opaque one: no `//`), with characters kept as they are. */
const ODD = 'urn:x:a%2Fb?q=1#frag';

/** A tool whose result links to a resource and embeds one. */
const linking = (server: string): FakeTool => ({
  name: 'link',
  run: (): CallToolResult => ({
    content: [
      { type: 'text', text: `${server} links` },
      { type: 'resource_link', uri: SAME, name: 'same' },
      { type: 'resource', resource: { uri: ODD, text: `${server} embedded` } },
    ],
  }),
});

/** What a server was asked, by the URIs it was given. */
interface Asked {
  read: string[];
  subscribed: string[];
  unsubscribed: string[];
  completed: string[];
}

/** A server with tools, resources, a template, subscriptions, completion and a prompt embedding a resource. */
const resourceServer = (name: string, asked: Asked): Server => {
  const { server } = fakeServer([linking(name)]);
  server.registerCapabilities({ resources: { subscribe: true }, prompts: {}, completions: {} });
  server.setRequestHandler(ListResourcesRequestSchema, () => ({
    resources: [
      { uri: SAME, name: 'same' },
      { uri: ODD, name: 'odd' },
    ],
  }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({
    resourceTemplates: [{ uriTemplate: TEMPLATE, name: 'items' }],
  }));
  server.setRequestHandler(ReadResourceRequestSchema, (request) => {
    asked.read.push(request.params.uri);
    return { contents: [{ uri: request.params.uri, text: `${name} read` }] };
  });
  server.setRequestHandler(SubscribeRequestSchema, async (request) => {
    asked.subscribed.push(request.params.uri);
    await server.sendResourceUpdated({ uri: request.params.uri });
    return {};
  });
  server.setRequestHandler(UnsubscribeRequestSchema, (request) => {
    asked.unsubscribed.push(request.params.uri);
    return {};
  });
  server.setRequestHandler(CompleteRequestSchema, (request) => {
    const ref = request.params.ref;
    if (ref.type === 'ref/resource') asked.completed.push(ref.uri);
    return { completion: { values: [`${name}-1`] } };
  });
  server.setRequestHandler(ListPromptsRequestSchema, () => ({ prompts: [{ name: 'cite' }] }));
  server.setRequestHandler(GetPromptRequestSchema, () => ({
    messages: [{ role: 'user', content: { type: 'resource_link', uri: SAME, name: 'same' } }],
  }));
  return server;
};

const asked = (): Asked => ({ read: [], subscribed: [], unsubscribed: [], completed: [] });

let gate: AggregateGateway | undefined;
const cleanups: (() => void)[] = [];
afterEach(async () => {
  expect(gate?.violations ?? []).toEqual([]);
  await gate?.close();
  gate = undefined;
  for (const cleanup of cleanups.splice(0)) cleanup();
});

const textOf = (read: { contents: unknown[] }): unknown => (read.contents[0] as { text?: unknown }).text;

describe('resources of several servers behind one endpoint (issue 32)', () => {
  it('lists a prefixed server’s URIs under taskgate:{server}/, reads each back as the server’s own, and two servers listing one URI no longer collide', async () => {
    const a = asked();
    const b = asked();
    const g = (gate = await inProcessAggregate([
      { name: 'a', server: resourceServer('a', a) },
      { name: 'b', server: resourceServer('b', b) },
    ]));
    const { resources } = await g.client.listResources();
    expect(resources.map((resource) => resource.uri)).toEqual([
      `taskgate:a/${SAME}`,
      `taskgate:a/${ODD}`,
      `taskgate:b/${SAME}`,
      `taskgate:b/${ODD}`,
    ]);
    for (const server of ['a', 'b']) {
      const read = await g.client.readResource({ uri: `taskgate:${server}/${SAME}` });
      expect(textOf(read)).toBe(`${server} read`);
      expect(read.contents[0]?.uri).toBe(`taskgate:${server}/${SAME}`);
    }
    expect((await g.client.readResource({ uri: `taskgate:b/${ODD}` })).contents[0]?.uri).toBe(
      `taskgate:b/${ODD}`,
    );
    // A scheme is case-insensitive (RFC 3986): the rule's is too.
    expect(textOf(await g.client.readResource({ uri: `TASKGATE:a/${SAME}` }))).toBe('a read');
    expect(a.read).toEqual([SAME, SAME]);
    expect(b.read).toEqual([SAME, ODD]);

    const { resourceTemplates } = await g.client.listResourceTemplates();
    expect(resourceTemplates.map((template) => template.uriTemplate)).toEqual([
      `taskgate:a/${TEMPLATE}`,
      `taskgate:b/${TEMPLATE}`,
    ]);
    // The client fills in the template it was given; the server gets its own filled in.
    await g.client.readResource({ uri: `taskgate:a/mem://items/7` });
    expect(a.read.at(-1)).toBe('mem://items/7');
    const completed = await g.client.complete({
      ref: { type: 'ref/resource', uri: `taskgate:b/${TEMPLATE}` },
      argument: { name: 'id', value: '' },
    });
    expect(completed.completion.values).toEqual(['b-1']);
    expect(b.completed).toEqual([TEMPLATE]);
  });

  it('subscribes by the URI the client was given, and the server’s resources/updated reaches the client under it', async () => {
    const a = asked();
    const b = asked();
    const g = (gate = await inProcessAggregate([
      { name: 'a', server: resourceServer('a', a) },
      { name: 'b', server: resourceServer('b', b) },
    ]));
    const inbox = g.clientTransport.received;
    await g.client.subscribeResource({ uri: `taskgate:b/${SAME}` });
    expect(b.subscribed).toEqual([SAME]);
    expect(a.subscribed).toEqual([]);
    const updated = await inbox.waitFor(
      (message) => 'method' in message && message.method === 'notifications/resources/updated',
      'notifications/resources/updated',
    );
    expect((updated as { params?: unknown }).params).toEqual({ uri: `taskgate:b/${SAME}` });
    await g.client.unsubscribeResource({ uri: `taskgate:b/${SAME}` });
    expect(b.unsubscribed).toEqual([SAME]);
  });

  it('gives the URIs a tool’s result, a task’s result and a prompt’s messages embed under the rule, and reads them back', async () => {
    const a = asked();
    const g = (gate = await inProcessAggregate([
      { name: 'a', server: resourceServer('a', a) },
      { name: 'b', server: resourceServer('b', asked()) },
    ]));
    const called = await g.client.callTool({ name: 'a__link' });
    const expected = [
      { type: 'text', text: 'a links' },
      { type: 'resource_link', uri: `taskgate:a/${SAME}`, name: 'same' },
      { type: 'resource', resource: { uri: `taskgate:a/${ODD}`, text: 'a embedded' } },
    ];
    expect(called.content).toEqual(expected);

    const created = await g.client.request(
      { method: 'tools/call', params: { name: 'a__link', arguments: {}, task: {} } },
      CreateTaskResultSchema,
    );
    const result = await g.client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema);
    expect(result.content).toEqual(expected);

    const prompt = await g.client.getPrompt({ name: 'a__cite' });
    expect(prompt.messages[0]?.content).toEqual({
      type: 'resource_link',
      uri: `taskgate:a/${SAME}`,
      name: 'same',
    });
    const link = expected[1] as { uri: string };
    expect(textOf(await g.client.readResource({ uri: link.uri }))).toBe('a read');
    expect(a.read).toEqual([SAME]);
  });

  it('reads back the resource links and the embedded resource server-everything’s tools give', async () => {
    const everything = createServer();
    cleanups.push(() => everything.cleanup(undefined));
    const g = (gate = await inProcessAggregate([
      { name: 'a', server: resourceServer('a', asked()) },
      { name: 'everything', server: everything.server.server },
    ]));
    const linked = await g.client.callTool({
      name: 'everything__get-resource-links',
      arguments: { count: 2 },
    });
    const links = (linked.content as { type: string; uri?: string }[]).filter(
      (block) => block.type === 'resource_link',
    );
    expect(links).toHaveLength(2);
    for (const { uri } of links) {
      expect(uri).toMatch(/^taskgate:everything\/demo:\/\//);
      expect((await g.client.readResource({ uri: uri! })).contents[0]?.uri).toBe(uri);
    }
    const referenced = await g.client.callTool({
      name: 'everything__get-resource-reference',
      arguments: { resourceType: 'Text', resourceId: 3 },
    });
    const embedded = (
      referenced.content as { type: string; resource?: { uri: string; text?: string } }[]
    ).find((block) => block.type === 'resource')!.resource!;
    expect(embedded.uri).toMatch(/^taskgate:everything\/demo:\/\//);
    expect((await g.client.readResource({ uri: embedded.uri })).contents[0]).toMatchObject({
      uri: embedded.uri,
      text: embedded.text,
    });
  });

  it('keeps the URIs of a server mounted without prefix, beside a prefixed one listing the same', async () => {
    const plain = asked();
    const g = (gate = await inProcessAggregate([
      { name: 'a', server: resourceServer('a', asked()) },
      { name: 'plain', server: resourceServer('plain', plain), prefix: false },
    ]));
    const { resources } = await g.client.listResources();
    expect(resources.map((resource) => resource.uri)).toEqual([
      `taskgate:a/${SAME}`,
      `taskgate:a/${ODD}`,
      SAME,
      ODD,
    ]);
    const read = await g.client.readResource({ uri: SAME });
    expect(textOf(read)).toBe('plain read');
    expect(read.contents[0]?.uri).toBe(SAME);
    const called = await g.client.callTool({ name: 'link' });
    expect((called.content as { uri?: string }[])[1]?.uri).toBe(SAME);
    expect(plain.read).toEqual([SAME]);
  });
});

/**
 * What is in flight between the aggregator and its servers, kept by the correlation engine (issue 28):
 * the client's requests routed to a server, the aggregator's own requests to each, and the servers'
 * requests to the client. Each server here is a real SDK Server straight on the aggregator's channel, with
 * no taskgate Session between them: nothing else renumbers an id, carries a cancellation or answers for a
 * server that went away, so what the test sees is the aggregator's own doing.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  CallToolRequestSchema,
  ElicitRequestSchema,
  ElicitResultSchema,
  SetLevelRequestSchema,
  type CallToolResult,
  type JSONRPCMessage,
  McpError,
  type ServerNotification,
  type ServerRequest,
} from '@modelcontextprotocol/sdk/types.js';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { Aggregator } from '../../src/aggregate/aggregator.js';
import type { MemberSpec } from '../../src/aggregate/member.js';
import { Names, ToolFilter } from '../../src/aggregate/names.js';
import type { Route } from '../../src/transport/channel.js';
import { memoryChannelPair } from '../../src/transport/memory-channel.js';
import { ChannelTransport } from '../helpers/channel-transport.js';
import { CheckedTransport } from '../helpers/checked-transport.js';
import { Inbox } from '../helpers/inbox.js';

/** One call of a server's `slow` tool, waiting for the test to answer it. */
interface Held {
  extra: RequestHandlerExtra<ServerRequest, ServerNotification>;
  answer(result: CallToolResult): void;
}

interface Behind {
  server: Server;
  /** Its `slow` calls as they start. */
  calls: Inbox<Held>;
  /** Its logging/setLevel requests, each held unanswered when the server was made with `holdSetLevel`. */
  setLevels: Inbox<RequestHandlerExtra<ServerRequest, ServerNotification>>;
}

let cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

/** An SDK server with a `slow` tool whose calls the test answers, and logging. */
const serverBehind = (holdSetLevel = false): Behind => {
  const server = new Server(
    { name: 'behind', version: '1.0.0' },
    { capabilities: { tools: {}, logging: {} } },
  );
  const calls = new Inbox<Held>();
  const setLevels = new Inbox<RequestHandlerExtra<ServerRequest, ServerNotification>>();
  const waiting = new Set<() => void>();
  server.setRequestHandler(
    CallToolRequestSchema,
    (_request, extra) =>
      new Promise<CallToolResult>((resolve) => {
        const answer = (result: CallToolResult): void => {
          waiting.delete(release);
          resolve(result);
        };
        const release = (): void => answer({ content: [] });
        waiting.add(release);
        calls.push({ extra, answer });
      }),
  );
  server.setRequestHandler(SetLevelRequestSchema, (_request, extra) => {
    setLevels.push(extra);
    if (!holdSetLevel) return {};
    return new Promise((resolve) => waiting.add(() => resolve({})));
  });
  cleanups.push(async () => {
    for (const release of [...waiting]) release();
    await server.close();
  });
  return { server, calls, setLevels };
};

/** The aggregator with these servers behind it (each under `{name}__`), and an SDK client in front. */
const aggregate = async (
  behind: Record<string, Behind>,
): Promise<{ client: Client; transport: CheckedTransport; routes: (Route | undefined)[] }> => {
  const specs: MemberSpec[] = [];
  for (const [name, { server }] of Object.entries(behind)) {
    const pair = memoryChannelPair();
    // A message about a request says so, as on that request's HTTP stream.
    await server.connect(new ChannelTransport(pair.b, { streams: true }));
    specs.push({
      name,
      prefixed: true,
      filter: new ToolFilter(undefined, undefined),
      channel: pair.a,
      description: name,
      close: () => server.close(),
    });
  }
  const front = memoryChannelPair();
  const aggregator = new Aggregator(front.b.recordRoutes(), specs, {
    names: new Names('__'),
    logger: pino({ level: 'silent' }),
    version: '0.0.0-test',
    closed: () => undefined,
    graceMs: 5_000,
    listChangedWindowMs: 0,
  });
  aggregator.start();
  const transport = new CheckedTransport(new ChannelTransport(front.a));
  const client = new Client(
    { name: 'in-front', version: '1.0.0' },
    { capabilities: { elicitation: { form: {} } } },
  );
  await client.connect(transport);
  cleanups.push(async () => {
    expect(transport.violations).toEqual([]);
    await client.close();
    await aggregator.close();
  });
  return { client, transport, routes: front.b.sentRoutes };
};

/** What a promise settles with, put where a test can wait for it with a bound. */
const settling = <T>(promise: Promise<T>): Inbox<{ value?: T; error?: unknown }> => {
  const settled = new Inbox<{ value?: T; error?: unknown }>();
  promise.then(
    (value) => settled.push({ value }),
    (error: unknown) => settled.push({ error }),
  );
  return settled;
};

/** Settles once the request `extra` is about is cancelled; fails after 10 s. */
const aborted = (extra: { signal: AbortSignal }): Promise<void> =>
  new Promise((resolve, reject) => {
    if (extra.signal.aborted) return resolve();
    const timer = setTimeout(() => reject(new Error('timed out waiting for a cancellation')), 10_000);
    extra.signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });

const isCancellation = (message: JSONRPCMessage): boolean =>
  'method' in message && message.method === 'notifications/cancelled';

describe('the aggregator’s in-flight tables on the correlation engine (issue 28)', () => {
  it('carries the client’s cancellation to the server its call went to, under the id that server got', async () => {
    const a = serverBehind();
    const b = serverBehind();
    const { client } = await aggregate({ a, b });
    const toA = client.callTool({ name: 'a__slow', arguments: {} });
    const stop = new AbortController();
    const toB = client.callTool({ name: 'b__slow', arguments: {} }, undefined, { signal: stop.signal });
    void toB.catch(() => undefined);
    const onA = await a.calls.waitFor(() => true, 'the call on a');
    const onB = await b.calls.waitFor(() => true, 'the call on b');
    stop.abort('not wanted');
    // The SDK server matches a cancellation to its request by the id that request came with.
    await aborted(onB.extra);
    expect(onA.extra.signal.aborted).toBe(false);
    onA.answer({ content: [{ type: 'text', text: 'from a' }] });
    expect((await toA).content).toEqual([{ type: 'text', text: 'from a' }]);
  });

  it('gives each request sent again with an id still in flight an id of its own, answers it under the client’s, and carries its cancellation under its own', async () => {
    const b = serverBehind();
    const { transport, routes } = await aggregate({ b });
    const call = { jsonrpc: '2.0' as const, id: 'again', method: 'tools/call', params: { name: 'b__slow' } };
    const cancel = {
      jsonrpc: '2.0' as const,
      method: 'notifications/cancelled',
      params: { requestId: 'again' },
    };
    for (let sent = 0; sent < 3; sent++) await transport.send(call);
    const held: Held[] = [];
    while (held.length < 3) held.push(await b.calls.waitFor((h) => !held.includes(h), 'a call'));
    const [first, second, third] = held as [Held, Held, Held];
    expect(held.map((h) => h.extra.requestId === 'again')).toEqual([true, false, false]);
    expect(second.extra.requestId).not.toBe(third.extra.requestId);
    // A cancellation finds the first of the requests with its id.
    await transport.send(cancel);
    await aborted(first.extra);
    expect([second, third].map((h) => h.extra.signal.aborted)).toEqual([false, false]);
    // What the server says about it goes with the client's request of that id.
    await second.extra.sendNotification({
      method: 'notifications/message',
      params: { level: 'info', data: 'about the second' },
    });
    const said = await transport.received.waitFor(
      (m) => 'method' in m && m.method === 'notifications/message',
      'the server’s message',
    );
    expect(routes[transport.received.items.indexOf(said)]).toEqual({ relatedTo: 'again' });
    second.answer({ content: [{ type: 'text', text: 'the second' }] });
    const answer = await transport.received.waitFor(
      (m) => 'result' in m && m.id !== 0,
      'the second call’s answer',
    );
    expect(answer).toEqual({
      jsonrpc: '2.0',
      id: 'again',
      result: { content: [{ type: 'text', text: 'the second' }] },
    });
    // The only one left with the id: it is cancelled under the id the server got it with.
    await transport.send(cancel);
    await aborted(third.extra);
  });

  it('settles what waits on a server that went away: the client’s call with why, and the aggregator’s own request', async () => {
    const a = serverBehind();
    const b = serverBehind(true);
    const { client } = await aggregate({ a, b });
    const call = settling(client.callTool({ name: 'b__slow', arguments: {} }));
    // logging/setLevel is asked of every server: its answer waits for each of them.
    const setLevel = settling(client.setLoggingLevel('info'));
    await b.calls.waitFor(() => true, 'the call on b');
    await b.setLevels.waitFor(() => true, 'setLevel on b');
    await a.setLevels.waitFor(() => true, 'setLevel on a');
    await b.server.close();
    const failed = (await call.waitFor(() => true, 'the call’s answer')).error;
    expect(failed).toBeInstanceOf(McpError);
    expect(failed).toMatchObject({ code: -32000, message: expect.stringMatching(/The server "b" is gone/) });
    expect(await setLevel.waitFor(() => true, 'setLevel’s answer')).toEqual({ value: {} });
  });

  it('withdraws from the client what a server asked it, under the aggregator’s id: when the server cancels, and when it goes', async () => {
    const a = serverBehind();
    const b = serverBehind();
    const { client, transport } = await aggregate({ a, b });
    client.setRequestHandler(ElicitRequestSchema, async (_request, extra) => {
      await aborted(extra);
      return { action: 'cancel' };
    });
    const ask = (behind: Behind, message: string, signal?: AbortSignal) =>
      void behind.server
        .request(
          {
            method: 'elicitation/create',
            params: { message, requestedSchema: { type: 'object', properties: {} } },
          },
          ElicitResultSchema,
          signal === undefined ? {} : { signal },
        )
        .catch(() => undefined);
    const asked = (message: string) =>
      transport.received.waitFor(
        (m) => 'method' in m && m.method === 'elicitation/create' && m.params?.message === message,
        `the elicitation ${message}`,
      );
    const withdrawB = new AbortController();
    ask(a, 'from a');
    ask(b, 'from b', withdrawB.signal);
    const fromA = await asked('from a');
    const fromB = await asked('from b');
    const idOf = (message: JSONRPCMessage) => ('id' in message ? message.id : undefined);
    // Both servers number their requests alike: the client sees two ids of the aggregator's.
    expect(idOf(fromA)).not.toBe(idOf(fromB));

    withdrawB.abort('no longer');
    const cancelledB = await transport.received.waitFor(isCancellation, 'b’s withdrawal');
    expect(cancelledB).toMatchObject({ params: { requestId: idOf(fromB) } });

    await a.server.close();
    const cancelledA = await transport.received.waitFor(
      (m) => isCancellation(m) && m !== cancelledB,
      'a’s withdrawal',
    );
    expect(cancelledA).toEqual({
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId: idOf(fromA), reason: 'the server "a" is gone' },
    });
  });
});

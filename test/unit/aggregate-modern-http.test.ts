/**
 * 2026-07-28 clients through the HTTP front in front of several servers (issue 32), in the test's own
 * process: startHttpGateway with `upstreams` of two SDK 1.x servers on real sockets (in-process-http.ts),
 * one without tasks (taskgate augments it) and one with v1 tasks of its own. In front, a pinned SDK v2
 * client (discover, the merged lists, calls, an elicitation as MRTR) and 2026-07-28 requests by hand with
 * the tasks extension declared (modern-raw.ts): a task on each server, read and cancelled by tasks/get and
 * tasks/cancel under its prefixed id; a subscriptions/listen stream fed by two servers.
 */
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { ElicitResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import type { ConfigInput } from '../../src/config/schema.js';
import { fakeServer, subscribableServer, textResult, type FakeTool } from '../helpers/in-process.js';
import { Inbox } from '../helpers/inbox.js';
import { aggregateHttpGateway } from '../helpers/aggregate-http.js';
import { connectModern, type ModernConnection } from '../helpers/modern-client.js';
import { EXTENSION_META, listen, modernRequest, type ModernAnswer } from '../helpers/modern-raw.js';
import { AuthorizationServer } from '../helpers/oauth-server.js';
import { freePort } from '../helpers/ports.js';
import { textOf } from '../helpers/tool-results.js';

const closing: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

const echoOf = (server: string): FakeTool => ({
  name: 'echo',
  run: (args) => textResult(`${server}: ${String(args.text)}`),
});

/** Works until its call is cancelled (or 60 s). */
const waitOf = (server: string): FakeTool => ({
  name: 'wait',
  run: async (_args, extra) => {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 60_000);
      extra.signal.addEventListener('abort', () => {
        clearTimeout(timer);
        resolve();
      });
    });
    return textResult(`${server} waited`);
  },
});

const asking: FakeTool = {
  name: 'ask',
  run: async (_args, extra) => {
    const answer = await extra.sendRequest(
      {
        method: 'elicitation/create',
        params: { message: 'go on?', requestedSchema: { type: 'object', properties: {} } },
      },
      ElicitResultSchema,
    );
    return textResult(`told ${answer.action}`);
  },
};

const ALICE = { token: 'alice-token-0123456789', subject: 'alice' };
const BOB = { token: 'bob-token-0123456789ab', subject: 'bob' };
const as = (caller: { token: string }) => ({ authorization: `Bearer ${caller.token}` });

/**
 * The gateway in front of `plain` (no tasks) and `native` (v1 tasks of its own), each over HTTP, on
 * `listen`; `auth`: how it knows callers (none: callers are not identified).
 */
function gateway(auth: ConfigInput['auth'] = {}, listen = '127.0.0.1:0'): Promise<URL> {
  const servers = {
    plain: () => fakeServer([echoOf('plain'), asking, waitOf('plain')]).server,
    native: () =>
      fakeServer([
        { ...echoOf('native'), taskSupport: 'optional' },
        { ...waitOf('native'), taskSupport: 'optional' },
      ]).server,
  };
  return aggregateHttpGateway(closing, servers, { auth, listen });
}

async function connected(url: URL, asked: string[] = []): Promise<ModernConnection> {
  const connection = await connectModern(
    { url },
    {
      onElicit: (params) => {
        asked.push(params.message);
        return { action: 'accept', content: {} };
      },
    },
  );
  closing.push(() => connection.close());
  return connection;
}

/** tasks/get until the task is terminal (bounded), as the requester polls. */
async function settled(url: URL, taskId: string): Promise<Record<string, unknown>> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const got = resultOf(await modernRequest(url, 'tasks/get', { taskId }));
    if (['completed', 'failed', 'cancelled'].includes(String(got.status))) return got;
    if (Date.now() > deadline) throw new Error(`task ${taskId} still ${String(got.status)}`);
    await new Promise((resolve) => setTimeout(resolve, Number(got.pollIntervalMs ?? 50)));
  }
}

function resultOf(answer: ModernAnswer): Record<string, unknown> {
  if (answer.result === undefined) throw new Error(`an error: ${JSON.stringify(answer.error)}`);
  return answer.result;
}

describe('2026-07-28 clients through the HTTP front in front of several servers (issue 32)', () => {
  it('discovers taskgate with the servers’ capabilities, lists their tools with prefixes and calls each', async () => {
    const url = await gateway();
    const { client } = await connected(url);
    expect(client.getProtocolEra()).toBe('modern');
    expect(client.getServerVersion()).toMatchObject({ name: 'taskgate' });
    expect(client.getServerCapabilities()).toMatchObject({
      tools: {},
      extensions: { 'io.modelcontextprotocol/tasks': {} },
    });
    const names = (await client.listTools()).tools.map((tool) => tool.name);
    expect(names.sort()).toEqual([
      'native__echo',
      'native__wait',
      'plain__ask',
      'plain__echo',
      'plain__wait',
    ]);
    expect(textOf(await client.callTool({ name: 'plain__echo', arguments: { text: 'a' } }))).toBe('plain: a');
    expect(textOf(await client.callTool({ name: 'native__echo', arguments: { text: 'b' } }))).toBe(
      'native: b',
    );
  });

  it('puts a server’s elicitation to the caller whose call raised it, as MRTR', async () => {
    const url = await gateway();
    const asked: string[] = [];
    const { client } = await connected(url, asked);
    expect(textOf(await client.callTool({ name: 'plain__ask', arguments: {} }))).toBe('told accept');
    expect(asked).toEqual(['go on?']);
  });

  it('runs a task on each server for a client with the tasks extension, read and cancelled by its prefixed id', async () => {
    const url = await gateway();
    for (const server of ['plain', 'native']) {
      const created = resultOf(
        await modernRequest(url, 'tools/call', { name: `${server}__echo`, arguments: { text: 't' } }),
      );
      expect(created).toMatchObject({ resultType: 'task', status: 'working' });
      const taskId = String(created.taskId);
      expect(taskId.startsWith(`${server}__`)).toBe(true);
      const done = await settled(url, taskId);
      expect(done).toMatchObject({ status: 'completed', result: { content: [{ text: `${server}: t` }] } });

      const waiting = resultOf(
        await modernRequest(url, 'tools/call', { name: `${server}__wait`, arguments: {} }),
      );
      expect(waiting.resultType).toBe('task');
      resultOf(await modernRequest(url, 'tasks/cancel', { taskId: waiting.taskId }));
      expect(await settled(url, String(waiting.taskId))).toMatchObject({ status: 'cancelled' });
    }
  });

  it('carries a subscriptions/listen stream through two servers: each one’s resources/updated and list changes on it, each subscribed by its own URI while the stream is open', async () => {
    const asked = new Inbox<string>();
    const made: Record<string, Server[]> = { a: [], b: [] };
    const serverOf = (name: string) => () => {
      const server = subscribableServer(name, asked);
      made[name]!.push(server);
      return server;
    };
    const url = await aggregateHttpGateway(closing, { a: serverOf('a'), b: serverOf('b') });
    const uris = ['taskgate:a/mem://doc', 'taskgate:b/mem://doc'];
    const stream = await listen(url, {
      resourceSubscriptions: uris,
      toolsListChanged: true,
      resourcesListChanged: true,
    });
    closing.push(async () => stream.close());
    const acknowledged = await stream.until(
      (message) => message.method === 'notifications/subscriptions/acknowledged',
    );
    expect(acknowledged.params?.notifications).toEqual({
      toolsListChanged: true,
      resourcesListChanged: true,
      resourceSubscriptions: uris,
    });
    for (const name of ['a', 'b']) {
      await asked.waitFor((seen) => seen === `${name} subscribe mem://doc`, `${name}'s subscribe`);
      // This caller's own server (one per server of upstreams for it).
      expect(made[name]).toHaveLength(1);
      await made[name]![0]!.sendResourceUpdated({ uri: 'mem://doc' });
      await stream.until(
        (message) =>
          message.method === 'notifications/resources/updated' &&
          message.params?.uri === `taskgate:${name}/mem://doc`,
      );
    }
    await made.a![0]!.sendToolListChanged();
    await made.b![0]!.sendResourceListChanged();
    await stream.until((message) => message.method === 'notifications/tools/list_changed');
    await stream.until((message) => message.method === 'notifications/resources/list_changed');

    stream.close();
    for (const name of ['a', 'b']) {
      await asked.waitFor((seen) => seen === `${name} unsubscribe mem://doc`, `${name}'s unsubscribe`);
    }
  });

  it('binds each caller’s servers to that caller: another caller’s task is not found, on either server', async () => {
    const url = await gateway({ tokens: [ALICE, BOB] });
    const call = (caller: typeof ALICE, method: string, params: Record<string, unknown>) =>
      modernRequest(url, method, params, EXTENSION_META, as(caller));
    for (const server of ['plain', 'native']) {
      const created = resultOf(await call(ALICE, 'tools/call', { name: `${server}__wait`, arguments: {} }));
      const taskId = String(created.taskId);
      expect(resultOf(await call(ALICE, 'tasks/get', { taskId })).status).toBe('working');
      const refused = await call(BOB, 'tasks/get', { taskId });
      expect(refused.error?.code, server).toBe(-32602);
      resultOf(await call(ALICE, 'tasks/cancel', { taskId }));
    }
  });

  it('serves a later token of a caller with fewer rights by its own rights, not by the first token’s', async () => {
    const as = await AuthorizationServer.start(['mcp:tools', 'mcp:admin']);
    closing.push(() => as.close());
    const port = await freePort();
    const resource = `http://127.0.0.1:${port}/mcp`;
    const url = await gateway(
      {
        oauth: { issuer: as.issuer, resource, scopes: ['mcp:tools'] },
        rules: [
          { scopes: ['mcp:tools'], tools: { allow: ['*'], deny: ['plain__echo'] } },
          { scopes: ['mcp:admin'], tools: { allow: ['*'] } },
        ],
      },
      `127.0.0.1:${port}`,
    );
    // One client, so one subject: its tokens differ by their scopes only.
    const wide = { authorization: `Bearer ${await as.token(resource, 'mcp:tools mcp:admin')}` };
    const narrow = { authorization: `Bearer ${await as.token(resource, 'mcp:tools')}` };
    const echo = (headers: Record<string, string>) =>
      modernRequest(
        url,
        'tools/call',
        { name: 'plain__echo', arguments: { text: 'a' } },
        EXTENSION_META,
        headers,
      );
    expect(resultOf(await echo(wide)).resultType).toBe('task');
    const refused = await echo(narrow);
    expect(refused.error?.code).toBe(-32602);
    expect(resultOf(await echo(wide)).resultType).toBe('task');
  });
});

/**
 * A 2026-07-28 client through taskgate: the SDK v2 client (pinned and auto, over stdio and over the HTTP
 * gateway) in front of the SDK 1.x fixture, and in front of the SDK v2 fixture (on stdio, and over
 * Streamable HTTP with taskgate a sidecar), which taskgate finds to be modern (server/discover) and speaks
 * 2026-07-28 to. The same calls as test/integration/modern-peers.test.ts makes directly, so each cell of
 * the eras table in the README is a row here. What the HTTP front refuses of a 2026-07-28 request is
 * test/unit/modern-http-refusals.test.ts, in process.
 */
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ElicitRequest } from '@modelcontextprotocol/client';
import { jsonLines } from '../helpers/inbox.js';
import { modernCallCases } from '../helpers/modern-calls.js';
import { connectModern, MODERN_VERSION, type ModernConnection } from '../helpers/modern-client.js';
import { listen } from '../helpers/modern-raw.js';
import { startHttpFixture, type HttpFixture } from '../helpers/http-fixture.js';
import { FIXTURES, Gateway, TASKGATE } from '../helpers/taskgate.js';

const SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';

interface Route {
  name: string;
  /** `sidecar`: the HTTP gateway with `--upstream-url`, in front of the fixture over Streamable HTTP. */
  front: 'stdio' | 'http' | 'sidecar';
  mode: 'pin' | 'auto';
  probe?: 'in-place';
}

const ROUTES: Route[] = [
  { name: 'pinned over stdio (probe on a sibling taskgate)', front: 'stdio', mode: 'pin' },
  { name: 'pinned over stdio, probing in place', front: 'stdio', mode: 'pin', probe: 'in-place' },
  { name: 'auto over stdio', front: 'stdio', mode: 'auto' },
  { name: 'pinned over the HTTP gateway', front: 'http', mode: 'pin' },
  { name: 'auto over the HTTP gateway', front: 'http', mode: 'auto' },
];

const SERVERS = [
  { server: 'the SDK 1.x fixture', fixture: FIXTURES.legacy, serverName: 'legacy-fixture' },
  {
    server: 'the SDK v2 fixture (spoken to in 2026-07-28)',
    fixture: FIXTURES.modern,
    serverName: 'modern-fixture',
  },
];

/** The fixtures' HTTP modes, each behind taskgate as a sidecar (`fixture` names the one to start). */
const HTTP_SERVERS = [
  { server: 'the SDK 1.x fixture over Streamable HTTP', fixture: 'legacy', serverName: 'legacy-fixture' },
  {
    server: 'the SDK v2 fixture over Streamable HTTP (spoken to in 2026-07-28)',
    fixture: 'modern',
    serverName: 'modern-fixture',
  },
] as const;

const SIDECARS = HTTP_SERVERS.flatMap((server) =>
  (['pin', 'auto'] as const).map((mode): Route & { server: string; fixture: string; serverName: string } => ({
    ...server,
    name: `${mode === 'pin' ? 'pinned' : 'auto'} over the HTTP gateway as a sidecar`,
    front: 'sidecar',
    mode,
  })),
);

const CASES = [...SERVERS.flatMap((server) => ROUTES.map((route) => ({ ...server, ...route }))), ...SIDECARS];

describe.each(CASES)('SDK v2 client $name through taskgate to $server', (target) => {
  const elicitations: ElicitRequest['params'][] = [];
  let gateway: Gateway | undefined;
  let http: HttpFixture | undefined;
  let connection: ModernConnection;

  beforeAll(async () => {
    const options = {
      mode: target.mode,
      ...(target.probe && { probe: target.probe }),
      onElicit: (params: ElicitRequest['params']) => {
        elicitations.push(params);
        return { action: 'accept' as const, content: { answer: 'forty-two' } };
      },
    };
    const upstream = [process.execPath, target.fixture];
    if (target.front === 'sidecar') {
      http = await startHttpFixture(target.fixture as 'legacy' | 'modern');
      gateway = await Gateway.start([], ['--upstream-url', http.url]);
      connection = await connectModern({ url: gateway.url }, options);
    } else if (target.front === 'http') {
      gateway = await Gateway.start(upstream);
      connection = await connectModern({ url: gateway.url }, options);
    } else {
      connection = await connectModern({ command: [process.execPath, TASKGATE, '--', ...upstream] }, options);
    }
  });

  afterAll(async () => {
    await connection?.close();
    await gateway?.stop();
    await http?.stop();
  });

  it('speaks 2026-07-28, learnt from the server/discover taskgate answers', () => {
    const { client } = connection;
    expect(client.getProtocolEra()).toBe('modern');
    expect(client.getNegotiatedProtocolVersion()).toBe(MODERN_VERSION);
    expect(client.getDiscoverResult()?.supportedVersions).toEqual([
      '2026-07-28',
      '2025-11-25',
      '2025-06-18',
      '2025-03-26',
    ]);
    expect(client.getServerVersion()).toMatchObject({ name: target.serverName });
    expect(client.getServerCapabilities()).toMatchObject({ tools: {}, resources: {}, prompts: {} });
    expect(client.getServerCapabilities()).not.toHaveProperty('tasks');
  });

  modernCallCases({
    connection: () => connection,
    elicitations,
    serverName: target.serverName,
    label: `${target.server}-${target.front}-${target.mode}-${target.probe ?? 'sibling'}`,
  });

  it('lists tools without execution (not in the 2026-07-28 Tool), and list results carry cache hints', async () => {
    const listed = await connection.client.listTools();
    expect(listed.tools.map((tool) => tool.name)).toEqual(
      expect.arrayContaining(['echo', 'sleep', 'slow', 'progress', 'elicit', 'fail', 'cancelled-calls']),
    );
    for (const tool of listed.tools) expect(tool).not.toHaveProperty('execution');
  });
});

const META = {
  'io.modelcontextprotocol/protocolVersion': MODERN_VERSION,
  'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } },
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
};

interface Answer {
  id: unknown;
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: unknown };
}

describe('a stdio connection is 2025 or 2026-07-28 by its first message', () => {
  it('a modern first request: served statelessly; a 2025 client on the next connection is untouched', async () => {
    const child = spawn(process.execPath, [TASKGATE, '--', process.execPath, FIXTURES.legacy], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const lines = jsonLines<Answer>(child.stdout);
    const send = (message: object) => child.stdin.write(`${JSON.stringify(message)}\n`);
    send({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'echo', arguments: { text: 'a' }, _meta: META },
    });
    const echoed = await lines.waitFor((line) => line.id === 1, 'the echo answer');
    expect(echoed.result).toMatchObject({ resultType: 'complete', content: [{ type: 'text', text: 'a' }] });
    // Issue 27: a malformed response, however its id collides with the client's own request, is never
    // answered; the answers that follow are the next request's, and nothing else.
    child.stdin.write('{"jsonrpc":"2.0","id":1,"result":5}\n');
    send({ jsonrpc: '2.0', id: 2, method: 'initialize', params: { _meta: META } });
    const refused = await lines.waitFor((line) => line.id === 2, 'the initialize answer');
    expect(refused.error).toMatchObject({ code: -32601 });
    expect(lines.items.map((line) => line.id)).toEqual([1, 2]);
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    child.stdin.end();
    expect(await exited).toBe(0);
  });
});

describe('a 2026-07-28 subscriptions/listen stream when taskgate is stopped', () => {
  it('ends with its closing result (subscriptions.mdx "Graceful Closure"), not a cut socket', async () => {
    const gateway = await Gateway.start([process.execPath, FIXTURES.legacy]);
    try {
      const stream = await listen(gateway.url, { toolsListChanged: true });
      const ack = await stream.until(
        (message) => message.method === 'notifications/subscriptions/acknowledged',
      );
      const subscriptionId = (ack.params!._meta as Record<string, unknown>)[SUBSCRIPTION_ID];
      gateway.child.kill('SIGTERM');
      const closing = (await stream.until((message) => 'result' in message, 15_000)) as {
        id?: unknown;
        result?: unknown;
      };
      expect(closing).toEqual({
        jsonrpc: '2.0',
        id: subscriptionId,
        result: { resultType: 'complete', _meta: { [SUBSCRIPTION_ID]: subscriptionId } },
      });
      expect(await gateway.exited).toEqual([0, null]);
    } finally {
      await gateway.stop();
    }
  });
});

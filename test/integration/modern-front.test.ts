/**
 * A 2026-07-28 client through taskgate: the SDK v2 client (pinned and auto, over stdio and over the HTTP
 * gateway) in front of the SDK 1.x fixture, and in front of the SDK v2 fixture (on stdio, and over
 * Streamable HTTP with taskgate a sidecar), which taskgate finds to be modern (server/discover) and speaks
 * 2026-07-28 to. The same calls as test/integration/modern-peers.test.ts makes directly, so each cell of
 * the eras table in the README is a row here. Then what an SDK client never sends: the front's refusals,
 * read off the wire (basic/index.mdx "Per-request protocol fields", streamable-http.mdx "Server
 * Validation", mrtr.mdx "Server Requirements").
 */
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ElicitRequest } from '@modelcontextprotocol/client';
import { jsonLines } from '../helpers/inbox.js';
import { modernCallCases } from '../helpers/modern-calls.js';
import { connectModern, MODERN_VERSION, type ModernConnection } from '../helpers/modern-client.js';
import { listen } from '../helpers/modern-raw.js';
import { post } from '../helpers/raw-http.js';
import { startHttpFixture, type HttpFixture } from '../helpers/http-fixture.js';
import { FIXTURES, Gateway, TASKGATE } from '../helpers/taskgate.js';
import { textOf } from '../helpers/tool-results.js';

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

/** The headers a 2026-07-28 request carries (streamable-http.mdx "Request Metadata"). */
function routing(method: string, name?: string, version = MODERN_VERSION): Record<string, string> {
  return {
    'mcp-protocol-version': version,
    'mcp-method': method,
    ...(name === undefined ? {} : { 'mcp-name': name }),
  };
}

interface Answer {
  id: unknown;
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: unknown };
}

describe('the HTTP front refuses what a 2026-07-28 request must not be, with the request id', () => {
  let gateway: Gateway;

  beforeAll(async () => {
    gateway = await Gateway.start([process.execPath, FIXTURES.legacy]);
  });
  afterAll(() => gateway?.stop());

  const call = (id: number, name: string, meta: object = META) => ({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name, arguments: { text: 'x' }, _meta: meta },
  });

  it('Mcp-Name that differs from the body: 400, -32020', async () => {
    const response = await post(gateway.url, call(11, 'echo'), routing('tools/call', 'other'));
    expect(response.status).toBe(400);
    const answer = (await response.json()) as Answer;
    expect(answer).toMatchObject({ id: 11, error: { code: -32020 } });
    expect(answer.error!.message).toContain("'other'");
  });

  it('a version taskgate does not serve: 400, -32022 with what it supports (header and _meta agree)', async () => {
    const meta = { ...META, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' };
    const response = await post(
      gateway.url,
      call(12, 'echo', meta),
      routing('tools/call', 'echo', '2099-01-01'),
    );
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      jsonrpc: '2.0',
      id: 12,
      error: {
        code: -32022,
        message: 'Unsupported protocol version',
        data: {
          supported: ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26'],
          requested: '2099-01-01',
        },
      },
    });
  });

  it('a missing clientCapabilities: 400, -32602 naming the key', async () => {
    const { 'io.modelcontextprotocol/clientCapabilities': _, ...meta } = META;
    const response = await post(gateway.url, call(13, 'echo', meta), routing('tools/call', 'echo'));
    expect(response.status).toBe(400);
    const answer = (await response.json()) as Answer;
    expect(answer).toMatchObject({ id: 13, error: { code: -32602 } });
    expect(answer.error!.message).toContain('io.modelcontextprotocol/clientCapabilities');
  });

  it('methods 2026-07-28 removed: 404, -32601 that says so', async () => {
    for (const method of ['ping', 'logging/setLevel', 'tasks/result', 'tasks/list']) {
      const body = { jsonrpc: '2.0', id: 14, method, params: { _meta: META, level: 'info', taskId: 't' } };
      const response = await post(gateway.url, body, routing(method));
      expect(response.status, method).toBe(404);
      const answer = (await response.json()) as Answer;
      expect(answer, method).toMatchObject({ id: 14, error: { code: -32601 } });
    }
  });

  it('tasks/get without the tasks extension declared: 400, -32021 with requiredCapabilities', async () => {
    const body = { jsonrpc: '2.0', id: 15, method: 'tasks/get', params: { taskId: 't1', _meta: META } };
    const response = await post(gateway.url, body, routing('tasks/get', 't1'));
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      id: 15,
      error: {
        code: -32021,
        data: { requiredCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } },
      },
    });
  });

  it('GET and DELETE with a 2026-07-28 version: 405, POST allowed', async () => {
    for (const method of ['GET', 'DELETE']) {
      const response = await fetch(gateway.url, {
        method,
        headers: { accept: 'text/event-stream', 'mcp-protocol-version': MODERN_VERSION },
      });
      expect(response.status, method).toBe(405);
      expect(response.headers.get('allow')).toBe('POST');
      await response.body?.cancel();
    }
  });

  it('a requestState is good for one retry of its own request: a second use, or another request, is -32602', async () => {
    const first = (await (
      await post(gateway.url, elicit(21), routing('tools/call', 'elicit'))
    ).json()) as Answer;
    expect(first.result).toMatchObject({ resultType: 'input_required' });
    const { requestState, inputRequests } = first.result as {
      requestState: string;
      inputRequests: Record<string, { method: string }>;
    };
    const [key] = Object.keys(inputRequests);
    expect(inputRequests[key!]!.method).toBe('elicitation/create');
    const answers = { [key!]: { action: 'accept', content: { answer: 'once' } } };
    const retry = (id: number, message = 'who?') =>
      post(
        gateway.url,
        elicit(id, message, { requestState, inputResponses: answers }),
        routing('tools/call', 'elicit'),
      );

    const elsewhere = (await (await retry(22, 'another question')).json()) as Answer;
    expect(elsewhere).toMatchObject({ id: 22, error: { code: -32602 } });
    expect(elsewhere.error!.message).toContain('issued for another request');

    const done = (await (await retry(23)).json()) as Answer;
    expect(JSON.parse(textOf(done.result!))).toEqual({ action: 'accept', content: { answer: 'once' } });

    const again = (await (await retry(24)).json()) as Answer;
    expect(again).toMatchObject({ id: 24, error: { code: -32602 } });
    expect(again.error!.message).toContain('already used');
  });

  it('a tampered requestState is refused, and so is inputResponses without one', async () => {
    const tampered = (await (
      await post(
        gateway.url,
        elicit(31, 'who?', { requestState: 'v1.e30.AAAA', inputResponses: {} }),
        routing('tools/call', 'elicit'),
      )
    ).json()) as Answer;
    expect(tampered).toMatchObject({ id: 31, error: { code: -32602 } });
    const without = (await (
      await post(
        gateway.url,
        elicit(32, 'who?', { inputResponses: { k: {} } }),
        routing('tools/call', 'elicit'),
      )
    ).json()) as Answer;
    expect(without).toMatchObject({ id: 32, error: { code: -32602 } });
    expect(without.error!.message).toContain('without requestState');
  });

  it('input the request did not declare it can give: 400, -32021 naming it, and the call is given up upstream', async () => {
    const meta = { ...META, 'io.modelcontextprotocol/clientCapabilities': {} };
    const response = await post(gateway.url, elicit(41, 'who?', {}, meta), routing('tools/call', 'elicit'));
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      id: 41,
      error: { code: -32021, data: { requiredCapabilities: { elicitation: { form: {} } } } },
    });
  });

  function elicit(id: number, message = 'who?', extra: object = {}, meta: object = META) {
    return {
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name: 'elicit', arguments: { message }, _meta: meta, ...extra },
    };
  }
});

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

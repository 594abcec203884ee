/**
 * The Streamable HTTP front on real sockets: the status of each misuse, limits, many sessions at once,
 * tasks outliving their session, and SSE resumption after a dropped stream. The tests that need no flag
 * of their own share one gateway: each opens sessions of its own on it.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ACCEPT_BOTH, openSession, post } from '../helpers/raw-http.js';
import { FIXTURES, Gateway, INITIALIZE, TASK_AWARE } from '../helpers/taskgate.js';

const LEGACY = [process.execPath, FIXTURES.legacy];
/** A legacy server on raw stdio with an `echo` tool, without the SDK to load: quick to start many of. */
const RAW_ECHO = [process.execPath, fileURLToPath(new URL('../fixtures/flood-server.js', import.meta.url))];

let gateways: Gateway[] = [];
afterEach(async () => {
  await Promise.all(gateways.map((gateway) => gateway.stop()));
  gateways = [];
});

const start = async (flags: string[] = [], upstream = LEGACY): Promise<Gateway> => {
  const gateway = await Gateway.start(upstream, flags);
  gateways.push(gateway);
  return gateway;
};

/** The gateway with no flags of its own, for every test that needs none. */
let shared: Gateway;
beforeAll(async () => {
  shared = await Gateway.start(LEGACY);
});
afterAll(() => shared?.stop());

async function sdkClient(url: URL): Promise<Client> {
  const client = new Client({ name: 'http-test', version: '1' }, { capabilities: TASK_AWARE });
  await client.connect(new StreamableHTTPClientTransport(url));
  return client;
}

describe('misuse gets the right status and a JSON-RPC error that says why', () => {
  it.each([
    ['no Accept for SSE', 406, { accept: 'application/json' }, INITIALIZE],
    ['a wrong Content-Type', 415, { 'content-type': 'text/plain' }, INITIALIZE],
    ['a body that is not JSON', 400, {}, '{"jsonrpc":'],
    ['a request without a session', 400, {}, { jsonrpc: '2.0', id: 1, method: 'tools/list' }],
    [
      'an unknown session',
      404,
      { 'mcp-session-id': 'nope' },
      { jsonrpc: '2.0', id: 1, method: 'tools/list' },
    ],
    ['an unsupported protocol version', 400, { 'mcp-protocol-version': '1999-01-01' }, INITIALIZE],
    ['a foreign Origin', 403, { origin: 'https://evil.example' }, INITIALIZE],
  ])('POST with %s → %i', async (_what, status, headers, body) => {
    const { url } = shared;
    const response = await post(url, body, headers as Record<string, string>);
    expect(response.status).toBe(status);
    const payload = (await response.json()) as { jsonrpc: string; error: { message: string } };
    expect(payload.jsonrpc).toBe('2.0');
    expect(payload.error.message.length).toBeGreaterThan(10);
  });

  it('refuses a rebound Host name (DNS rebinding) with 403', async () => {
    const { url } = shared;
    const { request } = await import('node:http');
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(
        url,
        { method: 'GET', headers: { host: 'evil.example', accept: 'text/event-stream' } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(status).toBe(403);
  });

  it('GET without a session → 400, without Accept text/event-stream → 406; PUT → 405', async () => {
    const { url } = shared;
    expect((await fetch(url, { headers: { accept: 'text/event-stream' } })).status).toBe(400);
    const sessionId = await openSession(url);
    expect(
      (await fetch(url, { headers: { accept: 'application/json', 'mcp-session-id': sessionId } })).status,
    ).toBe(406);
    const put = await fetch(url, { method: 'PUT' });
    expect(put.status).toBe(405);
    expect(put.headers.get('allow')).toContain('POST');
  });

  it('a body over --max-message-bytes → 413', async () => {
    const { url } = await start(['--max-message-bytes', '65536']);
    const sessionId = await openSession(url);
    const big = {
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: 'echo', arguments: { text: 'x'.repeat(70_000) } },
    };
    expect((await post(url, big, { 'mcp-session-id': sessionId })).status).toBe(413);
  });

  it('more sessions than --max-sessions → 503; DELETE ends a session (then 404)', async () => {
    const { url } = await start(['--max-sessions', '1']);
    const sessionId = await openSession(url);
    expect((await post(url, INITIALIZE)).status).toBe(503);
    expect((await fetch(url, { method: 'DELETE', headers: { 'mcp-session-id': sessionId } })).status).toBe(
      200,
    );
    const after = await post(
      url,
      { jsonrpc: '2.0', id: 3, method: 'tools/list' },
      { 'mcp-session-id': sessionId },
    );
    expect(after.status).toBe(404);
    expect((await post(url, INITIALIZE)).status).toBe(200);
  });

  it('answers /healthz and /readyz', async () => {
    const { url } = shared;
    expect((await fetch(new URL('/healthz', url))).status).toBe(200);
    expect((await fetch(new URL('/readyz', url))).status).toBe(200);
  });
});

describe('sessions and tasks', () => {
  it(
    'serves 50 concurrent sessions, each running tasks (each session starts its own upstream)',
    { timeout: 120_000 },
    async () => {
      const { url } = await start(['--max-sessions', '60'], RAW_ECHO);
      const clients = await Promise.all(Array.from({ length: 50 }, () => sdkClient(url)));
      try {
        const results = await Promise.all(
          clients.map(async (client, i) => {
            const { task } = await client.request(
              {
                method: 'tools/call',
                params: { name: 'echo', arguments: { text: `session ${i}` }, task: {} },
              },
              CreateTaskResultSchema,
            );
            return client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
          }),
        );
        results.forEach((result, i) =>
          expect(result.content).toEqual([{ type: 'text', text: `session ${i}` }]),
        );
      } finally {
        await Promise.all(clients.map((client) => client.close()));
      }
    },
  );

  it.each([
    ['drops its connection', false],
    ['ends its session with DELETE', true],
  ])('a client that %s mid-task gets the result from a new session', async (_what, terminate) => {
    const { url } = shared;
    const first = await sdkClient(url);
    const { task } = await first.request(
      { method: 'tools/call', params: { name: 'sleep', arguments: { ms: 500 }, task: {} } },
      CreateTaskResultSchema,
    );
    if (terminate) await (first.transport as StreamableHTTPClientTransport).terminateSession();
    await first.close();
    const second = await sdkClient(url);
    try {
      const result = await second.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
      expect(result.content).toEqual([{ type: 'text', text: 'slept 500 ms' }]);
      expect((await second.experimental.tasks.getTask(task.taskId)).status).toBe('completed');
    } finally {
      await second.close();
    }
  });
});

describe('resumable SSE', () => {
  it('replays what a dropped stream missed, exactly once, after Last-Event-ID', async () => {
    const { url } = shared;
    const sessionId = await openSession(url);
    const headers = { 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' };
    const controller = new AbortController();
    const response = await fetch(url, {
      method: 'POST',
      headers: { accept: ACCEPT_BOTH, 'content-type': 'application/json', ...headers },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 'p',
        method: 'tools/call',
        params: {
          name: 'progress',
          arguments: { steps: 5, intervalMs: 100 },
          _meta: { progressToken: 'tok' },
        },
      }),
      signal: controller.signal,
    });
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const reader = response.body!.getReader();
    let text = '';
    while (!/id: (\S+)\n/.test(text)) text += new TextDecoder().decode((await reader.read()).value);
    const firstId = /id: (\S+)\n/.exec(text)![1]!;
    controller.abort();

    const resumed = await fetch(url, {
      headers: { accept: 'text/event-stream', 'last-event-id': firstId, ...headers },
    });
    expect(resumed.status).toBe(200);
    const replay = await resumed.text();
    const messages = [...replay.matchAll(/^data: (.*)$/gm)].map(
      (match) => JSON.parse(match[1]!) as { id?: string; method?: string; params: { progress: number } },
    );
    const progress = messages
      .filter((m) => m.method === 'notifications/progress')
      .map((m) => m.params.progress);
    expect(progress).toEqual([2, 3, 4, 5]);
    expect(messages.filter((m) => m.id === 'p')).toHaveLength(1);
    expect(messages.at(-1)).toMatchObject({ id: 'p', result: { content: [{ text: 'done 5 steps' }] } });
  });
});

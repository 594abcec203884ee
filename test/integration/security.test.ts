/**
 * Tasks bound to identity on the HTTP front (spec: Security Considerations, Task Isolation and Access
 * Control), per-caller limits, 401 before any MCP processing, and the audit log, as the HTTP front's tokens
 * carry them. The binding, the limits and the audit log in full run on the core in process, in
 * test/unit/in-process-security.test.ts.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { McpError } from '@modelcontextprotocol/sdk/types.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { startHttpFixture, type HttpFixture } from '../helpers/http-fixture.js';
import { EXTENSION_META, modernRequest } from '../helpers/modern-raw.js';
import { sample } from '../helpers/prometheus.js';
import { httpTransport } from '../helpers/http-client.js';
import { FIXTURES, Gateway, TASK_AWARE } from '../helpers/taskgate.js';
import { thrownBy } from '../helpers/thrown.js';

const TOKEN_A = 'token-of-alice-0123456789';
const TOKEN_B = 'token-of-bob-0123456789ab';

let gateway: Gateway | undefined;
const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
  await gateway?.stop();
  gateway = undefined;
});

function configFile(yaml: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'taskgate-security-')), 'config.yaml');
  writeFileSync(path, yaml);
  return path;
}

async function start(extra = ''): Promise<Gateway> {
  // No task these tests leave running needs to finish: taskgate stops at once.
  const config = configFile(
    `shutdownGrace: 0\nauth:\n  tokens:\n    - { token: ${TOKEN_A}, subject: alice }\n    - { token: ${TOKEN_B}, subject: bob }\n${extra}`,
  );
  gateway = await Gateway.start(
    [process.execPath, FIXTURES.legacy],
    ['--config', config, '--log-level', 'info'],
  );
  return gateway;
}

async function clientWith(token: string): Promise<Client> {
  const client = new Client({ name: 'security-test', version: '1' }, { capabilities: TASK_AWARE });
  await client.connect(
    httpTransport(gateway!.url, { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
  );
  clients.push(client);
  return client;
}

const refusal = async (promise: Promise<unknown>): Promise<McpError> => (await thrownBy(promise)) as McpError;

describe('identity and binding', () => {
  it('binds a task to its token’s subject: another gets the unknown-task answer and lists none; the audit log names both, never a token or an argument', async () => {
    await start();
    const alice = await clientWith(TOKEN_A);
    const bob = await clientWith(TOKEN_B);
    expect(alice.getServerCapabilities()?.tasks?.list).toEqual({});

    const { task } = await alice.request(
      {
        method: 'tools/call',
        params: { name: 'echo', arguments: { text: 'secret-argument-text' }, task: {} },
      },
      CreateTaskResultSchema,
    );
    const unknown = await refusal(bob.experimental.tasks.getTask('00000000-0000-4000-8000-000000000000'));
    const error = await refusal(bob.experimental.tasks.getTask(task.taskId));
    expect(error.code).toBe(-32602);
    expect(error.message.replace(task.taskId, 'ID')).toBe(
      unknown.message.replace('00000000-0000-4000-8000-000000000000', 'ID'),
    );
    expect((await bob.experimental.tasks.listTasks()).tasks).toEqual([]);
    expect((await alice.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)).toEqual([task.taskId]);
    const result = await alice.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.content).toEqual([{ type: 'text', text: 'secret-argument-text' }]);

    const audit = gateway!.stderr
      .split('\n')
      .filter((line) => line.includes('"name":"audit"'))
      .map((line) => JSON.parse(line) as { event: string; subject?: string; taskId?: string });
    const events = audit
      .filter((line) => line.taskId === task.taskId)
      .map((line) => `${line.event}:${line.subject ?? ''}`);
    expect(events).toEqual(
      expect.arrayContaining(['task.created:alice', 'task.status:', 'task.result:alice', 'task.denied:bob']),
    );
    expect(gateway!.stderr).not.toContain(TOKEN_A);
    expect(gateway!.stderr).not.toContain(TOKEN_B);
    // The argument is the task's result, which the log must not carry either.
    expect(gateway!.stderr).not.toContain('secret-argument-text');
  });

  it('answers a missing or wrong token with 401 and WWW-Authenticate, before any MCP processing', async () => {
    const { url } = await start();
    for (const headers of [{}, { authorization: 'Bearer not-a-known-token-at-all' }]) {
      const response = await fetch(url, {
        method: 'POST',
        headers: {
          accept: 'application/json, text/event-stream',
          'content-type': 'application/json',
          ...headers,
        },
        body: 'not even JSON',
      });
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toMatch(/^Bearer realm="taskgate"/);
    }
  });

  it('does not let another identity use a session: its id alone is not enough', async () => {
    const { url } = await start();
    const alice = await clientWith(TOKEN_A);
    const sessionId = (alice.transport as StreamableHTTPClientTransport).sessionId!;
    const response = await fetch(url, {
      method: 'POST',
      headers: {
        accept: 'application/json, text/event-stream',
        'content-type': 'application/json',
        authorization: `Bearer ${TOKEN_B}`,
        'mcp-session-id': sessionId,
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(response.status).toBe(404);
  });
});

describe('bearer pass-through', () => {
  let upstream: HttpFixture | undefined;
  afterEach(async () => {
    await upstream?.stop();
    upstream = undefined;
  });

  it('binds tasks to the caller’s own token and sends that token to the HTTP upstream', async () => {
    upstream = await startHttpFixture('legacy', { env: { FIXTURE_REQUIRE_BEARER: TOKEN_A } });
    const config = configFile(
      `auth:\n  bearerPassthrough: { secret: a-secret-of-at-least-16 }\nupstream:\n  url: ${upstream.url}\n  headers: { Authorization: Bearer configured-token-loses }\n`,
    );
    gateway = await Gateway.start([], ['--config', config, '--log-level', 'info']);

    const alice = await clientWith(TOKEN_A);
    const plain = await alice.callTool(
      { name: 'echo', arguments: { text: 'through' } },
      CallToolResultSchema,
    );
    expect(plain.content).toEqual([{ type: 'text', text: 'through' }]);
    // taskgate's own calls for the task go upstream with the same token.
    const { task } = await alice.request(
      { method: 'tools/call', params: { name: 'echo', arguments: { text: 'as a task' }, task: {} } },
      CreateTaskResultSchema,
    );
    const result = await alice.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.content).toEqual([{ type: 'text', text: 'as a task' }]);

    // Bob's token gets him past taskgate, but not past the upstream, which wants Alice's.
    await expect(clientWith(TOKEN_B)).rejects.toThrow(/Unauthorized/);
    expect(gateway.stderr).not.toContain(TOKEN_A);
    // Any token gets past the front, so the operator's pages are not served there.
    const metrics = await fetch(new URL('/metrics', gateway.url), {
      headers: { authorization: `Bearer ${TOKEN_B}` },
    });
    expect(metrics.status).toBe(404);
  });

  it('warns at start-up when those tokens would cross the network in clear text', async () => {
    const config = configFile(
      // A documentation address (TEST-NET-1): nothing is sent before a client opens a session.
      `auth:\n  bearerPassthrough: { secret: a-secret-of-at-least-16 }\nupstream:\n  url: http://192.0.2.1:8080/mcp\n`,
    );
    gateway = await Gateway.start([], ['--config', config]);
    await gateway.logged("sends callers' tokens to the upstream server over plain HTTP");
  });
});

describe('limits', () => {
  it('counts 2026-07-28 callers one by one, not as the one bridge they share: live tasks and the tasks/get rate', async () => {
    await start('limits:\n  maxLiveTasks: 2\n  taskRequestRate: 1\n  taskRequestBurst: 3\n');
    const as = (token: string) => ({ authorization: `Bearer ${token}` });
    const create = (token: string) =>
      modernRequest(
        gateway!.url,
        'tools/call',
        { name: 'sleep', arguments: { ms: 5_000 } },
        EXTENSION_META,
        as(token),
      );
    const first = await create(TOKEN_A);
    expect(first.result).toMatchObject({ resultType: 'task' });
    await create(TOKEN_A);
    expect((await create(TOKEN_A)).error).toMatchObject({
      code: -31001,
      message: expect.stringMatching(/limits\.maxLiveTasks/),
    });
    expect((await create(TOKEN_B)).result).toMatchObject({ resultType: 'task', status: 'working' });

    // -32001 on a 2025 session: 2026-07-28 moves taskgate's own codes out of the range it reserves.
    const taskId = String(first.result!.taskId);
    const answers = [];
    for (let i = 0; i < 4; i++)
      answers.push(await modernRequest(gateway!.url, 'tasks/get', { taskId }, EXTENSION_META, as(TOKEN_A)));
    expect(answers.slice(0, 3).map((answer) => answer.result?.status)).toEqual([
      'working',
      'working',
      'working',
    ]);
    expect(answers[3]!.error).toMatchObject({
      code: -31001,
      message: expect.stringMatching(/limits\.taskRequestRate/),
    });
    // Bob's bucket is his own; his unknown-task answer is the usual one.
    expect(
      (await modernRequest(gateway!.url, 'tasks/get', { taskId }, EXTENSION_META, as(TOKEN_B))).error,
    ).toMatchObject({ code: -32602 });
  });

  it('counts the denied lookups of each subject on /metrics, for the operator, and logs the limit hit', async () => {
    await start('  adminSubjects: [alice]\nlimits:\n  taskRequestRate: 1\n  taskRequestBurst: 3\n');
    const bob = await clientWith(TOKEN_B);
    const codes = [];
    for (let i = 0; i < 5; i++)
      codes.push((await refusal(bob.experimental.tasks.getTask(crypto.randomUUID()))).code);
    expect(codes).toEqual([-32602, -32602, -32602, -32001, -32001]);
    await gateway!.logged('"event":"limit.hit"');
    // Read by the operator: bob may not see what is counted against him.
    const forBob = await fetch(new URL('/metrics', gateway!.url), {
      headers: { authorization: `Bearer ${TOKEN_B}` },
    });
    expect(forBob.status).toBe(403);
    const metrics = await fetch(new URL('/metrics', gateway!.url), {
      headers: { authorization: `Bearer ${TOKEN_A}` },
    });
    expect(sample(await metrics.text(), 'taskgate_task_lookups_denied_total', { subject: 'bob' })).toBe(3);
  });
});

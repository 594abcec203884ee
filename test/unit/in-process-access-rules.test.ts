/**
 * auth.rules (issue 31 "Authorization rules") in process, for both eras on one task store as the HTTP
 * gateway has them: a 2025 client on a session of its own, 2026-07-28 requests through the one bridge. Each
 * caller has the rights the rules give it, by subject or by its OAuth token's groups and scopes, as the
 * front works them out. What only HTTP shows (the pages' 403, real tokens) is in test/integration/oauth.test.ts.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema, CreateTaskResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import type { ConfigInput } from '../../src/config/schema.js';
import { MemoryTaskStore } from '../../src/tasks/memory-store.js';
import { heldTool, type HeldTool } from '../helpers/held-call.js';
import { MODERN_META } from '../helpers/in-process-bridge.js';
import { callersGateway, type CallersGateway, type Identified } from '../helpers/in-process-callers.js';
import { textResult, type FakeTool } from '../helpers/in-process.js';
import { thrownBy } from '../helpers/thrown.js';

const ISSUER = 'https://auth.example.com';
const oauthCaller = (subject: string, groups: string[], scopes: string[] = []): Identified => ({
  identity: `oauth:${ISSUER}#${subject}`,
  subject,
  grant: { groups, scopes },
});
const ALICE = oauthCaller('alice', ['staff']);
const BOB = oauthCaller('bob', ['staff']);
const OPS = oauthCaller('olga', ['operators']);
const AUDITOR = oauthCaller('audrey', [], ['mcp:audit']);

const RULES: ConfigInput = {
  auth: {
    oauth: { issuer: ISSUER, resource: 'https://mcp.example.com/mcp' },
    rules: [
      { subjects: ['*'], tools: { allow: ['*'], deny: ['admin_*'] }, taskList: true },
      { groups: ['operators'], tools: { allow: ['admin_*'] }, tasks: 'all' },
      { scopes: ['mcp:audit'], tools: { allow: ['admin_*'], deny: ['admin_wipe'] } },
    ],
  },
};

const WITH_TASKS = {
  ...MODERN_META,
  'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
};

interface Answer {
  result?: Record<string, unknown>;
  error?: { code: number; message: string };
}

const echo: FakeTool = { name: 'echo', run: (args) => textResult(String(args.text)) };
const adminReport: FakeTool = { name: 'admin_report', run: () => textResult('report') };
const adminWipe: FakeTool = { name: 'admin_wipe', run: () => textResult('wiped') };

let held: HeldTool;
let gate: CallersGateway | undefined;
afterEach(async () => {
  held?.releaseAll();
  expect(gate?.violations ?? []).toEqual([]);
  await gate?.close();
  gate = undefined;
});

async function open(input: ConfigInput = RULES): Promise<CallersGateway> {
  held = heldTool('held');
  const store = new MemoryTaskStore({ maxTasks: 100, maxResultBytes: 1_000_000 });
  gate = await callersGateway(store, [echo, adminReport, adminWipe, held], input);
  return gate;
}

/** A 2026-07-28 request; with the tasks extension unless `plain`. */
const modern = async (g: CallersGateway, method: string, params: object, as: Identified, plain = false) =>
  (
    (await g.modern(method, { ...params, _meta: plain ? MODERN_META : WITH_TASKS }, as)) as {
      response: Answer;
    }
  ).response;

const refusal = async (promise: Promise<unknown>): Promise<McpError> => {
  const error = await thrownBy(promise);
  expect(error).toBeInstanceOf(McpError);
  return error as McpError;
};

const names = async (client: Client) => (await client.listTools()).tools.map((tool) => tool.name).sort();

async function legacyTask(client: Client): Promise<string> {
  const created = await client.request(
    { method: 'tools/call', params: { name: 'held', arguments: {}, task: {} } },
    CreateTaskResultSchema,
  );
  await held.calls.waitFor(() => held.calls.items.length >= 1, 'the call upstream');
  return created.task.taskId;
}

describe('tools a caller may not call (2025 client)', () => {
  it('are left out of its tools/list and refused as unknown tools; a caller a rule allows them calls them', async () => {
    const g = await open();
    const alice = await g.legacy(ALICE);
    const ops = await g.legacy(OPS);
    const auditor = await g.legacy(AUDITOR);
    expect(await names(alice)).toEqual(['echo', 'held']);
    expect(await names(auditor)).toEqual(['admin_report', 'echo', 'held']);
    expect(await names(ops)).toEqual(['admin_report', 'admin_wipe', 'echo', 'held']);

    const refused = await refusal(alice.callTool({ name: 'admin_wipe', arguments: {} }));
    // The spec's answer for a tool that does not exist: nothing about rules or other callers.
    expect(refused.code).toBe(-32602);
    expect(refused.message).toBe('MCP error -32602: Unknown tool: admin_wipe');
    // Nor as a task.
    const asTask = await refusal(
      alice.request(
        { method: 'tools/call', params: { name: 'admin_wipe', arguments: {}, task: {} } },
        CreateTaskResultSchema,
      ),
    );
    expect(asTask.message).toBe(refused.message);

    expect((await ops.callTool({ name: 'admin_wipe', arguments: {} })).content).toEqual([
      { type: 'text', text: 'wiped' },
    ]);
    expect((await auditor.callTool({ name: 'admin_report', arguments: {} })).content).toEqual([
      { type: 'text', text: 'report' },
    ]);
    await refusal(auditor.callTool({ name: 'admin_wipe', arguments: {} }));
  });

  it('every refusal is an audit line naming the caller and the tool', async () => {
    const g = await open();
    const alice = await g.legacy(ALICE);
    await refusal(alice.callTool({ name: 'admin_wipe', arguments: {} }));
    expect(g.audit.filter((line) => line.event === 'access')).toEqual([
      expect.objectContaining({ right: 'tool', tool: 'admin_wipe', subject: 'alice' }),
    ]);
  });
});

describe('tools a caller may not call (2026-07-28 requests)', () => {
  it('the same outcomes: hidden from tools/list, refused as unknown, allowed to the operator, audited', async () => {
    const g = await open();
    const listed = (answer: Answer) =>
      (answer.result!.tools as { name: string }[]).map((tool) => tool.name).sort();
    expect(listed(await modern(g, 'tools/list', {}, ALICE))).toEqual(['echo', 'held']);
    expect(listed(await modern(g, 'tools/list', {}, OPS))).toEqual([
      'admin_report',
      'admin_wipe',
      'echo',
      'held',
    ]);

    const refused = await modern(g, 'tools/call', { name: 'admin_wipe', arguments: {} }, ALICE);
    expect(refused.error).toEqual({ code: -32602, message: 'Unknown tool: admin_wipe' });
    expect(
      (await modern(g, 'tools/call', { name: 'admin_wipe', arguments: {} }, OPS, true)).result,
    ).toMatchObject({
      content: [{ type: 'text', text: 'wiped' }],
    });
    expect(g.audit.filter((line) => line.event === 'access')).toEqual([
      expect.objectContaining({ right: 'tool', tool: 'admin_wipe', subject: 'alice' }),
    ]);
  });
  it('a hidden tool that runs only as a task is refused as unknown too, not as needing the extension', async () => {
    const g = await open({ ...RULES, tools: [{ match: 'admin_*', taskSupport: 'required' }] });
    expect((await modern(g, 'tools/call', { name: 'admin_wipe', arguments: {} }, ALICE, true)).error).toEqual(
      {
        code: -32602,
        message: 'Unknown tool: admin_wipe',
      },
    );
    expect(
      (await modern(g, 'tools/call', { name: 'admin_wipe', arguments: {} }, OPS, true)).error?.message,
    ).toMatch(/runs only as a task/);
  });
});

describe('tasks of other callers', () => {
  it("an operator reads and cancels another's task in either era; anyone else gets the unknown-task answer", async () => {
    const g = await open();
    const alice = await g.legacy(ALICE);
    const taskId = await legacyTask(alice);

    const bob = await g.legacy(BOB);
    const unknownId = '00000000-0000-4000-8000-000000000000';
    const unknown = await refusal(bob.experimental.tasks.getTask(unknownId));
    const refused = await refusal(bob.experimental.tasks.getTask(taskId));
    expect(refused.code).toBe(-32602);
    expect(refused.message.replace(taskId, 'ID')).toBe(unknown.message.replace(unknownId, 'ID'));
    expect((await modern(g, 'tasks/get', { taskId }, BOB)).error).toMatchObject({ code: -32602 });

    const ops = await g.legacy(OPS);
    expect((await ops.experimental.tasks.getTask(taskId)).status).toBe('working');
    expect((await modern(g, 'tasks/get', { taskId }, OPS)).result).toMatchObject({ status: 'working' });
    expect((await ops.experimental.tasks.cancelTask(taskId)).status).toBe('cancelled');
    expect((await alice.experimental.tasks.getTask(taskId)).status).toBe('cancelled');
    expect(g.audit.filter((line) => line.event === 'others')).toEqual([
      expect.objectContaining({ taskId, method: 'tasks/get', subject: 'olga' }),
      expect.objectContaining({ taskId, method: 'tasks/get', subject: 'olga' }),
      expect.objectContaining({ taskId, method: 'tasks/cancel', subject: 'olga' }),
    ]);
  });

  it("an operator's 2026-07-28 requests read a 2026-07-28 caller's task, result included", async () => {
    const g = await open();
    const created = await modern(g, 'tools/call', { name: 'held', arguments: {} }, ALICE);
    const taskId = String(created.result!.taskId);
    await held.calls.waitFor(() => held.calls.items.length >= 1, 'the call upstream');
    expect((await modern(g, 'tasks/get', { taskId }, BOB)).error).toMatchObject({ code: -32602 });
    held.calls.items[0]!.answer(textResult('done'));
    const ops = await g.legacy(OPS);
    expect((await ops.experimental.tasks.getTaskResult(taskId, CallToolResultSchema)).content).toEqual([
      { type: 'text', text: 'done' },
    ]);
    expect((await modern(g, 'tasks/get', { taskId }, OPS)).result).toMatchObject({
      status: 'completed',
      result: { content: [{ type: 'text', text: 'done' }] },
    });
  });
});

describe('tasks/list', () => {
  it('is refused to a caller no rule grants it, and audited; a caller granted it lists its own tasks', async () => {
    const g = await open({
      auth: {
        oauth: { issuer: ISSUER, resource: 'https://mcp.example.com/mcp' },
        rules: [
          { subjects: ['*'], tools: { allow: ['*'] } },
          { groups: ['operators'], taskList: true },
        ],
      },
    });
    const alice = await g.legacy(ALICE);
    // Not offered to a caller who may not use it.
    expect(alice.getServerCapabilities()?.tasks?.list).toBeUndefined();
    const taskId = await legacyTask(alice);
    const refused = await refusal(alice.experimental.tasks.listTasks());
    expect(refused.code).toBe(-32601);
    expect(refused.message).toBe('MCP error -32601: tasks/list is not available to this caller');
    expect(g.audit.filter((line) => line.event === 'access')).toEqual([
      expect.objectContaining({ right: 'tasks/list', subject: 'alice' }),
    ]);
    const ops = await g.legacy(OPS);
    expect(ops.getServerCapabilities()?.tasks?.list).toEqual({});
    expect((await ops.experimental.tasks.listTasks()).tasks).toEqual([]);
    // Alice's task is there, for its creator.
    expect((await alice.experimental.tasks.getTask(taskId)).status).toBe('working');
  });
});

describe('identities of every auth mode', () => {
  it('a static token’s subject is matched by the subjects globs (a trusted header’s subject is the same field)', async () => {
    const g = await open({
      auth: {
        tokens: [{ token: 'a-token-of-16-chars-or-more', subject: 'ci-bot' }],
        rules: [{ subjects: ['ci-*'], tools: { allow: ['echo'] } }],
      },
    });
    const bot = await g.legacy({ identity: 'token:ci-bot', subject: 'ci-bot' });
    const other = await g.legacy({ identity: 'token:dev', subject: 'dev' });
    expect(await names(bot)).toEqual(['echo']);
    expect(await names(other)).toEqual([]);
    await refusal(other.callTool({ name: 'echo', arguments: { text: 'x' } }));
  });
});

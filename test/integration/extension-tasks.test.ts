/**
 * The tasks extension (io.modelcontextprotocol/tasks) through the built CLI, over both fronts, in front of
 * the SDK 1.x legacy fixture (no tasks of its own: taskgate's augment) and in front of the v2 task fixture
 * (a 2026-07-28 server with the extension: its own tasks, through the Session's 2025 face and back): what
 * test/unit/extension-tasks.test.ts checks in-process, here over a real pipe and a real socket, read off
 * the wire as a 2026-07-28 client sends it.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { GetTaskResultV2Schema, CreateTaskResultV2Schema } from '@modelcontextprotocol/ext-tasks/core/v2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonLines } from '../helpers/inbox.js';
import { EXTENSION_META, modernRequest, type ModernAnswer } from '../helpers/modern-raw.js';
import { FIXTURES, Gateway, TASKGATE } from '../helpers/taskgate.js';

type Answer = ModernAnswer;

const META = EXTENSION_META;

/** Sends one 2026-07-28 request and resolves with its answer. */
type Ask = (method: string, params: Record<string, unknown>, meta?: object) => Promise<Answer>;

interface Front {
  ask: Ask;
  stop(): Promise<void>;
}

let nextId = 1;

async function stdioFront(fixture: string): Promise<Front> {
  const child: ChildProcessWithoutNullStreams = spawn(
    process.execPath,
    [TASKGATE, '--', process.execPath, fixture],
    { stdio: ['pipe', 'pipe', 'pipe'] },
  );
  const answers = jsonLines<Answer>(child.stdout);
  return {
    ask: (method, params, meta = META) => {
      const id = nextId++;
      child.stdin.write(
        `${JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: meta } })}\n`,
      );
      return answers.waitFor((answer) => answer.id === id, `the answer to ${method} ${id}`);
    },
    stop: async () => {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.stdin.end();
      await exited;
    },
  };
}

async function httpFront(fixture: string): Promise<Front> {
  const gateway = await Gateway.start([process.execPath, fixture]);
  return {
    ask: (method, params, meta = META) => modernRequest(gateway.url, method, params, meta),
    stop: () => gateway.stop(),
  };
}

/** tasks/get until the task is no longer `working` (bounded by the test's timeout and a count). */
async function settled(ask: Ask, taskId: string): Promise<Record<string, unknown>> {
  for (let attempt = 0; attempt < 400; attempt++) {
    const got = await ask('tasks/get', { taskId });
    if (got.error !== undefined) throw new Error(`tasks/get: ${got.error.message}`);
    expect(GetTaskResultV2Schema.safeParse(got.result).success).toBe(true);
    if (got.result!.status !== 'working') return got.result!;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`task ${taskId} stayed working`);
}

async function created(ask: Ask, name: string, args: Record<string, unknown>): Promise<string> {
  const answer = await ask('tools/call', { name, arguments: args });
  expect(answer.result).toMatchObject({ resultType: 'task' });
  expect(['working', 'input_required']).toContain(answer.result!.status);
  expect(CreateTaskResultV2Schema.safeParse(answer.result).success).toBe(true);
  return String(answer.result!.taskId);
}

const FRONTS = [
  { name: 'stdio', open: stdioFront },
  { name: 'HTTP', open: httpFront },
];

describe.each(FRONTS)(
  'the tasks extension over the $name front, in front of a server without tasks',
  ({ open }) => {
    let front: Front;
    beforeAll(async () => {
      front = await open(FIXTURES.legacy);
    });
    afterAll(() => front?.stop());

    it('server/discover advertises the extension', async () => {
      const discovered = await front.ask('server/discover', {});
      expect(discovered.result).toMatchObject({
        capabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } },
      });
    });

    it('a slow call is a task whose tasks/get inlines the result', async () => {
      const taskId = await created(front.ask, 'sleep', { ms: 200 });
      const done = await settled(front.ask, taskId);
      expect(done).toMatchObject({ status: 'completed', result: { content: [{ type: 'text' }] } });
    });

    it("the server's elicitation is the task's inputRequest; tasks/update answers it", async () => {
      const taskId = await created(front.ask, 'elicit', { message: 'your name?' });
      const waiting = await settled(front.ask, taskId);
      expect(waiting.status).toBe('input_required');
      const [key, asked] = Object.entries(waiting.inputRequests as Record<string, { method: string }>)[0]!;
      expect(asked.method).toBe('elicitation/create');
      const ack = await front.ask('tasks/update', {
        taskId,
        inputResponses: { [key]: { action: 'accept', content: { answer: 'Grace' } } },
      });
      expect(ack.result).toMatchObject({ resultType: 'complete' });
      let done = waiting;
      for (let attempt = 0; done.status === 'input_required' && attempt < 400; attempt++) {
        done = await settled(front.ask, taskId);
      }
      expect(done.status).toBe('completed');
      expect(JSON.stringify(done.result)).toContain('Grace');
    });

    it('tasks/cancel acknowledges, and the task ends cancelled', async () => {
      const taskId = await created(front.ask, 'sleep', { ms: 60_000 });
      const ack = await front.ask('tasks/cancel', { taskId });
      expect(ack.result).toMatchObject({ resultType: 'complete' });
      expect(await settled(front.ask, taskId)).toMatchObject({ status: 'cancelled' });
    });

    it('a failing call is a failed task carrying its JSON-RPC error', async () => {
      const taskId = await created(front.ask, 'throw', { message: 'it broke' });
      const failed = await settled(front.ask, taskId);
      expect(failed).toMatchObject({ status: 'failed', error: { code: expect.any(Number) } });
      expect(JSON.stringify(failed.error)).toContain('it broke');
    });

    it('an isError result is a completed task with exactly that result', async () => {
      const taskId = await created(front.ask, 'fail', { message: 'not like that' });
      expect(await settled(front.ask, taskId)).toMatchObject({
        status: 'completed',
        result: { isError: true, content: [{ type: 'text', text: 'not like that' }] },
      });
    });
  },
);

/** A 2026-07-28 client that did not declare the extension. */
const WITHOUT_EXTENSION = {
  ...META,
  'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } },
};

describe.each(FRONTS)(
  'the tasks extension over the $name front, in front of a 2026-07-28 server with the extension',
  ({ open }) => {
    let front: Front;
    beforeAll(async () => {
      front = await open(FIXTURES.v2Tasks);
    });
    afterAll(() => front?.stop());

    it("the server's task reaches the client as a task, its result inline", async () => {
      const taskId = await created(front.ask, 'slow', { ms: 100, text: 'from v2' });
      expect(await settled(front.ask, taskId)).toMatchObject({
        status: 'completed',
        result: { resultType: 'complete', content: [{ type: 'text', text: 'from v2' }] },
      });
    });

    it("the server's inputRequests reach the client, and its tasks/update the server", async () => {
      const taskId = await created(front.ask, 'ask', { question: 'colour?' });
      let waiting = await settled(front.ask, taskId);
      for (
        let attempt = 0;
        Object.keys(waiting.inputRequests ?? {}).length === 0 && attempt < 400;
        attempt++
      ) {
        waiting = await settled(front.ask, taskId);
      }
      expect(waiting.status).toBe('input_required');
      const [key, asked] = Object.entries(waiting.inputRequests as Record<string, { method: string }>)[0]!;
      expect(asked.method).toBe('elicitation/create');
      await front.ask('tasks/update', {
        taskId,
        inputResponses: { [key]: { action: 'accept', content: { answer: 'teal' } } },
      });
      let done = waiting;
      for (let attempt = 0; done.status === 'input_required' && attempt < 400; attempt++) {
        done = await settled(front.ask, taskId);
      }
      expect(done.status).toBe('completed');
      expect(JSON.stringify(done.result)).toContain('teal');
    });

    it('isError stays completed, a JSON-RPC error is failed: as the server said', async () => {
      expect(
        await settled(front.ask, await created(front.ask, 'tool_error', { message: 'nope' })),
      ).toMatchObject({
        status: 'completed',
        result: { isError: true },
      });
      expect(
        await settled(front.ask, await created(front.ask, 'fails', { message: 'broken' })),
      ).toMatchObject({
        status: 'failed',
        error: { message: expect.stringContaining('broken') },
      });
    });

    it('tasks/cancel reaches the server, and the task ends cancelled', async () => {
      const taskId = await created(front.ask, 'slow', { ms: 60_000 });
      expect((await front.ask('tasks/cancel', { taskId })).result).toMatchObject({ resultType: 'complete' });
      expect(await settled(front.ask, taskId)).toMatchObject({ status: 'cancelled' });
    });

    it('a client without the extension gets the plain result of a tool the server runs only as a task', async () => {
      const plain = await front.ask(
        'tools/call',
        { name: 'task_only', arguments: { text: 'followed' } },
        WITHOUT_EXTENSION,
      );
      expect(plain.result).toMatchObject({
        resultType: 'complete',
        content: [{ type: 'text', text: 'followed' }],
      });
    });
  },
);

/**
 * Issue 27, a client piping its input (`cat requests | taskgate`): it does not wait for initialize's
 * answer, and its input ends while what it asked may still run. A raw client over a real LineChannel on
 * in-memory streams, taskgate's Session and a real SDK Server.
 */
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { LineChannel } from '../../src/transport/line-channel.js';
import { heldTool, type HeldTool } from '../helpers/held-call.js';
import { jsonLines } from '../helpers/inbox.js';
import { rawClient, sessionFor, type RawSession } from '../helpers/raw-client.js';
import { INITIALIZE } from '../helpers/taskgate.js';

type Json = Record<string, unknown>;

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const held = (name: string, taskSupport?: 'optional'): HeldTool => {
  const tool = heldTool(name, taskSupport);
  cleanups.push(() => tool.releaseAll());
  return tool;
};

const taskCall = (id: number, name: string) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: {}, task: {} },
});

describe('a client that does not wait for the answer to initialize', () => {
  it('has a task-augmented call sent right after it decided as any later one: the server runs its own task', async () => {
    const native = held('native', 'optional');
    const client = await rawClient([native]);
    cleanups.push(client.close);
    client.send(INITIALIZE);
    client.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    client.send(taskCall(1, 'native'));
    const created = await client.response(1);
    const taskId = (created.result as { task: { taskId: string } }).task.taskId;
    expect(client.serverTasks?.getAllTasks().map((task) => task.taskId)).toEqual([taskId]);
    expect(client.store.size).toMatchObject({ live: 0, terminal: 0 });
    // In the order it was asked: initialize's answer first.
    const answered = client.messages.items.filter((m) => !('method' in m)).map((m) => m.id);
    expect(answered).toEqual(['init', 1]);
  });
});

describe('a client whose input ends while its task runs', () => {
  it('has the task end saying so, not that the upstream server was unavailable', async () => {
    const work = held('work');
    const input = new PassThrough();
    const output = new PassThrough();
    const messages = jsonLines<Json>(output);
    const opened: RawSession = await sessionFor(new LineChannel(input, output, 1024 * 1024, 'the client'), [
      work,
    ]);
    cleanups.push(opened.close);
    const write = (message: unknown): boolean => input.write(`${JSON.stringify(message)}\n`);
    write(INITIALIZE);
    await messages.waitFor((m) => m.id === 'init', 'the answer to initialize');
    write({ jsonrpc: '2.0', method: 'notifications/initialized' });
    write(taskCall(1, 'work'));
    const created = await messages.waitFor((m) => m.id === 1, 'the CreateTaskResult');
    const taskId = (created.result as { task: { taskId: string } }).task.taskId;
    await work.calls.waitFor(() => true, 'the call upstream');
    input.end();
    const ended = await opened.store.waitForTerminal(taskId);
    expect(ended.status).toBe('failed');
    expect(ended.statusMessage).toMatch(/client's input ended/);
    expect(ended.statusMessage).not.toMatch(/Upstream server unavailable/);
    expect(ended.outcome).toMatchObject({ error: { code: -32003 } });
  });
});

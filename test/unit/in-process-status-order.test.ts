/**
 * Issue 27: a tasks/get never answers an older status than a notifications/tasks/status already sent to
 * the client. The store's read is taken before a transition and its answer arrives after the transition
 * was committed and notified, as a Redis read does when the task ends meanwhile (here the memory store,
 * its read's answer held back). A task-aware SDK Client, taskgate's Session and an SDK Server, in memory.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  CreateTaskResultSchema,
  GetTaskResultSchema,
  type JSONRPCMessage,
} from '@modelcontextprotocol/sdk/types.js';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/config/load.js';
import { Policy } from '../../src/config/policy.js';
import { Session } from '../../src/session/session.js';
import { MemoryTaskStore } from '../../src/tasks/memory-store.js';
import type { TaskRecord } from '../../src/tasks/state.js';
import type { TaskStore } from '../../src/tasks/store.js';
import { memoryChannelPair } from '../../src/transport/memory-channel.js';
import { ChannelTransport } from '../helpers/channel-transport.js';
import { CheckedTransport } from '../helpers/checked-transport.js';
import { heldTool } from '../helpers/held-call.js';
import { fakeServer, textResult } from '../helpers/in-process.js';
import { Inbox } from '../helpers/inbox.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** The memory store, whose reads, while `hold` is set, are taken at once and answered when released. */
function slowReads(inner: MemoryTaskStore) {
  const reads = new Inbox<{ taskId: string; release: () => void }>();
  let hold = false;
  const store: TaskStore = {
    create: (task) => inner.create(task),
    get: (taskId) => {
      const read = inner.get(taskId);
      if (!hold) return read;
      return new Promise<TaskRecord>((resolve) => reads.push({ taskId, release: () => resolve(read) }));
    },
    update: (taskId, change) => inner.update(taskId, change),
    list: (owner, cursor, limit) => inner.list(owner, cursor, limit),
    waitForTerminal: (taskId, signal) => inner.waitForTerminal(taskId, signal),
    onTransition: (listener) => inner.onTransition(listener),
    close: () => inner.close(),
    inputs: inner.inputs,
  };
  return { store, reads, holdReads: () => (hold = true) };
}

async function open() {
  const config = resolveConfig({});
  const held = heldTool('held');
  const { server } = fakeServer([held]);
  const toClient = memoryChannelPair();
  const toServer = memoryChannelPair();
  await server.connect(new ChannelTransport(toServer.b));
  const inner = new MemoryTaskStore({ maxTasks: 10, maxResultBytes: 1024 * 1024 });
  const slow = slowReads(inner);
  const session = new Session(
    toClient.b,
    toServer.a,
    { id: 'order', config, policy: new Policy(config), store: slow.store, logger: pino({ level: 'silent' }) },
    { upstreamGone: () => undefined, closed: () => undefined },
  );
  session.start();
  const transport = new CheckedTransport(new ChannelTransport(toClient.a));
  const client = new Client(
    { name: 'order', version: '1' },
    { capabilities: { tasks: { list: {}, cancel: {}, requests: {} } } },
  );
  await client.connect(transport);
  cleanups.push(async () => {
    held.releaseAll();
    await client.close();
    await session.close();
    await server.close();
    await inner.close();
  });
  return { client, transport, held, ...slow };
}

const isStatus = (taskId: string, status: string) => (m: JSONRPCMessage) =>
  'method' in m &&
  m.method === 'notifications/tasks/status' &&
  m.params?.taskId === taskId &&
  m.params.status === status;

describe('tasks/get after a status notification', () => {
  it('answers the notified status when its read of the store was taken before the change', async () => {
    const { client, transport, held, reads, holdReads } = await open();
    const { task } = await client.request(
      { method: 'tools/call', params: { name: 'held', arguments: {}, task: {} } },
      CreateTaskResultSchema,
    );
    const call = await held.calls.waitFor(() => true, 'the call upstream');
    holdReads();
    const got = client.request({ method: 'tasks/get', params: { taskId: task.taskId } }, GetTaskResultSchema);
    const read = await reads.waitFor((r) => r.taskId === task.taskId, 'the read of tasks/get');
    call.answer(textResult('done'));
    await transport.received.waitFor(isStatus(task.taskId, 'completed'), 'the completed notification');
    read.release();
    expect((await got).status).toBe('completed');
    expect(transport.violations).toEqual([]);
  });

  it('answers what the store says when nothing was notified meanwhile', async () => {
    const { client, held, reads, holdReads } = await open();
    const { task } = await client.request(
      { method: 'tools/call', params: { name: 'held', arguments: {}, task: {} } },
      CreateTaskResultSchema,
    );
    await held.calls.waitFor(() => true, 'the call upstream');
    holdReads();
    const got = client.request({ method: 'tasks/get', params: { taskId: task.taskId } }, GetTaskResultSchema);
    (await reads.waitFor((r) => r.taskId === task.taskId, 'the read of tasks/get')).release();
    expect(await got).toMatchObject({ taskId: task.taskId, status: 'working' });
  });
});

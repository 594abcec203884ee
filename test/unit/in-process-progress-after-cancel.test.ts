/**
 * Issue 27: once a task is cancelled, no progress of its token reaches the client, however long the
 * server goes on sending it (the SDK stops a request's own `sendNotification` once it is cancelled; a
 * server that sends through `Server.notification`, or any other implementation, need not, and progress
 * already on its way arrives after the cancel anyway). For taskgate's own task (augment: the call runs
 * upstream as a plain call, cancelled with notifications/cancelled), for an unwrapped call the client
 * cancels, and for the server's own task passed through.
 */
import {
  CallToolResultSchema,
  CancelTaskResultSchema,
  CreateTaskResultSchema,
  type JSONRPCMessage,
} from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { heldTool, type HeldCall, type HeldTool } from '../helpers/held-call.js';
import { fakeServer, inProcessGateway, textResult, type Gateway } from '../helpers/in-process.js';

let gate: Gateway | undefined;
let held: HeldTool | undefined;
let cleanupServer: (() => void) | undefined;
afterEach(async () => {
  held?.releaseAll();
  expect(gate?.violations ?? []).toEqual([]);
  await gate?.close();
  cleanupServer?.();
  gate = undefined;
  held = undefined;
  cleanupServer = undefined;
});

/** A gateway before a server whose `ticker` is held and sends progress when told, cancelled or not. */
async function open(taskSupport: HeldTool['taskSupport'], clientTasks: boolean) {
  held = heldTool('ticker', taskSupport);
  const echo = {
    name: 'echo',
    ...(taskSupport === undefined ? {} : { taskSupport: 'forbidden' as const }),
    run: (args: Record<string, unknown>) => textResult(String(args.text)),
  };
  const { server, serverTasks } = fakeServer([held, echo]);
  cleanupServer = () => serverTasks?.cleanup();
  const g = (gate = await inProcessGateway({ server, clientTasks }));
  /** The server sends progress `n` of `call` as a server not built to stop would: past its cancellation. */
  const tick = (call: HeldCall, n: number): Promise<void> =>
    server.notification({
      method: 'notifications/progress',
      params: { progressToken: call.extra._meta!.progressToken!, progress: n },
    });
  /** What the server sent before the fence's answer has reached the client by the time it returns. */
  const fence = async (): Promise<void> => {
    await g.client.callTool({ name: 'echo', arguments: { text: 'fence' } });
  };
  const progressOf = (token: string): unknown[] =>
    g.clientTransport.received.items
      .filter(isMethod('notifications/progress'))
      .filter((m) => m.params?.progressToken === token)
      .map((m) => m.params?.progress);
  return { g, tick, fence, progressOf };
}

type Incoming = Extract<JSONRPCMessage, { method: string }>;
const isMethod =
  (method: string) =>
  (m: JSONRPCMessage): m is Incoming =>
    'method' in m && m.method === method;

describe('progress after a cancel', () => {
  it('of taskgate’s own task: none reaches the client, and the call upstream was cancelled', async () => {
    const { g, tick, fence, progressOf } = await open(undefined, true);
    const { task } = await g.client.request(
      {
        method: 'tools/call',
        params: { name: 'ticker', arguments: {}, task: {}, _meta: { progressToken: 'p-own' } },
      },
      CreateTaskResultSchema,
    );
    const call = await held!.calls.waitFor(() => true, 'the call upstream');
    await tick(call, 1);
    await g.clientTransport.received.waitFor(
      (m) => isMethod('notifications/progress')(m) && m.params?.progressToken === 'p-own',
      'the progress before the cancel',
    );
    await g.client.request(
      { method: 'tasks/cancel', params: { taskId: task.taskId } },
      CancelTaskResultSchema,
    );
    await call.cancelled;
    const upstreamCall = g.serverTransport.received.items.find(isMethod('tools/call'));
    const cancelled = g.serverTransport.received.items.filter(isMethod('notifications/cancelled'));
    expect(cancelled.map((m) => m.params?.requestId)).toEqual([
      upstreamCall && 'id' in upstreamCall ? upstreamCall.id : 'missing',
    ]);
    await tick(call, 2);
    await tick(call, 3);
    await fence();
    expect(progressOf('p-own')).toEqual([1]);
  });

  it('after taskgate’s own task completed: none reaches the client either', async () => {
    const { g, tick, fence, progressOf } = await open(undefined, true);
    const { task } = await g.client.request(
      {
        method: 'tools/call',
        params: { name: 'ticker', arguments: {}, task: {}, _meta: { progressToken: 'p-done' } },
      },
      CreateTaskResultSchema,
    );
    const call = await held!.calls.waitFor(() => true, 'the call upstream');
    await tick(call, 1);
    call.answer(textResult('done'));
    await g.clientTransport.received.waitFor(
      (m) =>
        isMethod('notifications/tasks/status')(m) &&
        m.params?.taskId === task.taskId &&
        m.params.status === 'completed',
      'the completed notification',
    );
    await tick(call, 2);
    await fence();
    expect(progressOf('p-done')).toEqual([1]);
  });

  it('of a call taskgate unwraps for a client without tasks: none reaches the client', async () => {
    const { g, tick, fence, progressOf } = await open('required', false);
    await g.client.listTools();
    const controller = new AbortController();
    const answer = g.client
      .request(
        {
          method: 'tools/call',
          params: { name: 'ticker', arguments: {}, _meta: { progressToken: 'p-unwrap' } },
        },
        CallToolResultSchema,
        { signal: controller.signal },
      )
      .catch((error: unknown) => error);
    const call = await held!.calls.waitFor(() => true, 'the server’s task');
    await tick(call, 1);
    await g.clientTransport.received.waitFor(
      (m) => isMethod('notifications/progress')(m) && m.params?.progressToken === 'p-unwrap',
      'the progress before the cancel',
    );
    controller.abort('changed my mind');
    await answer;
    await g.serverTransport.received.waitFor(isMethod('tasks/cancel'), 'tasks/cancel upstream');
    await tick(call, 2);
    await fence();
    expect(progressOf('p-unwrap')).toEqual([1]);
  });

  it('of the server’s own task passed through: none reaches the client', async () => {
    const { g, tick, fence, progressOf } = await open('optional', true);
    const { task } = await g.client.request(
      {
        method: 'tools/call',
        params: { name: 'ticker', arguments: {}, task: {}, _meta: { progressToken: 'p-server' } },
      },
      CreateTaskResultSchema,
    );
    const call = await held!.calls.waitFor(() => true, 'the server’s task');
    await tick(call, 1);
    await fence();
    expect(progressOf('p-server')).toEqual([1]);
    const cancelled = await g.client.request(
      { method: 'tasks/cancel', params: { taskId: task.taskId } },
      CancelTaskResultSchema,
    );
    expect(cancelled.status).toBe('cancelled');
    await tick(call, 2);
    await fence();
    expect(progressOf('p-server')).toEqual([1]);
  });
});

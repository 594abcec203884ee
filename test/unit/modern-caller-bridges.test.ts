/**
 * Issue 28 "Input crosses callers": Alice has a plain 2026-07-28 call open while Bob's extension task asks
 * for input. Each caller has a bridge and an upstream of its own (caller-bridges.ts, as the HTTP gateway
 * has them), so Bob's question is Bob's, and Alice's call ends with its own result. In process: the real
 * bridges and Sessions, a real SDK server per upstream over memory channels.
 */
import { ElicitResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/config/load.js';
import { Policy } from '../../src/config/policy.js';
import { CallerBridges } from '../../src/modern/caller-bridges.js';
import { openModernSession } from '../../src/modern/shared-bridge.js';
import type { JsonObject } from '../../src/protocol/messages.js';
import { ClientGiveUp, answerPromise } from '../../src/protocol/modern/exchange.js';
import { MemoryTaskStore } from '../../src/tasks/memory-store.js';
import { memoryChannelPair } from '../../src/transport/memory-channel.js';
import { ChannelTransport } from '../helpers/channel-transport.js';
import { heldTool, type HeldTool } from '../helpers/held-call.js';
import { MODERN_META } from '../helpers/in-process-bridge.js';
import { fakeServer, textResult, type FakeTool } from '../helpers/in-process.js';
import { Inbox } from '../helpers/inbox.js';

const WITH_TASKS = {
  ...MODERN_META,
  'io.modelcontextprotocol/clientCapabilities': {
    elicitation: { form: {} },
    extensions: { 'io.modelcontextprotocol/tasks': {} },
  },
};

interface Answer {
  result?: Record<string, unknown>;
  error?: { code: number; message: string };
}

/** Asks its caller's question, and says what it was answered. */
const ask: FakeTool = {
  name: 'ask',
  run: async (args, extra) => {
    const answer = await extra.sendRequest(
      {
        method: 'elicitation/create',
        params: {
          message: `a question for ${String(args.who)}`,
          requestedSchema: { type: 'object', properties: { name: { type: 'string' } } },
        },
      },
      ElicitResultSchema,
    );
    return textResult(`${String(args.who)} answered ${JSON.stringify(answer.content)}`);
  },
};

const silent = pino({ level: 'silent' });
let held: HeldTool;
let bridges: CallerBridges | undefined;
const upstreams = new Inbox<string>();
afterEach(async () => {
  held?.releaseAll();
  await bridges?.close();
  bridges = undefined;
});

function open(maxCallers = 10): CallerBridges {
  held = heldTool('held');
  const config = resolveConfig({});
  const store = new MemoryTaskStore({ maxTasks: 100, maxResultBytes: 1_000_000 });
  return (bridges = new CallerBridges(
    (caller) =>
      openModernSession({
        logger: silent,
        openChannel: async () => {
          upstreams.push(caller ?? '');
          const pair = memoryChannelPair();
          const { server } = fakeServer([held, ask]);
          await server.connect(new ChannelTransport(pair.b));
          return { channel: pair.a, stop: () => server.close() };
        },
        sessionOptions: (id, logger) => ({ id, config, policy: new Policy(config), store, logger }),
      }),
    { maxCallers, idleMs: 60_000 },
    silent,
  ));
}

let nextId = 1;
async function call(
  gate: CallerBridges,
  caller: string,
  method: string,
  params: JsonObject,
  signal = new ClientGiveUp(),
): Promise<Answer> {
  const answer = await answerPromise(gate.serveTo, {
    request: { jsonrpc: '2.0', id: nextId++, method, params },
    notify: () => undefined,
    signal,
    principal: caller,
    subject: caller,
    caller,
  });
  return (answer as { response: Answer }).response;
}

describe('2026-07-28 callers on bridges of their own', () => {
  it('Bob’s task asks Bob while Alice’s plain call is open; Alice’s call ends with its own result', async () => {
    const gate = open();
    const alice = call(gate, 'alice', 'tools/call', { name: 'held', arguments: {}, _meta: MODERN_META });
    const aliceCall = await held.calls.waitFor(() => true, 'Alice’s call upstream');

    const created = await call(gate, 'bob', 'tools/call', {
      name: 'ask',
      arguments: { who: 'bob' },
      _meta: WITH_TASKS,
    });
    expect(created.result).toMatchObject({ resultType: 'task' });
    const taskId = String(created.result!.taskId);
    let polled: Answer | undefined;
    for (let turn = 0; turn < 200; turn++) {
      polled = await call(gate, 'bob', 'tasks/get', { taskId, _meta: WITH_TASKS });
      if (polled.result?.status === 'input_required') break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(polled?.result).toMatchObject({ status: 'input_required' });
    const [key, question] = Object.entries(polled!.result!.inputRequests as Record<string, JsonObject>)[0]!;
    expect(question).toMatchObject({ params: { message: 'a question for bob' } });

    await call(gate, 'bob', 'tasks/update', {
      taskId,
      inputResponses: { [key]: { action: 'accept', content: { name: 'Bob' } } },
      _meta: WITH_TASKS,
    });
    aliceCall.answer(textResult('Alice’s own result'));
    expect((await alice).result).toMatchObject({
      resultType: 'complete',
      content: [{ type: 'text', text: 'Alice’s own result' }],
    });
    for (let turn = 0; turn < 200; turn++) {
      polled = await call(gate, 'bob', 'tasks/get', { taskId, _meta: WITH_TASKS });
      if (polled.result?.status === 'completed') break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(polled?.result).toMatchObject({
      status: 'completed',
      result: { content: [{ text: 'bob answered {"name":"Bob"}' }] },
    });
    expect(gate.size).toBe(2);
  });

  it('retires the least recently used idle caller for a newcomer, and refuses one when all are busy', async () => {
    const gate = open(1);
    const first = call(gate, 'alice', 'tools/call', { name: 'held', arguments: {}, _meta: MODERN_META });
    const aliceCall = await held.calls.waitFor(() => true, 'Alice’s call upstream');
    const refused = await call(gate, 'bob', 'tools/call', {
      name: 'held',
      arguments: {},
      _meta: MODERN_META,
    });
    expect(refused.error).toMatchObject({ message: expect.stringContaining('at most 1 2026-07-28 callers') });
    aliceCall.answer(textResult('done'));
    await first;
    const bob = call(gate, 'bob', 'tools/call', { name: 'held', arguments: {}, _meta: MODERN_META });
    const bobCall = await held.calls.waitFor(() => held.calls.items.length === 2, 'Bob’s call upstream');
    bobCall.answer(textResult('bob done'));
    expect((await bob).result).toMatchObject({ content: [{ text: 'bob done' }] });
    expect(gate.size).toBe(1);
  });

  it('retires the caller used least recently, not the one opened first', async () => {
    const gate = open(2);
    const before = upstreams.items.length;
    const list = async (caller: string) =>
      expect((await call(gate, caller, 'tools/list', { _meta: MODERN_META })).result).toBeDefined();
    await list('alice');
    await list('bob');
    await list('alice');
    await list('alice');
    await list('carol');
    await list('alice');
    expect(upstreams.items.slice(before)).toEqual(['alice', 'bob', 'carol']);
    expect(gate.size).toBe(2);
  });
});

/**
 * A 2026-07-28 client that declares the tasks extension, through taskgate's bridge and Session, to a
 * server that serves the extension itself (test/fixtures/v2-task-server.js, in this process): the server
 * decides which calls become tasks (tasks.md "Capability Negotiation"), and taskgate passes its decision
 * through: a plain answer stays plain, a task is the server's task.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/config/load.js';
import { Policy } from '../../src/config/policy.js';
import type { ConfigInput } from '../../src/config/schema.js';
import type { JsonObject } from '../../src/protocol/messages.js';
import { ProbingUpstream } from '../../src/modern/probing-upstream.js';
import { bridgeSession, type BridgedSession } from '../../src/modern/shared-bridge.js';
import { MemoryTaskStore } from '../../src/tasks/memory-store.js';
import { memoryChannelPair } from '../../src/transport/memory-channel.js';
import { createV2TaskServer } from '../fixtures/v2-task-server.js';

const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
const EXTENSION_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': { elicitation: {}, extensions: { [TASKS_EXTENSION]: {} } },
  'io.modelcontextprotocol/clientInfo': { name: 'native-v2', version: '1' },
};

interface Gateway {
  ask(method: string, params: JsonObject): Promise<JsonObject>;
}

let opened: { parts: BridgedSession; store: MemoryTaskStore } | undefined;
afterEach(async () => {
  await opened?.parts.session.close();
  await opened?.store.close();
  opened = undefined;
});

type Wire = (message: JsonObject) => void;

/** `between`: what stands between taskgate and the server, given the server's receive and send. */
function open(
  input: ConfigInput = {},
  between: (receive: Wire, send: Wire) => { receive: Wire; send: Wire } = (receive, send) => ({
    receive,
    send,
  }),
): Gateway {
  const logger = pino({ level: 'silent' });
  const config = resolveConfig(input);
  const pair = memoryChannelPair();
  const toTaskgate: Wire = (message) => pair.b.send(message);
  let fromServer = toTaskgate;
  const wire = between(
    createV2TaskServer((message: unknown) => fromServer(message as JsonObject)),
    toTaskgate,
  );
  fromServer = wire.send;
  pair.b.start({
    message: (raw) => wire.receive(JSON.parse(raw.toString()) as JsonObject),
    malformed: () => undefined,
    closed: () => undefined,
  });
  const store = new MemoryTaskStore({ maxTasks: 100, maxResultBytes: 1_000_000 });
  const parts = bridgeSession(
    new ProbingUpstream(pair.a, 'auto', 5_000, logger),
    { id: 'native-v2', config, policy: new Policy(config), store, logger },
    { upstreamGone: () => undefined, closed: () => undefined },
  );
  opened = { parts, store };
  let nextId = 1;
  return {
    ask: async (method, params) => {
      const answer = await parts.bridge.handle({
        request: { jsonrpc: '2.0', id: nextId++, method, params: { ...params, _meta: EXTENSION_META } },
        notify: () => undefined,
        signal: new AbortController().signal,
      });
      return (answer?.response ?? {}) as JsonObject;
    },
  };
}

describe.each([
  ['the defaults', {}],
  ['*=passthrough', { tools: [{ match: '*', taskSupport: 'passthrough' }] }],
] as [string, ConfigInput][])('a native v2 task server behind taskgate (%s)', (_name, input) => {
  it('a tool the server answers plainly is answered plainly, resultType "complete", not made a task', async () => {
    const gateway = open(input);
    const answer = await gateway.ask('tools/call', { name: 'echo', arguments: { text: 'hi' } });
    expect(answer.result).toMatchObject({ resultType: 'complete', content: [{ type: 'text', text: 'hi' }] });
    expect(answer.result).not.toHaveProperty('taskId');
  });

  it('a call the server makes a task is its task, and tasks/get follows it to its result', async () => {
    const gateway = open(input);
    const created = (await gateway.ask('tools/call', { name: 'slow', arguments: { ms: 10, text: 'done' } }))
      .result as JsonObject;
    expect(created).toMatchObject({ resultType: 'task', status: 'working', pollIntervalMs: 50 });
    let got: JsonObject | undefined;
    // Polled as the task says to, for at most 5 s.
    for (let polls = 0; polls < 100 && got?.status !== 'completed'; polls++) {
      if (got !== undefined) await sleep(Number(created.pollIntervalMs));
      got = (await gateway.ask('tasks/get', { taskId: created.taskId })).result as JsonObject;
    }
    expect(got).toMatchObject({ status: 'completed', result: { content: [{ type: 'text', text: 'done' }] } });
  });
});

describe('a native v2 task server behind taskgate, its answers out of order (as over HTTP)', () => {
  it('tasks/get says input_required only with the input to answer, even before taskgate’s own poll brought it', async () => {
    // The first tasks/get is taskgate's own poll, which brings the task's input request: its answer is
    // held back until the client's tasks/get was answered, as one POST can overtake another.
    let firstPoll: string | number | undefined;
    let polled!: () => void;
    const taskgatePolled = new Promise<void>((resolve) => (polled = resolve));
    let release: (() => void) | undefined;
    const gateway = open({}, (receive, send) => ({
      receive: (message) => {
        if (message.method === 'tasks/get' && firstPoll === undefined) {
          firstPoll = message.id as string;
          polled();
        }
        receive(message);
      },
      send: (message) => {
        if (message.id !== undefined && message.id === firstPoll && release === undefined) {
          release = () => send(message);
        } else send(message);
      },
    }));
    const created = (await gateway.ask('tools/call', { name: 'ask', arguments: { question: 'Go on?' } }))
      .result as JsonObject;
    expect(created).toMatchObject({ resultType: 'task' });
    await taskgatePolled;
    const early = (await gateway.ask('tasks/get', { taskId: created.taskId })).result as JsonObject;
    expect(early.status, JSON.stringify(early)).toBe('working');

    release!();
    let got: JsonObject | undefined;
    for (let polls = 0; polls < 100 && got?.status !== 'input_required'; polls++) {
      if (got !== undefined) await sleep(50);
      got = (await gateway.ask('tasks/get', { taskId: created.taskId })).result as JsonObject;
    }
    const keys = Object.keys((got?.inputRequests ?? {}) as JsonObject);
    expect(keys).toHaveLength(1);
    const answer = { action: 'accept', content: { answer: 'yes' } };
    await gateway.ask('tasks/update', { taskId: created.taskId, inputResponses: { [keys[0]!]: answer } });
    for (let polls = 0; polls < 100 && got?.status !== 'completed'; polls++) {
      await sleep(50);
      got = (await gateway.ask('tasks/get', { taskId: created.taskId })).result as JsonObject;
    }
    expect(got).toMatchObject({ status: 'completed' });
  });
});

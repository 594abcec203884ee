/**
 * The modern bridge in-process: the test is the 2026-07-28 client, a real Session and SDK 1.x server
 * stand behind the bridge. What the process-level tests in test/integration/modern-front.test.ts show
 * through the CLI, checked here in milliseconds, with fake timers for the wait for a retry.
 */
import { InMemoryTaskMessageQueue, InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { pino } from 'pino';
import { ModernBridge } from '../../src/modern/bridge.js';
import { BytesAnswer } from '../../src/modern/bridge-call.js';
import { startBridge } from '../../src/modern/shared-bridge.js';
import { resolveConfig } from '../../src/config/load.js';
import { Policy } from '../../src/config/policy.js';
import { Session } from '../../src/session/session.js';
import { MemoryTaskStore } from '../../src/tasks/memory-store.js';
import { Limits } from '../../src/security/limits.js';
import { ChannelTransport } from '../helpers/channel-transport.js';
import {
  MODERN_INPUT_WAIT_MS,
  MODERN_LISTEN_SHARES,
  MODERN_PARKED_SHARES,
  modernTaskShares,
} from '../../src/modern/defaults.js';
import { ClientGiveUp, type ModernAnswer } from '../../src/protocol/modern/exchange.js';
import type { Request, Response } from '../../src/protocol/messages.js';
import type { RequestContext } from '../../src/session/request-contexts.js';
import { ALL_VERSIONS } from '../../src/protocol/versions.js';
import { memoryChannelPair } from '../../src/transport/memory-channel.js';
import type { Channel } from '../../src/transport/channel.js';
import { ValueClient, type ValueReceiver } from '../../src/session/value-client.js';
import { MODERN_META, inProcessBridge, type InProcessBridge } from '../helpers/in-process-bridge.js';
import { askName, fakeServer, sendProgress, textResult, type FakeTool } from '../helpers/in-process.js';

interface Answer {
  id: number;
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: unknown };
}

/** What the server's elicitation got: the client's answer, or the error it was refused with. */
const elicited: { outcome: unknown }[] = [];

const echo: FakeTool = { name: 'echo', run: (args) => textResult(String(args.text)) };
const ask: FakeTool = {
  name: 'ask',
  run: async (_args, extra) => {
    const entry = { outcome: undefined as unknown };
    elicited.push(entry);
    try {
      // Longer than the bridge's wait: only the bridge gives the elicitation up.
      const answer = await askName(extra, { timeout: 10 * MODERN_INPUT_WAIT_MS });
      entry.outcome = answer;
      return textResult(JSON.stringify(answer.content));
    } catch (error) {
      entry.outcome = error;
      throw error;
    }
  },
};
const progress: FakeTool = {
  name: 'progress',
  run: async (_args, extra) => {
    await sendProgress(extra);
    return textResult('done');
  },
};
const region: FakeTool = {
  name: 'region',
  inputSchema: { properties: { region: { type: 'string', 'x-mcp-header': 'Region' } } },
  run: (args) => textResult(String(args.region)),
};
const cancelled: string[] = [];
const hang: FakeTool = {
  name: 'hang',
  run: (_args, extra) =>
    new Promise((_resolve, reject) => {
      extra.signal.addEventListener('abort', () => {
        cancelled.push(String(extra.requestId));
        reject(new McpError(-32800, 'cancelled'));
      });
    }),
};

let bridge: InProcessBridge | undefined;
afterEach(async () => {
  expect(bridge?.serverViolations() ?? []).toEqual([]);
  await bridge?.close();
  bridge = undefined;
  elicited.length = 0;
  vi.useRealTimers();
});

// The upstream deadline well past the bridge's wait, so that only the bridge gives a parked call up.
const LONG_DEADLINE = { upstream: { command: 'never-run', requestTimeout: 10 * MODERN_INPUT_WAIT_MS } };
const open = async (): Promise<InProcessBridge> =>
  (bridge = await inProcessBridge([echo, ask, hang, progress, region], LONG_DEADLINE));

/**
 * Resolves once `check` holds, letting the in-process hops run (a few hundred turns of the real event
 * loop, no time passing on the fake clock); vi.waitFor would move the fake clock on.
 */
/** A Session in front of `upstream`, started, and a bridge on its client end (a ValueClient). */
function bridgedSession(
  upstream: Channel,
  id: string,
  config = resolveConfig({}),
  more: { limits?: Limits } = {},
  client = new ValueClient(),
) {
  const options = {
    id,
    config,
    policy: new Policy(config),
    store: new MemoryTaskStore({ maxTasks: 10, maxResultBytes: 1_000_000 }),
    logger: pino({ level: 'silent' }),
    ...more,
  };
  const session = new Session(client, upstream, options, {
    upstreamGone: () => undefined,
    closed: () => undefined,
  });
  session.start();
  return { session, modern: startBridge(client, session, options, upstream) };
}

async function settled(check: () => boolean, what: string): Promise<void> {
  for (let turn = 0; turn < 500; turn++) {
    if (check()) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error(`not settled: ${what}`);
}
const call = (name: string, extra: Record<string, unknown> = {}, meta: object = MODERN_META) => ({
  name,
  arguments: { text: 'hi' },
  _meta: meta,
  ...extra,
});
const answerOf = async (pending: Promise<unknown>): Promise<Answer> =>
  ((await pending) as { response: Answer }).response;

describe('the modern bridge, in-process', () => {
  it('answers server/discover from the upstream, and results carry resultType and serverInfo', async () => {
    const gate = await open();
    const discovered = await answerOf(gate.ask('server/discover', { _meta: MODERN_META }));
    expect(discovered.result).toMatchObject({
      resultType: 'complete',
      capabilities: { tools: {} },
      _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'in-process-server' } },
    });
    const echoed = await answerOf(gate.ask('tools/call', call('echo')));
    expect(echoed.result).toMatchObject({ resultType: 'complete', content: [{ type: 'text', text: 'hi' }] });
  });

  it("turns the server's elicitation into one MRTR round; its state is good once", async () => {
    const gate = await open();
    const round = await answerOf(gate.ask('tools/call', call('ask')));
    expect(round.result).toMatchObject({ resultType: 'input_required' });
    const { inputRequests, requestState } = round.result as {
      inputRequests: Record<string, { method: string }>;
      requestState: string;
    };
    const [key] = Object.keys(inputRequests);
    expect(inputRequests[key!]!.method).toBe('elicitation/create');
    const retry = call('ask', {
      requestState,
      inputResponses: { [key!]: { action: 'accept', content: { name: 'Ada' } } },
    });
    const done = await answerOf(gate.ask('tools/call', retry));
    expect(done.result).toMatchObject({ content: [{ type: 'text', text: '{"name":"Ada"}' }] });
    const again = await answerOf(gate.ask('tools/call', retry));
    expect(again.error).toMatchObject({ code: -32602 });
  });

  it('gives a parked call up when no retry comes within the wait: the server is refused, the state dead', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const gate = await open();
    const round = await answerOf(gate.ask('tools/call', call('ask')));
    const { requestState } = round.result as { requestState: string };
    vi.advanceTimersByTime(MODERN_INPUT_WAIT_MS);
    await settled(() => elicited[0]?.outcome instanceof McpError, "the server's elicitation refused");
    expect(String(elicited[0]?.outcome)).toContain('the client did not come back with the input');
    const late = await answerOf(gate.ask('tools/call', call('ask', { requestState, inputResponses: {} })));
    expect(late.error).toMatchObject({ code: -32602 });
    expect(late.error!.message).toMatch(/already used, or its call stopped waiting|expired/);
  });

  it('refuses input the request did not declare: -32021 naming it, and the server hears no', async () => {
    const gate = await open();
    const meta = { ...MODERN_META, 'io.modelcontextprotocol/clientCapabilities': {} };
    const refused = (await gate.ask('tools/call', call('ask', {}, meta))) as {
      response: Answer;
      refused?: boolean;
    };
    expect(refused.refused).toBe(true);
    expect(refused.response.error).toMatchObject({
      code: -32021,
      data: { requiredCapabilities: { elicitation: { form: {} } } },
    });
    await vi.waitFor(() => expect(elicited[0]?.outcome).toBeInstanceOf(McpError));
  });

  it.each([
    ['an AbortSignal', () => new AbortController()],
    ["the HTTP front's ClientGiveUp", () => new ClientGiveUp()],
  ])(
    'a request the client gives up (%s) is cancelled upstream, and answered with nothing',
    async (_kind, giveUpWith) => {
      const gate = await open();
      const given = giveUpWith();
      const signal = given instanceof AbortController ? given.signal : given;
      const pending = gate.ask('tools/call', call('hang'), { signal });
      // The call must have reached the server before it is cancelled: ask it something after.
      await gate.ask('tools/call', call('echo'));
      const before = cancelled.length;
      if (given instanceof AbortController) given.abort();
      else given.giveUp();
      expect(await pending).toBeUndefined();
      await vi.waitFor(() => expect(cancelled.length).toBe(before + 1));
    },
  );

  it("a call's progress reaches its client under the client's own token", async () => {
    const gate = await open();
    const notified: object[] = [];
    const meta = { ...MODERN_META, progressToken: 'mine' };
    const answer = await answerOf(gate.ask('tools/call', call('progress', {}, meta), { notified }));
    expect(answer.result).toMatchObject({ content: [{ text: 'done' }] });
    expect(notified).toEqual([
      { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'mine', progress: 1 } },
    ]);
  });

  it("Mcp-Param headers are checked against the tool's x-mcp-header parameters, before and once they are read", async () => {
    const gate = await open();
    const regionCall = (value: string) => ({ ...call('region'), arguments: { region: value } });
    const headers = new Map([['mcp-param-region', 'eu']]);
    for (const round of ['tools/list still being read', 'tools/list read']) {
      const differs = await answerOf(gate.ask('tools/call', regionCall('us'), { paramHeaders: headers }));
      expect(differs.error, round).toMatchObject({ code: -32020 });
    }
    const missing = await answerOf(gate.ask('tools/call', regionCall('us'), { paramHeaders: new Map() }));
    expect(missing.error).toMatchObject({ code: -32020 });
    const mirrored = await answerOf(gate.ask('tools/call', regionCall('eu'), { paramHeaders: headers }));
    expect(mirrored.result).toMatchObject({ content: [{ text: 'eu' }] });
  });

  it('refuses a request without the per-request _meta, before anything reaches the server', async () => {
    const gate = await open();
    const refused = (await gate.ask('tools/call', { name: 'echo', arguments: {} })) as {
      response: Answer;
      refused?: boolean;
    };
    expect(refused).toMatchObject({ refused: true, response: { error: { code: -32602 } } });
  });
});

describe('the modern bridge and the Session, values both ways (request-contexts.ts, value-client.ts)', () => {
  /** A bridge whose Session end is the test's, with what arrives there. */
  function bridgeOnPair() {
    const taken: { request: Request; context: RequestContext }[] = [];
    const takenMessages: object[] = [];
    const client = new ValueClient();
    const modern = new ModernBridge({
      // Only the handshake is looked at here: what the bridge hands the Session is recorded.
      session: {
        take: (request, context) => taken.push({ request, context }),
        takeMessage: (message) => takenMessages.push(message),
        listen: (receiver) => client.listen(receiver),
        end: () => client.end(),
      },
      logger: pino({ level: 'silent' }),
      supportedVersions: ALL_VERSIONS,
      replica: 'test',
      inputWaitMs: MODERN_INPUT_WAIT_MS,
      parkedShares: MODERN_PARKED_SHARES,
      listenShares: MODERN_LISTEN_SHARES,
      clientInfo: { name: 'taskgate', version: '0' },
      taskShares: modernTaskShares(10),
      defaultCaller: 'test',
    });
    modern.start();
    return { modern, taken, takenMessages };
  }

  it('hands its handshake to the Session as values, and reads the answer it is handed rather than its bytes', async () => {
    const { modern, taken, takenMessages } = bridgeOnPair();
    await vi.waitFor(() => expect(taken).toHaveLength(1));
    const initialize = taken[0]!;
    expect(initialize.request).toMatchObject({ id: 0, method: 'initialize' });
    expect(initialize.context.caller).toEqual({});
    const info = (name: string) => ({ capabilities: {}, serverInfo: { name, version: '1' } });
    const bytes = JSON.stringify({ jsonrpc: '2.0', id: 0, result: info('from-the-bytes') });
    initialize.context.answer(
      { jsonrpc: '2.0', id: 0, result: info('beside-the-bytes') },
      Buffer.from(bytes),
    );
    const discovered = await answerOf(
      modern.handle({
        request: { jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: MODERN_META } },
        notify: () => undefined,
        signal: new ClientGiveUp(),
      }),
    );
    expect(discovered.result?._meta).toEqual({
      'io.modelcontextprotocol/serverInfo': { name: 'beside-the-bytes', version: '1' },
    });
    await vi.waitFor(() => expect(takenMessages).toHaveLength(1));
    expect(takenMessages[0]).toEqual({ jsonrpc: '2.0', method: 'notifications/initialized' });
    await modern.close();
  });
  it('hands a call to the Session in the turn it arrives when nothing handed before it is on its way', async () => {
    const { modern, taken, takenMessages } = bridgeOnPair();
    await vi.waitFor(() => expect(taken).toHaveLength(1));
    taken[0]!.context.answer({
      jsonrpc: '2.0',
      id: 0,
      result: { capabilities: { tools: {} }, serverInfo: { name: 'server', version: '1' } },
    });
    await vi.waitFor(() => expect(takenMessages).toHaveLength(1));
    const answers: ModernAnswer[] = [];
    modern.serveTo(
      {
        request: {
          jsonrpc: '2.0',
          id: 7,
          method: 'tools/call',
          params: { name: 'echo', arguments: {}, _meta: MODERN_META },
        },
        notify: () => undefined,
        signal: new ClientGiveUp(),
      },
      { answer: (answer) => answers.push(answer), failed: (error) => answers.push({ response: { error } }) },
    );
    expect(taken.map(({ request }) => request.method)).toEqual(['initialize', 'tools/call']);
    taken[1]!.context.answer({ jsonrpc: '2.0', id: taken[1]!.request.id, result: { content: [] } });
    expect(answers).toMatchObject([{ response: { id: 7, result: { resultType: 'complete' } } }]);
    await modern.close();
  });
});

describe('the modern bridge and the Session, a request handed as a value (request-contexts.ts)', () => {
  /**
   * A ValueClient that records what its Session hands it besides answers (as the value, or the bytes when it
   * came as bytes) and what of it reaches the bridge, with the request each belongs with.
   */
  function recordingClient() {
    const client = new ValueClient();
    const handed: unknown[] = [];
    const send = client.send.bind(client);
    const sendRaw = client.sendRaw.bind(client);
    client.send = (message, route) => {
      handed.push(message);
      send(message, route);
    };
    client.sendRaw = (raw, route, parsed) => {
      handed.push(parsed ?? raw);
      sendRaw(raw, route, parsed);
    };
    const received: { message: object; onStreamOf: unknown }[] = [];
    const listen = client.listen.bind(client);
    client.listen = (receiver: ValueReceiver) =>
      listen({
        message: (read, arrival, bytes) => {
          if (read.ok) received.push({ message: read.message.msg, onStreamOf: arrival?.onStreamOf });
          receiver.message(read, arrival, bytes);
        },
        closed: (reason) => receiver.closed(reason),
      });
    return { client, handed, received };
  }

  /** A Session on a recording ValueClient, its bridge, and the echo server behind; the handshake done. */
  async function handedAsValues() {
    const config = resolveConfig({});
    const toServer = memoryChannelPair();
    const { server } = fakeServer([echo, hang, ask]);
    await server.connect(new ChannelTransport(toServer.b));
    const recorded = recordingClient();
    const { session, modern } = bridgedSession(toServer.a, 'handed-as-values', config, {}, recorded.client);
    const exchange = (id: number, method: string, params: Record<string, unknown>) => ({
      request: { jsonrpc: '2.0' as const, id, method, params: { ...params, _meta: MODERN_META } },
      notify: () => undefined,
      signal: new ClientGiveUp(),
    });
    await answerOf(modern.handle(exchange(1, 'server/discover', {})));
    const close = async () => {
      await session.close();
      await server.close();
    };
    return { recorded, session, modern, exchange, close };
  }

  it('carries a call to the Session and its answer back as values: nothing else passes between them', async () => {
    const { recorded, modern, exchange, close } = await handedAsValues();
    const handedBefore = recorded.handed.length;

    const called = await answerOf(
      modern.handle(exchange(2, 'tools/call', { name: 'echo', arguments: { text: 'hi' } })),
    );
    expect(called).toMatchObject({
      id: 2,
      result: { content: [{ type: 'text', text: 'hi' }], resultType: 'complete' },
    });
    expect(recorded.handed).toHaveLength(handedBefore);
    await close();
  });

  it("hands the Session a cancellation and an answer to the server's request, and the bridge the server's request, as values", async () => {
    const { recorded, modern, exchange, close } = await handedAsValues();
    const signal = new ClientGiveUp();
    const hung = modern.handle({ ...exchange(2, 'tools/call', { name: 'hang', arguments: {} }), signal });
    // The call must have reached the server before it is cancelled: ask it something after.
    await modern.handle(exchange(5, 'tools/call', { name: 'echo', arguments: { text: 'hi' } }));
    const cancelledBefore = cancelled.length;
    signal.giveUp();
    expect(await hung).toBeUndefined();
    await vi.waitFor(() => expect(cancelled).toHaveLength(cancelledBefore + 1));

    const round = await answerOf(modern.handle(exchange(3, 'tools/call', { name: 'ask', arguments: {} })));
    const { inputRequests, requestState } = round.result as {
      inputRequests: Record<string, unknown>;
      requestState: string;
    };
    const [key] = Object.keys(inputRequests);
    const inputResponses = { [key!]: { action: 'accept', content: { name: 'Ada' } } };
    const retry = { name: 'ask', arguments: {}, requestState, inputResponses };
    const done = await answerOf(modern.handle(exchange(4, 'tools/call', retry)));
    expect(done.result).toMatchObject({ content: [{ type: 'text', text: '{"name":"Ada"}' }] });
    // The server's question reached the bridge as the very value the Session handed its client end (never
    // serialized and read again).
    const asked = recorded.received.find(
      ({ message }) => 'method' in message && message.method === 'elicitation/create',
    );
    expect(asked).toBeDefined();
    expect(recorded.handed).toContain(asked!.message);
    await close();
  });

  it("hands a call's answer to the front's sink within the Session's hand-back: no promise between them", async () => {
    const { session, modern, exchange, close } = await handedAsValues();
    const take = session.take.bind(session);
    let handingBack = false;
    session.take = (request, context) =>
      take(request, {
        caller: context.caller,
        answer: (response, raw) => {
          handingBack = true;
          try {
            context.answer(response, raw);
          } finally {
            handingBack = false;
          }
        },
      });
    const inHandBack: boolean[] = [];
    const answer = new Promise<ModernAnswer>((resolve, reject) =>
      modern.serveTo(exchange(2, 'tools/call', { name: 'echo', arguments: { text: 'hi' } }), {
        answer: (given) => {
          inHandBack.push(handingBack);
          resolve(given);
        },
        failed: reject,
      }),
    );
    expect(await answerOf(answer)).toMatchObject({ id: 2, result: { resultType: 'complete' } });
    expect(inHandBack).toEqual([true]);
    await close();
  });
});

describe('the modern bridge and the Session: a call the Session decides is a task counts as one', () => {
  it("counts a 2026-07-28 call the Session makes a task against its caller's task creation rate; a plain one not", async () => {
    const config = resolveConfig({ limits: { taskCreationRate: 1, taskCreationBurst: 1 } });
    const toServer = memoryChannelPair();
    const { server } = fakeServer([echo]);
    await server.connect(new ChannelTransport(toServer.b));
    const { session, modern } = bridgedSession(toServer.a, 'decided-tasks-counted', config, {
      limits: new Limits(config.limits),
    });
    const withTasks = {
      ...MODERN_META,
      'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
    };
    let id = 1;
    const call = (meta: object) =>
      answerOf(
        modern.handle({
          request: {
            jsonrpc: '2.0',
            id: id++,
            method: 'tools/call',
            params: { name: 'echo', arguments: { text: 'hi' }, _meta: meta },
          },
          notify: () => undefined,
          signal: new ClientGiveUp(),
          caller: 'alice',
        }),
      );
    expect((await call(withTasks)).result).toMatchObject({ resultType: 'task' });
    const second = await call(withTasks);
    expect(second.error?.message).toMatch(/taskCreationRate/);
    expect((await call(MODERN_META)).result).toMatchObject({ resultType: 'complete' });
    await session.close();
    await server.close();
  });
});

describe('the modern bridge: a call given up in the turn its CreateTaskResult is handed back', () => {
  it('cancels the task the Session made for it: the choice between tasks/cancel and a cancellation is made at once', async () => {
    const config = resolveConfig({});
    const toServer = memoryChannelPair();
    const { server } = fakeServer([hang]);
    await server.connect(new ChannelTransport(toServer.b));
    const { session, modern } = bridgedSession(toServer.a, 'given-up-as-created', config);
    const signal = new ClientGiveUp();
    // The client gives the call up in the very turn the Session hands its CreateTaskResult back, before
    // the bridge has read it.
    const take = session.take.bind(session);
    session.take = (request, context) => {
      if (request.method === 'tools/call') {
        const answer = context.answer.bind(context);
        context.answer = (response, raw) => {
          signal.giveUp();
          answer(response, raw);
        };
      }
      take(request, context);
    };
    const before = cancelled.length;
    const answer = await modern.handle({
      request: {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: {
          name: 'hang',
          arguments: {},
          _meta: {
            ...MODERN_META,
            'io.modelcontextprotocol/clientCapabilities': {
              extensions: { 'io.modelcontextprotocol/tasks': {} },
            },
          },
        },
      },
      notify: () => undefined,
      signal,
    });
    expect(answer).toBeUndefined();
    // The task nobody will see is cancelled, and with it the server's call.
    await vi.waitFor(() => expect(cancelled).toHaveLength(before + 1));
    await session.close();
    await server.close();
  });
});

describe("the modern bridge: a call whose answer came while it waited for its client's input", () => {
  /**
   * A server with tasks of its own whose tools ask for input on the call's own stream and answer only
   * once the test lets them go (`letGo`), without waiting for the input: `asks_first_task` answers with
   * the task it then makes, `asks_first` plainly. The bridge parks their answer while the call waits.
   */
  async function answeredWhileParked() {
    const letGo: (() => void)[] = [];
    const serverTasks = new InMemoryTaskStore();
    const server = new Server(
      { name: 'asks-first', version: '1' },
      {
        capabilities: { tools: {}, tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
        taskStore: serverTasks,
        taskMessageQueue: new InMemoryTaskMessageQueue(),
      },
    );
    server.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: [
        { name: 'asks_first_task', inputSchema: { type: 'object' }, execution: { taskSupport: 'optional' } },
        { name: 'asks_first', inputSchema: { type: 'object' } },
      ],
    }));
    server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
      void askName(extra).catch(() => undefined);
      await new Promise<void>((resolve) => letGo.push(resolve));
      if (request.params.task === undefined) return textResult('plain');
      return { task: await extra.taskStore!.createTask({ pollInterval: 100 }) };
    });
    const toServer = memoryChannelPair();
    await server.connect(new ChannelTransport(toServer.b, { streams: true }));
    const { session, modern } = bridgedSession(toServer.a, 'answered-while-parked');
    // What the Session handed the bridge for a call, once the bridge has taken it.
    const handedBack: Response[] = [];
    const take = session.take.bind(session);
    session.take = (request, context) => {
      if (request.method === 'tools/call') {
        const answer = context.answer.bind(context);
        context.answer = (response, raw) => {
          answer(response, raw);
          handedBack.push(response);
        };
      }
      take(request, context);
    };
    let id = 1;
    const ask = (name: string, extensions: object, more: object, signal = new ClientGiveUp()) =>
      modern.handle({
        request: {
          jsonrpc: '2.0',
          id: id++,
          method: 'tools/call',
          params: {
            name,
            arguments: {},
            ...more,
            _meta: {
              ...MODERN_META,
              'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} }, ...extensions },
            },
          },
        },
        notify: () => undefined,
        signal,
      });
    /** The call's input round, its answer parked: what its retry sends. */
    const parked = async (name: string, extensions: object) => {
      const round = await answerOf(ask(name, extensions, {}));
      expect(round.result).toMatchObject({ resultType: 'input_required' });
      const { inputRequests, requestState } = round.result as {
        inputRequests: Record<string, unknown>;
        requestState: string;
      };
      const before = handedBack.length;
      await settled(() => letGo.length === 1, 'the server waits to be let go');
      letGo.shift()!();
      await settled(() => handedBack.length === before + 1, "the call's answer taken by the bridge");
      const [key] = Object.keys(inputRequests);
      return {
        retry: { requestState, inputResponses: { [key!]: { action: 'accept', content: { name: 'Ada' } } } },
        answer: handedBack[before]!,
      };
    };
    const close = async () => {
      await session.close();
      await server.close();
      serverTasks.cleanup();
    };
    return { serverTasks, ask, parked, letGo, close };
  }

  it('cancels the task when the retry is given up as it arrives: its CreateTaskResult came already', async () => {
    const { serverTasks, ask, parked, close } = await answeredWhileParked();
    const withTasks = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
    const { retry, answer } = await parked('asks_first_task', withTasks);
    expect(answer).toMatchObject({ result: { task: { status: 'working' } } });
    const { taskId } = ('result' in answer ? answer.result.task : undefined) as { taskId: string };
    const given = new ClientGiveUp();
    given.giveUp();
    expect(await ask('asks_first_task', withTasks, retry, given)).toBeUndefined();
    // The task nobody will see is cancelled at the server.
    await vi.waitFor(async () => expect((await serverTasks.getTask(taskId))?.status).toBe('cancelled'));
    await close();
  });

  it('cancels the task when no retry comes within the wait: its CreateTaskResult came already', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const { serverTasks, parked, close } = await answeredWhileParked();
    const { answer } = await parked('asks_first_task', {
      extensions: { 'io.modelcontextprotocol/tasks': {} },
    });
    const { taskId } = ('result' in answer ? answer.result.task : undefined) as { taskId: string };
    vi.advanceTimersByTime(MODERN_INPUT_WAIT_MS);
    await vi.waitFor(async () => expect((await serverTasks.getTask(taskId))?.status).toBe('cancelled'));
    await close();
  });

  it('cancels the task once it is created when no retry comes within the wait before it', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const { serverTasks, ask, letGo, close } = await answeredWhileParked();
    const round = await answerOf(
      ask('asks_first_task', { extensions: { 'io.modelcontextprotocol/tasks': {} } }, {}),
    );
    expect(round.result).toMatchObject({ resultType: 'input_required' });
    await settled(() => letGo.length === 1, 'the server waits to be let go');
    vi.advanceTimersByTime(MODERN_INPUT_WAIT_MS);
    letGo.shift()!();
    await vi.waitFor(async () => {
      const tasks = (await serverTasks.listTasks()).tasks;
      expect(tasks.map((task) => task.status)).toEqual(['cancelled']);
    });
    await close();
  });

  it("hands a plain call's parked answer to its retry as the upstream's bytes", async () => {
    const { ask, parked, close } = await answeredWhileParked();
    const { retry } = await parked('asks_first', {});
    const done = await ask('asks_first', {}, retry);
    expect(done).toBeInstanceOf(BytesAnswer);
    expect((done as BytesAnswer).response).toMatchObject({
      result: { resultType: 'complete', content: [{ text: 'plain' }] },
    });
    await close();
  });
});

/**
 * The official tasks requester, `createTaskSessionFromClient` of @modelcontextprotocol/ext-tasks 0.2.2 on an
 * SDK v2 client (@modelcontextprotocol/client 2.4.0), through taskgate's HTTP front in front of a 2025
 * server without tasks (test/fixtures/conformance-tasks-tools.js), whose tools taskgate runs as tasks
 * (`*=optional`). Each tool call asks for a task (`preference: 'require'`), in both framings:
 *
 * - v1: the client speaks 2025-11-25 (`initialize`); taskgate's augment serves the 2025-11-25 tasks.
 * - v2: the client speaks 2026-07-28 (pinned); the session sends `tools/call` and `tasks/*` through
 *   `rawDispatch` (our own POSTs, with the routing headers) framed by `v2RequestFraming`, which declares
 *   `io.modelcontextprotocol/tasks` on each request (SEP-2663).
 *
 * Tools that complete, fail with a JSON-RPC error, answer `isError`, ask for input (elicitation/create), and
 * are cancelled. Every task message on the wire is checked against the generation's schema of
 * @modelcontextprotocol/ext-tasks (`./core/v1`, `./core/v2`), with nothing the schema would drop. Nothing
 * sleeps: a test waits on what the fixture logs through taskgate, within bounds.
 */
import {
  Client,
  StreamableHTTPClientTransport,
  type ClientCapabilities,
  type JSONRPCMessage,
} from '@modelcontextprotocol/client';
import {
  createTaskSessionFromClient,
  type ApplicationInputRequest,
  type RawClientDispatch,
  type TaskEnabledSession,
  type TaskOutcome,
} from '@modelcontextprotocol/ext-tasks/client';
import {
  CancelTaskResultV1Schema,
  CreateTaskResultV1Schema,
  GetTaskResultV1Schema,
  CallToolResultV1Schema,
} from '@modelcontextprotocol/ext-tasks/core/v1';
import {
  CallToolResultV2Schema,
  CancelTaskResultV2Schema,
  CreateTaskResultV2Schema,
  ErrorV2Schema,
  GetTaskResultV2Schema,
  UpdateTaskResultV2Schema,
} from '@modelcontextprotocol/ext-tasks/core/v2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MODERN_VERSION } from '../helpers/modern-client.js';
import { ACCEPT_BOTH } from '../helpers/raw-http.js';
import { FIXTURES, Gateway } from '../helpers/taskgate.js';
import { textOf } from '../helpers/tool-results.js';

type Framing = 'v1' | 'v2';

/** One answer on the wire: the method it answers, and its result or error. */
interface WireAnswer {
  method: string;
  result?: unknown;
  error?: unknown;
}

interface Schema {
  safeParse: (value: unknown) => { success: boolean; error?: unknown; data?: unknown };
}

/** Which schema each task answer must meet, per generation; `undefined`: not a task message. */
const SCHEMAS: Record<Framing, (answer: WireAnswer) => Schema | undefined> = {
  v1: ({ method, result }) =>
    method === 'tools/call'
      ? isObject(result) && 'task' in result
        ? CreateTaskResultV1Schema
        : CallToolResultV1Schema
      : method === 'tasks/get'
        ? GetTaskResultV1Schema
        : method === 'tasks/result'
          ? CallToolResultV1Schema
          : method === 'tasks/cancel'
            ? CancelTaskResultV1Schema
            : undefined,
  v2: ({ method, result }) =>
    method === 'tools/call'
      ? isObject(result) && result['resultType'] === 'task'
        ? CreateTaskResultV2Schema
        : CallToolResultV2Schema
      : method === 'tasks/get'
        ? GetTaskResultV2Schema
        : method === 'tasks/update'
          ? UpdateTaskResultV2Schema
          : method === 'tasks/cancel'
            ? CancelTaskResultV2Schema
            : undefined,
};

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Every task answer of `wire` meets its schema, which keeps all of it; how many were checked. */
function expectValidWire(framing: Framing, wire: readonly WireAnswer[]): number {
  let checked = 0;
  for (const answer of wire) {
    if (answer.error !== undefined) {
      const parsed = ErrorV2Schema.safeParse(answer.error);
      expect(parsed.error, `${answer.method} error ${JSON.stringify(answer.error)}`).toBeUndefined();
      continue;
    }
    const schema = SCHEMAS[framing](answer);
    if (schema === undefined) continue;
    const parsed = schema.safeParse(answer.result);
    expect(parsed.error, `${answer.method} ${JSON.stringify(answer.result)}`).toBeUndefined();
    expect(parsed.data, `${answer.method}: what the schema keeps`).toEqual(answer.result);
    checked++;
  }
  return checked;
}

/** The ext-tasks session of one framing through the gateway, and what crossed the wire. */
interface Requester {
  session: TaskEnabledSession;
  client: Client;
  /** The answers the client got, in order (v1: the SDK's transport; v2: rawDispatch), since `mark()`. */
  wire: () => WireAnswer[];
  mark: () => void;
  /** Each input request the session handed the application. */
  inputs: ApplicationInputRequest[];
  close: () => Promise<void>;
}

/** Answers every elicitation with `{confirm: true}` (confirm_delete's yes/no form), and records it. */
function inputHandler(inputs: ApplicationInputRequest[]) {
  return async <TRequest extends ApplicationInputRequest>(request: TRequest) => {
    inputs.push(request);
    if (request.kind !== 'elicitation') throw new Error(`unexpected input request ${request.kind}`);
    return { action: 'accept', content: { confirm: true } } as never;
  };
}

/** The answers a requester saw on the wire, since the last mark. */
class WireLog {
  answers: WireAnswer[] = [];
}

function requester(
  session: Requester['session'],
  client: Client,
  log: WireLog,
  inputs: ApplicationInputRequest[],
): Requester {
  return {
    session,
    client,
    wire: () => log.answers,
    mark: () => (log.answers = []),
    inputs,
    close: async () => {
      await session.close();
      await client.close();
    },
  };
}

/** v1: a 2025-11-25 client; the SDK transport's messages are recorded as they arrive. */
async function requesterV1(url: URL, declareTasks: boolean): Promise<Requester> {
  const client = new Client(
    { name: 'ext-tasks-v1', version: '1.0.0' },
    {
      capabilities: {
        elicitation: { form: {} },
        ...(declareTasks ? { tasks: {} } : {}),
      } as ClientCapabilities,
    },
  );
  const transport = new StreamableHTTPClientTransport(url);
  await client.connect(transport);
  const methods = new Map<string | number, string>();
  const log = new WireLog();
  const send = transport.send.bind(transport);
  transport.send = (message: JSONRPCMessage, options) => {
    if ('method' in message && 'id' in message) methods.set(message.id, message.method);
    return send(message, options);
  };
  const deliver = transport.onmessage!;
  transport.onmessage = (message: JSONRPCMessage) => {
    if ('id' in message && !('method' in message)) {
      const method = methods.get(message.id!) ?? '?';
      log.answers.push(
        'error' in message ? { method, error: message.error } : { method, result: message.result },
      );
    }
    deliver(message);
  };
  const inputs: ApplicationInputRequest[] = [];
  const session = createTaskSessionFromClient(client, {
    endpointId: 'taskgate-v1',
    onInputRequest: inputHandler(inputs),
  });
  return requester(session, client, log, inputs);
}

/** The name-shaped field a 2026-07-28 request mirrors into Mcp-Name (tasks.md "Routing Headers"). */
function mcpName(method: string, params: Record<string, unknown>): string | undefined {
  const value =
    method === 'tools/call' ? params['name'] : method.startsWith('tasks/') ? params['taskId'] : undefined;
  return typeof value === 'string' ? value : undefined;
}

/** The JSON-RPC answer with `id` in a POST's response, JSON or an SSE stream. */
async function answerOf(response: Response, id: number): Promise<Record<string, unknown>> {
  const body = await response.text();
  const messages = (response.headers.get('content-type') ?? '').includes('text/event-stream')
    ? body
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line) => JSON.parse(line.slice(5)) as unknown)
    : [JSON.parse(body) as unknown];
  const answer = messages.find((message) => isObject(message) && message['id'] === id);
  if (!isObject(answer)) throw new Error(`HTTP ${response.status}: no answer to request ${id}: ${body}`);
  return answer;
}

/** v2: a pinned 2026-07-28 client; task traffic goes through our rawDispatch, recorded. */
async function requesterV2(url: URL): Promise<Requester> {
  const client = new Client(
    { name: 'ext-tasks-v2', version: '1.0.0' },
    { capabilities: {}, versionNegotiation: { mode: { pin: MODERN_VERSION } } },
  );
  await client.connect(new StreamableHTTPClientTransport(url));
  const log = new WireLog();
  let nextId = 1;
  const rawDispatch: RawClientDispatch = async (request, options) => {
    if (!isObject(request) || typeof request['method'] !== 'string') throw new Error('not a request');
    const method = request['method'];
    const params = isObject(request['params']) ? request['params'] : {};
    const id = nextId++;
    const name = mcpName(method, params);
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: ACCEPT_BOTH,
      'mcp-protocol-version': MODERN_VERSION,
      'mcp-method': method,
      ...(name === undefined ? {} : { 'mcp-name': name }),
    };
    for (const [header, value] of Object.entries(options?.context?.headers ?? {}))
      headers[header.toLowerCase()] = value;
    const response = await fetch(url, {
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
      ...(options?.signal ? { signal: options.signal } : {}),
    });
    const answer = await answerOf(response, id);
    if (isObject(answer['error'])) {
      log.answers.push({ method, error: answer['error'] });
      return { kind: 'error', error: answer['error'] as never };
    }
    log.answers.push({ method, result: answer['result'] });
    return { kind: 'result', result: answer['result'] as never };
  };
  const inputs: ApplicationInputRequest[] = [];
  const session = createTaskSessionFromClient(client, {
    endpointId: 'taskgate-v2',
    onInputRequest: inputHandler(inputs),
    rawDispatch,
    v2RequestFraming: {
      protocolVersion: MODERN_VERSION,
      clientInfo: { name: 'ext-tasks-v2', version: '1.0.0' },
      clientCapabilities: { elicitation: { form: {} } },
    },
  });
  return requester(session, client, log, inputs);
}

/** Calls `tool` as a task (the session refuses to run it otherwise) and waits for its outcome. */
async function runAsTask(
  requester: Requester,
  tool: string,
  args: Record<string, string | number>,
  whileRunning?: (cancel: () => Promise<void>) => Promise<void>,
): Promise<TaskOutcome<unknown>> {
  const execution = await requester.session.callTool(tool, args, {
    task: { preference: 'require' },
    requestTimeoutMs: 15_000,
  });
  expect(execution.kind).toBe('task');
  if (whileRunning) await whileRunning(() => execution.cancel());
  const { outcome } = await execution.settle({ signal: AbortSignal.timeout(20_000) });
  return outcome;
}

/** The result of a completed outcome; fails with the error (and the wire) of any other. */
function completed(outcome: TaskOutcome<unknown>, wire: readonly WireAnswer[]): object {
  if (outcome.status === 'completed') return outcome.result as object;
  const error = outcome.status === 'failed' ? outcome.error : undefined;
  throw new Error(
    `the task ended ${outcome.status}${error ? `: ${error.message} (code ${error.code}, data ${JSON.stringify(error.data)})` : ''}; wire: ${JSON.stringify(wire)}`,
  );
}

describe.each(['v1', 'v2'] as const)('the ext-tasks client with %s framing through taskgate', (framing) => {
  let gateway: Gateway | undefined;
  let requester: Requester;

  beforeAll(async () => {
    gateway = await Gateway.start(
      [process.execPath, FIXTURES.conformanceTasks],
      ['--tool-task-support', '*=optional'],
    );
    requester = await (framing === 'v1' ? requesterV1(gateway.url, true) : requesterV2(gateway.url));
  });
  afterAll(async () => {
    await requester?.close();
    await gateway?.stop();
  });

  it(`sees the ${framing} generation of tasks`, () => {
    const { client, session } = requester;
    expect(client.getProtocolEra()).toBe(framing === 'v1' ? 'legacy' : 'modern');
    if (framing === 'v1') expect(client.getServerCapabilities()).toHaveProperty('tasks.requests.tools.call');
    else
      expect(client.getServerCapabilities()?.extensions).toEqual(
        expect.objectContaining({ 'io.modelcontextprotocol/tasks': {} }),
      );
    expect(session.capabilities).toMatchObject({ execution: true, cancellation: true });
  });

  it('a tool that completes: the task completes with its result', async () => {
    requester.mark();
    const outcome = await runAsTask(requester, 'slow_compute', { seconds: 0, label: `${framing}-complete` });
    expect(textOf(completed(outcome, requester.wire()))).toBe(`computed ${framing}-complete after 0 s`);
    expect(expectValidWire(framing, requester.wire())).toBeGreaterThanOrEqual(2);
  });

  it('a tool that answers with a JSON-RPC error: the task fails with that error', async () => {
    requester.mark();
    const outcome = await runAsTask(requester, 'protocol_error_job', {});
    expect(outcome.status).toBe('failed');
    if (outcome.status !== 'failed') return;
    if (framing === 'v2') {
      expect(outcome.error.code).toBe(-32603);
      expect(outcome.error.message).toBe('protocol_error_job broke, as it always does');
    } else {
      // The v1 driver stops at the failed status and throws its statusMessage; it never reads tasks/result.
      expect(outcome.error.message).toContain('protocol_error_job broke, as it always does');
    }
    expectValidWire(framing, requester.wire());
  });

  it(
    framing === 'v1'
      ? 'a tool that answers isError: the 2025-11-25 task fails (its driver does not fetch the result)'
      : 'a tool that answers isError: the task completes with the isError result (tasks.md "Task Execution Errors")',
    async () => {
      requester.mark();
      const outcome = await runAsTask(requester, 'failing_job', {});
      if (framing === 'v1') {
        expect(outcome.status).toBe('failed');
      } else {
        const result = completed(outcome, requester.wire());
        expect(result).toMatchObject({ isError: true });
        expect(textOf(result)).toBe('failing_job failed, as it always does');
      }
      expectValidWire(framing, requester.wire());
    },
  );

  it('a tool that asks for input: the session answers the elicitation and the task completes with it', async () => {
    requester.mark();
    requester.inputs.length = 0;
    const filename = `${framing}-input.txt`;
    const outcome = await runAsTask(requester, 'confirm_delete', { filename });
    // How the task ended first: a failure then names its outcome and the wire, not only the inputs.
    const result = completed(outcome, requester.wire());
    expect(requester.inputs).toEqual([
      expect.objectContaining({
        kind: 'elicitation',
        params: expect.objectContaining({ message: `Delete ${filename}?` }),
      }),
    ]);
    expect(textOf(result)).toBe(`Deleted ${filename}`);
    expectValidWire(framing, requester.wire());
  });

  it('a tool that is cancelled: the task ends cancelled, and the server stops the call', async () => {
    requester.mark();
    const label = `${framing}-cancel`;
    const outcome = await runAsTask(requester, 'slow_compute', { seconds: 60, label }, async (cancel) => {
      await gateway!.logged(`slow_compute(${label}) started`);
      await cancel();
    });
    expect(outcome.status).toBe('cancelled');
    await gateway!.logged(`slow_compute(${label}) aborted`);
    expectValidWire(framing, requester.wire());
  });
});

/**
 * The ext-tasks requester as shipped declares no `tasks` capability of its own (a 2025-11-25 client declares
 * one only to receive tasks, `bindTaskReceiver`); the server's `tasks.requests.tools.call` and each tool's
 * `execution.taskSupport` are what a requester goes by (2025-11-25 basic/utilities/tasks "Tool-Level
 * Negotiation"). taskgate marks each tool's taskSupport for such a client too (only `required` is not shown
 * to it: it gets the plain call), so the requester as shipped gets its task.
 */
describe('the ext-tasks client with v1 framing and no tasks capability of its own, through taskgate', () => {
  let gateway: Gateway | undefined;
  let requester: Requester | undefined;

  beforeAll(async () => {
    gateway = await Gateway.start(
      [process.execPath, FIXTURES.conformanceTasks],
      ['--tool-task-support', '*=optional'],
    );
    requester = await requesterV1(gateway.url, false);
  });
  afterAll(async () => {
    await requester?.close();
    await gateway?.stop();
  });

  it('runs a task-optional tool as a task when asked to', async () => {
    const outcome = await runAsTask(requester!, 'slow_compute', { seconds: 0, label: 'v1-undeclared' });
    completed(outcome, requester!.wire());
  });
});

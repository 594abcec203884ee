/**
 * taskgate's core in the test's own process: a real SDK Client, taskgate's Session and a real SDK Server,
 * joined by two memory channel pairs, with a MemoryTaskStore. Every message the client or the server
 * receives is schema-checked (CheckedTransport); `violations` collects what broke a schema.
 *
 *   const gate = await inProcessGateway({ tools: [{ name: 'echo', run: (args) => text(args.text) }] });
 *
 * Build it after vi.useFakeTimers() where time matters: the store, the limits and the session read the
 * clock they are built with.
 */
import { setImmediate as realSetImmediate } from 'node:timers';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTaskMessageQueue, InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { RequestHandlerExtra, RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  CallToolRequestSchema,
  ElicitResultSchema,
  ErrorCode,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
  type CallToolResult,
  type ClientCapabilities,
  type ServerNotification,
  type ServerRequest,
} from '@modelcontextprotocol/sdk/types.js';
import { pino } from 'pino';
import { resolveConfig } from '../../src/config/load.js';
import { Policy } from '../../src/config/policy.js';
import type { ConfigInput } from '../../src/config/schema.js';
import type { TaskSightings } from '../../src/observability/task-board.js';
import { Limits, type LimitKind } from '../../src/security/limits.js';
import { Session } from '../../src/session/session.js';
import { MemoryTaskStore } from '../../src/tasks/memory-store.js';
import { memoryChannelPair } from '../../src/transport/memory-channel.js';
import { ChannelTransport } from './channel-transport.js';
import { CheckedTransport } from './checked-transport.js';
import type { Inbox } from './inbox.js';

export type ToolExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;

export interface FakeTool {
  name: string;
  /** As the server lists it. A server with any tool that has one declares tasks and runs them itself. */
  taskSupport?: 'required' | 'optional' | 'forbidden';
  /** As the server lists it; `{ type: 'object' }` unless given. */
  inputSchema?: Record<string, unknown>;
  /** Runs a plain call, or the work of the server's own task. A thrown McpError is the call's error. */
  run(args: Record<string, unknown>, extra: ToolExtra): Promise<CallToolResult> | CallToolResult;
}

export interface GatewayOptions {
  /** taskgate's settings, as a config file would give them (an upstream.command there is never run). */
  config?: ConfigInput;
  tools?: FakeTool[];
  /** The client declares tasks (true unless set). */
  clientTasks?: boolean;
  /** Replaces the client's default capabilities (which offer elicitation and sampling). */
  clientCapabilities?: ClientCapabilities;
  /** The server's messages about a request arrive saying whose they are, as over Streamable HTTP. */
  upstreamStreams?: boolean;
  /** A real server in place of the fake one (`tools` is then unused), e.g. server-everything's. */
  server?: Server;
  /** Told of the tasks that pass, as the dashboard is. */
  sightings?: TaskSightings;
}

export interface Gateway {
  client: Client;
  /** What the client received, checked against the schemas. */
  clientTransport: CheckedTransport;
  server: Server;
  /** What the server received from taskgate. */
  serverTransport: CheckedTransport;
  /** The server's own task store, where it runs tasks itself. */
  serverTasks: InMemoryTaskStore | undefined;
  session: Session;
  store: MemoryTaskStore;
  /** The per-caller limits refused, in order. */
  refusals: LimitKind[];
  /** Schema violations seen on either side. */
  readonly violations: string[];
  close(): Promise<void>;
}

/** The pollInterval the server gives its own tasks. */
export const SERVER_POLL_INTERVAL_MS = 100;

const TASK_CLIENT: ClientCapabilities = {
  tasks: { list: {}, cancel: {}, requests: {} },
  elicitation: { form: {} },
  sampling: {},
};
const PLAIN_CLIENT: ClientCapabilities = { elicitation: { form: {} }, sampling: {} };

export const textResult = (text: string): CallToolResult => ({ content: [{ type: 'text', text }] });

/** Progress 1 on the call's progress token, when its client gave one. */
export async function sendProgress(extra: ToolExtra): Promise<void> {
  const progressToken = extra._meta?.progressToken;
  if (progressToken === undefined) return;
  await extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress: 1 } });
}

/** A tool's request for a name (elicitation/create, form mode), answered by the client. */
export function askName(extra: ToolExtra, options?: RequestOptions) {
  return extra.sendRequest(
    {
      method: 'elicitation/create',
      params: {
        mode: 'form',
        message: 'name?',
        requestedSchema: { type: 'object', properties: { name: { type: 'string' } } },
      },
    },
    ElicitResultSchema,
    options,
  );
}

export async function inProcessGateway(options: GatewayOptions = {}): Promise<Gateway> {
  const config = resolveConfig(options.config ?? {});
  const tools = options.tools ?? [];
  const toClient = memoryChannelPair();
  const toServer = memoryChannelPair();

  const { server, serverTasks } =
    options.server === undefined ? fakeServer(tools) : { server: options.server, serverTasks: undefined };
  const serverTransport = new CheckedTransport(
    new ChannelTransport(toServer.b, { streams: options.upstreamStreams ?? false }),
  );
  await server.connect(serverTransport);

  const store = new MemoryTaskStore({
    maxTasks: config.tasks.maxTasks,
    maxResultBytes: config.tasks.maxResultBytes,
  });
  const refusals: LimitKind[] = [];
  const session = new Session(
    toClient.b,
    toServer.a,
    {
      id: 'in-process',
      config,
      policy: new Policy(config),
      store,
      logger: pino({ level: 'silent' }),
      limits: new Limits(config.limits, (kind) => refusals.push(kind)),
      ...(options.sightings === undefined ? {} : { sightings: options.sightings }),
    },
    { upstreamGone: () => undefined, closed: () => undefined },
  );
  session.start();

  const clientTransport = new CheckedTransport(new ChannelTransport(toClient.a));
  const client = new Client(
    { name: 'in-process-client', version: '1.0.0' },
    {
      capabilities:
        options.clientCapabilities ?? (options.clientTasks === false ? PLAIN_CLIENT : TASK_CLIENT),
    },
  );
  await client.connect(clientTransport);

  return {
    client,
    clientTransport,
    server,
    serverTransport,
    serverTasks,
    session,
    store,
    refusals,
    get violations() {
      return [...clientTransport.violations, ...serverTransport.violations];
    },
    close: async () => {
      await client.close();
      await session.close();
      await server.close();
      serverTasks?.cleanup();
      await store.close();
    },
  };
}

/**
 * A server built on the SDK's low-level Server, so that a thrown McpError reaches taskgate as it is;
 * `instructions` as its initialize gives them.
 */
export function fakeServer(
  tools: FakeTool[],
  instructions?: string,
): {
  server: Server;
  serverTasks: InMemoryTaskStore | undefined;
} {
  const native = tools.some((tool) => tool.taskSupport !== undefined);
  const serverTasks = native ? new InMemoryTaskStore() : undefined;
  const server = new Server(
    { name: 'in-process-server', version: '1.0.0' },
    {
      capabilities: {
        tools: {},
        ...(native ? { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } } : {}),
      },
      ...(serverTasks ? { taskStore: serverTasks, taskMessageQueue: new InMemoryTaskMessageQueue() } : {}),
      ...(instructions === undefined ? {} : { instructions }),
    },
  );
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: tools.map(({ name, taskSupport, inputSchema }) => ({
      name,
      inputSchema: { type: 'object' as const, ...inputSchema },
      ...(taskSupport === undefined ? {} : { execution: { taskSupport } }),
    })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const { name, task } = request.params;
    const tool = tools.find((candidate) => candidate.name === name);
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
    const args = request.params.arguments ?? {};
    if (task === undefined || !extra.taskStore) {
      if (tool.taskSupport === 'required') {
        throw new McpError(ErrorCode.MethodNotFound, `Tool ${name} must be called as a task`);
      }
      return tool.run(args, extra);
    }
    const taskStore = extra.taskStore;
    const created = await taskStore.createTask({
      pollInterval: SERVER_POLL_INTERVAL_MS,
      ...(task.ttl === undefined ? {} : { ttl: task.ttl }),
    });
    const work = async (): Promise<void> => {
      const result = await Promise.resolve(tool.run(args, extra)).catch((error: unknown): CallToolResult => ({
        isError: true,
        ...textResult(String(error)),
      }));
      const current = await taskStore.getTask(created.taskId);
      if (current.status === 'working' || current.status === 'input_required') {
        await taskStore.storeTaskResult(created.taskId, result.isError ? 'failed' : 'completed', result);
      }
    };
    // After the CreateTaskResult has gone out (a timer of the real clock: fake timers never fire it).
    realSetImmediate(() => void work());
    return { task: created };
  });
  return { server, serverTasks };
}

/**
 * A fake server (an `echo` answering `{name}: {text}`) with one resource, `mem://doc`, which it lets a
 * client subscribe to and tells `asked` of each subscribe and unsubscribe (`a subscribe mem://doc`); it
 * declares resource and tool list changes, for the test to send.
 */
export function subscribableServer(name: string, asked: Inbox<string>): Server {
  const { server } = fakeServer([
    { name: 'echo', run: (args) => textResult(`${name}: ${String(args.text)}`) },
  ]);
  server.registerCapabilities({
    tools: { listChanged: true },
    resources: { subscribe: true, listChanged: true },
  });
  server.setRequestHandler(ListResourcesRequestSchema, () => ({
    resources: [{ uri: 'mem://doc', name: 'doc' }],
  }));
  server.setRequestHandler(SubscribeRequestSchema, (request) => {
    asked.push(`${name} subscribe ${request.params.uri}`);
    return {};
  });
  server.setRequestHandler(UnsubscribeRequestSchema, (request) => {
    asked.push(`${name} unsubscribe ${request.params.uri}`);
    return {};
  });
  return server;
}

/** A task-aware SDK Client connected straight to `server` over a memory channel pair: the reference. */
export async function directConnection(server: Server): Promise<{
  client: Client;
  transport: CheckedTransport;
  close(): Promise<void>;
}> {
  const pair = memoryChannelPair();
  await server.connect(new ChannelTransport(pair.b));
  const transport = new CheckedTransport(new ChannelTransport(pair.a));
  const client = new Client({ name: 'in-process-direct', version: '1.0.0' }, { capabilities: TASK_CLIENT });
  await client.connect(transport);
  return {
    client,
    transport,
    close: async () => {
      await client.close();
      await server.close();
    },
  };
}

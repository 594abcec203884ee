/**
 * A raw client in memory before taskgate's Session and a real SDK Server (in-process.ts's fakeServer):
 * for what no SDK client sends — malformed answers, requests that do not wait for initialize's answer.
 */
import { pino } from 'pino';
import { resolveConfig } from '../../src/config/load.js';
import { Policy } from '../../src/config/policy.js';
import type { ConfigInput } from '../../src/config/schema.js';
import { Session } from '../../src/session/session.js';
import { MemoryTaskStore } from '../../src/tasks/memory-store.js';
import type { Channel } from '../../src/transport/channel.js';
import { memoryChannelPair } from '../../src/transport/memory-channel.js';
import { ChannelTransport } from './channel-transport.js';
import { fakeServer, type FakeTool } from './in-process.js';
import { Inbox } from './inbox.js';
import { INITIALIZE } from './taskgate.js';

type Json = Record<string, unknown>;

export interface RawSession {
  session: Session;
  store: MemoryTaskStore;
  /** The server's own task store, where it runs tasks itself. */
  serverTasks: ReturnType<typeof fakeServer>['serverTasks'];
  close(): Promise<void>;
}

/** A Session for `client` (any Channel: a memory one, an HTTP front's session) before a real SDK Server. */
export async function sessionFor(
  client: Channel,
  tools: FakeTool[],
  configInput: ConfigInput = {},
): Promise<RawSession> {
  const config = resolveConfig(configInput);
  const toServer = memoryChannelPair();
  const { server, serverTasks } = fakeServer(tools);
  await server.connect(new ChannelTransport(toServer.b));
  const store = new MemoryTaskStore({ maxTasks: 10, maxResultBytes: 1024 * 1024 });
  const session = new Session(
    client,
    toServer.a,
    { id: 'raw', config, policy: new Policy(config), store, logger: pino({ level: 'silent' }) },
    { upstreamGone: () => undefined, closed: () => undefined },
  );
  session.start();
  return {
    session,
    store,
    serverTasks,
    close: async () => {
      await session.close();
      await server.close();
      serverTasks?.cleanup();
      await store.close();
    },
  };
}

export interface RawClient extends RawSession {
  /** Everything taskgate sent the client, parsed. */
  messages: Inbox<Json>;
  write(line: string): void;
  send(message: Json): void;
  /** The response (not a request of the same id) to `id`. */
  response(id: string | number | null): Promise<Json>;
  /** The responses to `id` so far. */
  responsesTo(id: unknown): Json[];
  /** initialize (id "init", task-aware, with elicitation and sampling) and initialized. */
  initialize(): Promise<void>;
}

export async function rawClient(tools: FakeTool[], config?: ConfigInput): Promise<RawClient> {
  const pair = memoryChannelPair();
  const opened = await sessionFor(pair.b, tools, config);
  const messages = new Inbox<Json>();
  pair.a.start({
    message: (raw) => messages.push(JSON.parse(raw.toString()) as Json),
    malformed: () => undefined,
    closed: () => undefined,
  });
  const isResponse = (m: Json): boolean => !('method' in m);
  const client: RawClient = {
    ...opened,
    messages,
    write: (line) => pair.a.sendRaw(line),
    send: (message) => pair.a.sendRaw(JSON.stringify(message)),
    response: (id) =>
      messages.waitFor((m) => m.id === id && isResponse(m), `the response to ${JSON.stringify(id)}`),
    responsesTo: (id) => messages.items.filter((m) => m.id === id && isResponse(m)),
    initialize: async () => {
      client.send(INITIALIZE);
      await client.response('init');
      client.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    },
  };
  return client;
}

/**
 * taskgate's modern bridge in the test's own process: the test plays the 2026-07-28 client by handing the
 * bridge exchanges; behind it a real Session and a real SDK 1.x Server (in-process.ts's fakeServer) over
 * a memory channel pair. Build it after vi.useFakeTimers() where time matters.
 */
import { pino } from 'pino';
import { resolveConfig } from '../../src/config/load.js';
import { Policy } from '../../src/config/policy.js';
import type { ConfigInput } from '../../src/config/schema.js';
import type { JsonObject } from '../../src/protocol/messages.js';
import type {
  GiveUpSignal,
  ModernAnswer,
  ModernExchange,
  ModernServe,
} from '../../src/protocol/modern/exchange.js';
import { bridgeSession } from '../../src/modern/shared-bridge.js';
import { MemoryTaskStore } from '../../src/tasks/memory-store.js';
import { memoryChannelPair } from '../../src/transport/memory-channel.js';
import { ChannelTransport } from './channel-transport.js';
import { CheckedTransport } from './checked-transport.js';
import { fakeServer, type FakeTool } from './in-process.js';

export const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } },
  'io.modelcontextprotocol/clientInfo': { name: 'in-process-modern', version: '1' },
};

export interface InProcessBridge {
  /** Sends one request as a modern client would; `abort` gives it up. */
  ask(
    method: string,
    params: JsonObject,
    options?: {
      signal?: GiveUpSignal;
      notified?: object[];
      principal?: string;
      /** Whom per-caller limits count it against (the front's identity or client address). */
      caller?: string;
      /** `Mcp-Param-*` headers by lower-case name, as the HTTP front hands them. */
      paramHeaders?: ReadonlyMap<string, string>;
    },
  ): Promise<ModernAnswer>;
  /** The bridge itself, as a front hands it exchanges, its answer awaited. */
  handle(exchange: ModernExchange): Promise<ModernAnswer>;
  /** The same, its answer into the sink (HttpFront's `modern` hook). */
  serveTo: ModernServe;
  serverViolations(): unknown[];
  close(): Promise<void>;
}

/**
 * `logging`: the server declares logging, and what it sends about a request goes with that request's
 * route, as Streamable HTTP carries it (the Session then knows whose log line it is).
 */
export async function inProcessBridge(
  tools: FakeTool[],
  input: ConfigInput = {},
  { logging = false }: { logging?: boolean } = {},
): Promise<InProcessBridge> {
  const config = resolveConfig(input);
  const toServer = memoryChannelPair();
  const { server } = fakeServer(tools);
  if (logging) server.registerCapabilities({ logging: {} });
  const serverTransport = new CheckedTransport(new ChannelTransport(toServer.b, { streams: logging }));
  await server.connect(serverTransport);
  const store = new MemoryTaskStore({ maxTasks: 100, maxResultBytes: 1_000_000 });
  const { bridge, session } = bridgeSession(
    toServer.a,
    { id: 'in-process-modern', config, policy: new Policy(config), store, logger: pino({ level: 'silent' }) },
    { upstreamGone: () => undefined, closed: () => undefined },
  );
  let nextId = 1;
  return {
    ask: (method, params, options = {}) =>
      bridge.handle({
        request: { jsonrpc: '2.0', id: nextId++, method, params },
        notify: (message) => options.notified?.push(message),
        signal: options.signal ?? new AbortController().signal,
        ...(options.principal === undefined ? {} : { principal: options.principal }),
        ...(options.caller === undefined ? {} : { caller: options.caller }),
        ...(options.paramHeaders === undefined ? {} : { paramHeaders: options.paramHeaders }),
      }),
    handle: (exchange) => bridge.handle(exchange),
    serveTo: bridge.serveTo,
    serverViolations: () => [...serverTransport.violations],
    close: async () => {
      await session.close();
      await server.close();
      await store.close();
    },
  };
}

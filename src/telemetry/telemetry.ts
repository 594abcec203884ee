/**
 * What the rest of taskgate sees of tracing, with nothing of OpenTelemetry in it: the fronts and the
 * upstream wrap their channels and hooks through `telemetry()`, which is the identity until
 * start.ts has installed the real one (sdk.ts, loaded only when telemetry is on). Off, a call costs one
 * function call that hands back what it was given.
 */
import type { IncomingMessage } from 'node:http';
import type { ModernServe } from '../protocol/modern/exchange.js';
import type { TaskRecord } from '../tasks/state.js';
import type { NewTask } from '../tasks/store.js';
import type { Channel } from '../transport/channel.js';

/** What a span cannot read off the messages: how the peer is reached, and the MCP session, if any. */
export interface ChannelFacts {
  /** `pipe` for stdio, `tcp` for HTTP (semconv `network.transport`). */
  transport: 'pipe' | 'tcp';
  /** The Mcp-Session-Id of a 2025 Streamable HTTP session. */
  sessionId?: string;
  /** The upstream's URL, for `server.address` and `server.port`. */
  serverUrl?: string;
  /** Which server of `upstreams` the upstream is (several servers behind one endpoint). */
  server?: string;
}

export interface Telemetry {
  /** A channel to a client: SERVER spans for what it asks, CLIENT spans for what it is asked. */
  front(channel: Channel, facts: ChannelFacts): Channel;
  /** A channel to an upstream server: CLIENT spans for what is sent to it, SERVER spans for its requests. */
  upstream(channel: Channel, facts: ChannelFacts): Channel;
  /** The 2026-07-28 requests of the HTTP front, one SERVER span each. */
  modern(serve: ModernServe): ModernServe;
  /** Runs `handle` with the trace context of an HTTP request's `traceparent` header, if it has one. */
  inRequestContext<T>(req: IncomingMessage, handle: () => T): T;
  /**
   * Creates a task with `create`: on, the task's span opens first and the task is created with its
   * traceparent, which the store keeps with the record for every replica.
   */
  createTask(task: NewTask, create: (task: NewTask) => Promise<TaskRecord>): Promise<TaskRecord>;
  taskChanged(record: TaskRecord): void;
  /** A task read in answer to a request: that request's span links to the task's, wherever it began. */
  taskSeen(record: TaskRecord): void;
  /** An extension task's call was answered with the task, its promoteAfter over. */
  taskPromoted(taskId: string): void;
  /** The request being served is sent on to the server `name` of `upstreams`: its span names it. */
  routed(name: string): void;
  /** Exports what is left, within a bounded wait. */
  shutdown(): Promise<void>;
}

export const NO_TELEMETRY: Telemetry = {
  front: (channel) => channel,
  upstream: (channel) => channel,
  modern: (serve) => serve,
  inRequestContext: (_req, handle) => handle(),
  createTask: (task, create) => create(task),
  taskChanged: () => undefined,
  taskSeen: () => undefined,
  taskPromoted: () => undefined,
  routed: () => undefined,
  shutdown: async () => undefined,
};

let current: Telemetry = NO_TELEMETRY;

/** The process's telemetry: NO_TELEMETRY unless start.ts turned it on. */
export function telemetry(): Telemetry {
  return current;
}

export function install(active: Telemetry): void {
  current = active;
}

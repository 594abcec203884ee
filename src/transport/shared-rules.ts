/**
 * The contract between a shared upstream's multiplexer (shared-upstream.ts: the wire) and the session
 * layer's rules for the sessions on it (src/session/shared-sessions.ts): who owns each of the server's
 * tasks, the sessions' log levels, their resource subscriptions. The multiplexer asks the rules and does
 * what they say; the rules reach the wire only through the hosts given them here.
 */
import type { Logger } from 'pino';
import type { JsonObject, Request, Response } from '../protocol/messages.js';
import type { Port } from './shared-port.js';

type Key = string | number;

/** A client session's port, as the session layer's rules see it: a handle they key their records by. */
export type SharedPort = Port;
/** A progress token as the shared connection carries it. */
export type WireToken = Key;
/** A request's id on the shared connection. */
export type WireId = Key;

/** What the task rules may ask of the multiplexer. */
export interface TaskHost {
  /** Whether the port's session is still here (not closed). */
  isOpen(port: SharedPort): boolean;
  /** The task this wire progress token was kept for has ended: its progress goes nowhere now. */
  progressEnded(token: WireToken): void;
}

/**
 * Which session owns each of the server's own tasks: session logic, kept in the session layer
 * (src/session/shared-tasks.ts). The multiplexer asks it and delivers what it says; it sends nothing.
 */
export interface SharedTaskRules {
  bind(host: TaskHost): void;
  /** The answer a port's tasks/get, tasks/result or tasks/cancel gets instead of going upstream, if any. */
  refusal(port: SharedPort, request: Request): Response | undefined;
  /**
   * The server answered a request of `port` (undefined: nobody waits for it). `keepsProgress`: the wire
   * progress token goes on (a task was created with it); `result`: what the port is given instead.
   */
  answered(
    port: SharedPort | undefined,
    method: string,
    result: JsonObject | undefined,
    progress: WireToken | undefined,
  ): { keepsProgress: boolean; result?: JsonObject };
  /** The port a server's message about a task goes to; a reason when that session closed; undefined: none. */
  routeOf(taskId: string): SharedPort | string | undefined;
  /** The port a notifications/tasks/status goes to, if any. */
  status(params: JsonObject): SharedPort | undefined;
  detached(port: SharedPort): void;
  upstreamClosed(): void;
}

/**
 * Sends a request upstream for `port` (undefined: nobody's) under a wire id of its own, which `registered`
 * is told before it is sent; the answer goes to the port.
 */
type Ask = (port: SharedPort | undefined, request: Request, registered?: (wireId: WireId) => void) => void;

/** What the log level rules may ask of the multiplexer. */
export interface LevelHost {
  readonly logger: Logger;
  /** The ports open now. */
  ports(): Iterable<SharedPort>;
  ask: Ask;
}

/** What the subscription rules may ask of the multiplexer. */
export interface SubscriptionHost {
  ask: Ask;
  /** The request stays upstream, and its answer goes to nobody. */
  release(wireId: WireId): void;
  /** The request is forgotten, and cancelled upstream (unless the upstream is gone). */
  drop(wireId: WireId, reason: string): void;
}

/**
 * The sessions' resource subscriptions against the server's one per URI (src/session/shared-subscriptions.ts):
 * who is subscribed, and which subscribe goes upstream or waits for another's.
 */
export interface SharedSubscriptionRules {
  bind(host: SubscriptionHost): void;
  /** A port's resources/subscribe or resources/unsubscribe: answered here, or asked of the server. */
  subscribe(port: SharedPort, request: Request): void;
  unsubscribe(port: SharedPort, request: Request): void;
  /** The server answered a request (a subscribe or not) sent under `wireId`. */
  answered(wireId: WireId, response: Response): void;
  /** A port cancelled its request `key`: true if the rules settled it (it waited for another's subscribe). */
  cancelled(port: SharedPort, key: Key): boolean;
  /** The port of request `wireId` no longer waits for it: true if the rules settled it (a subscribe). */
  orphaned(wireId: WireId): boolean;
  subscribers(uri: string): Iterable<SharedPort>;
  /** A port is closing, and once its requests are withdrawn (when the upstream is still here), it left. */
  leaving(port: SharedPort): void;
  left(port: SharedPort): void;
  upstreamClosed(): void;
}

/**
 * The sessions' log levels against the server's one (src/session/shared-levels.ts): which level the server
 * is kept at, and which messages each session wants.
 */
export interface SharedLevelRules {
  bind(host: LevelHost): void;
  /** A port's logging/setLevel: answered here, or asked of the server with `host.ask`. */
  setLevel(port: SharedPort, request: Request): void;
  /** The server answered a request (a setLevel or not) sent under `wireId`. */
  answered(wireId: WireId, port: SharedPort | undefined, response: Response): void;
  /** A request whose answer will not be seen here (cancelled, unreadable, its session closed). */
  abandoned(wireId: WireId): void;
  wants(port: SharedPort, level: unknown): boolean;
  /** A session joined after the handshake: the server is kept at the level all need. */
  keep(): void;
  detached(port: SharedPort): void;
  upstreamClosed(): void;
}

/** The session layer's rules for the sessions on one shared upstream. */
export interface SharedRules {
  tasks: SharedTaskRules;
  levels: SharedLevelRules;
  subscriptions: SharedSubscriptionRules;
}

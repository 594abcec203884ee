/** What a Session is given: its settings and shared services, and whom it tells of its end. */
import type { Logger } from 'pino';
import type { Policy } from '../config/policy.js';
import type { CallerAccess } from '../protocol/caller.js';
import type { Config } from '../config/schema.js';
import type { TaskSightings } from '../observability/task-board.js';
import type { Limits } from '../security/limits.js';
import type { AuditLog } from '../tasks/audit-log.js';
import type { TaskStore } from '../tasks/store.js';
import type { TaskRunner } from '../tasks/task-runner.js';
import type { UpstreamState } from './upstream-peer.js';

export interface SessionOptions {
  id: string;
  /** The caller's identity (a binding key) and, for logs, who that is; absent without authentication. */
  identity?: string;
  subject?: string;
  /**
   * Whose tasks this session's are for tasks/list: the identity (else the session) unless set. Several
   * servers of one identity each list their own (src/aggregate/members.ts).
   */
  taskOwner?: string;
  /** What the caller may do (auth.rules); none: everything, its own tasks only. */
  access?: CallerAccess;
  limits?: Limits;
  audit?: AuditLog;
  /** The process's running task calls: no task starts once it drains. */
  runner?: TaskRunner;
  /** Told how long the upstream took to answer each forwarded request (for metrics). */
  onUpstreamAnswer?: (method: string, seconds: number) => void;
  /** Told of tasks as they pass, for the operator's dashboard. */
  sightings?: TaskSightings;
  config: Config;
  policy: Policy;
  store: TaskStore;
  logger: Logger;
  /**
   * Keep the upstream connection until the session's running tasks end when the client goes away, so
   * their results stay retrievable from another session (HTTP). Over stdio nobody could retrieve them.
   */
  lingerForTasks?: boolean;
}

export interface SessionEvents {
  /**
   * The upstream is gone for good: it went away and is not being restarted, or the session closed it
   * (not for a shared server's, which goes on).
   */
  upstreamGone(state: UpstreamState): void;
  /** The session is over: the client went away or close() was called; the upstream channel is closed. */
  closed(): Promise<void> | void;
}

/**
 * What the task services tell the audit log (src/observability/audit.ts writes it): the tasks layer
 * defines what it reports, the observability layer above decides where it goes.
 */
import type { TaskRecord } from './state.js';

export interface Caller {
  subject?: string;
  session: string;
}

export interface AuditLog {
  created(record: TaskRecord, caller: Caller, args?: unknown): void;
  /** `server`: the task's (TaskRecord.server), when one endpoint fronts several. */
  resultRetrieved(taskId: string, caller: Caller, server?: string): void;
  cancelled(taskId: string, caller: Caller, server?: string): void;
  /** An unknown task id, or one of another identity: the caller is told "not found" either way. */
  denied(taskId: string, method: string, caller: Caller): void;
  limitHit(limit: string, caller: Caller): void;
  /** An authorization rule (auth.rules) refused the caller a right: a tool, tasks/list, an operator's page. */
  accessDenied(refused: AccessRefusal, caller: Caller): void;
  /** A caller whom a rule lets read any task (an operator) read or cancelled another caller's. */
  othersTask(taskId: string, method: string, caller: Caller, server?: string): void;
  close(): void;
}

/** What the rules refused: the right, and for a tool, which one. */
export interface AccessRefusal {
  right: 'tool' | 'tasks/list' | 'metrics' | 'dashboard';
  tool?: string;
}

const nothing = (): void => undefined;

/** No audit log (tests, client-side tasks). */
export const NO_AUDIT: AuditLog = {
  created: nothing,
  resultRetrieved: nothing,
  cancelled: nothing,
  denied: nothing,
  limitHit: nothing,
  accessDenied: nothing,
  othersTask: nothing,
  close: nothing,
};

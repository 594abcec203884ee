/**
 * The audit log: one line per task created, status change, result retrieved, cancel, access refused and
 * limit hit, on a separate pino logger named "audit" (stderr, like every log). It names the subject,
 * never a token, and never arguments or results unless the operator turns arguments on.
 */
import type { Logger } from 'pino';
import { named } from './logger.js';
import { NO_AUDIT, type AuditLog, type Caller } from '../tasks/audit-log.js';
import type { TaskStore } from '../tasks/store.js';

/** The audit log, with each refused lookup also counted; counted even when the log is off. */
export function countingDenials(audit: AuditLog, count: (subject: string | undefined) => void): AuditLog {
  return {
    ...audit,
    denied: (taskId, method, caller) => {
      count(caller.subject);
      audit.denied(taskId, method, caller);
    },
  };
}

/**
 * Without authentication a session's id is its only credential: logs carry its first 8 characters, enough
 * to follow one session through them. Where a limit counts per session its caller is `session:<id>`.
 */
export const logSessionId = (id: string): string => id.slice(0, 8);
const SESSION_CALLER = 'session:';
const withoutSessionId = (subject: string): string =>
  subject.startsWith(SESSION_CALLER)
    ? SESSION_CALLER + logSessionId(subject.slice(SESSION_CALLER.length))
    : subject;

export function createAuditLog(
  logger: Logger,
  store: TaskStore,
  options: { enabled: boolean; logArguments: boolean },
): AuditLog {
  if (!options.enabled) return NO_AUDIT;
  const audit = named(logger, 'audit');
  const who = (caller: Caller) => ({
    subject: caller.subject === undefined ? null : withoutSessionId(caller.subject),
    session: logSessionId(caller.session),
  });
  // Only a task made through one of several servers names it: one server's lines stay as they were.
  const on = (server: string | undefined) => (server === undefined ? {} : { server });
  // Below the logger's level a line is dropped: its fields (ISO dates, caller) are not even built.
  const logs = (): boolean => audit.isLevelEnabled('info');
  const unsubscribe = store.onTransition((record) => {
    if (!logs()) return;
    audit.info(
      {
        event: 'task.status',
        taskId: record.taskId,
        tool: record.toolName,
        ...on(record.server),
        status: record.status,
        at: new Date(record.lastUpdatedAt).toISOString(),
      },
      `task ${record.status}`,
    );
  });
  return {
    created: (record, caller, args) =>
      logs() &&
      audit.info(
        {
          event: 'task.created',
          taskId: record.taskId,
          tool: record.toolName,
          ...on(record.server),
          ttl: record.ttl,
          ...who(caller),
          at: new Date(record.createdAt).toISOString(),
          ...(options.logArguments && args !== undefined ? { arguments: args } : {}),
        },
        'task created',
      ),
    resultRetrieved: (taskId, caller, server) =>
      logs() &&
      audit.info({ event: 'task.result', taskId, ...on(server), ...who(caller) }, 'task result retrieved'),
    cancelled: (taskId, caller, server) =>
      logs() && audit.info({ event: 'task.cancel', taskId, ...on(server), ...who(caller) }, 'task cancelled'),
    denied: (taskId, method, caller) =>
      audit.warn(
        // The id is the caller's input: a long one is cut, so one request cannot flood the log.
        { event: 'task.denied', taskId: taskId.slice(0, 100), method, ...who(caller) },
        'task lookup refused: unknown or not this caller’s',
      ),
    limitHit: (limit, caller) =>
      audit.warn({ event: 'limit.hit', limit, ...who(caller) }, `limit hit: ${limit}`),
    accessDenied: ({ right, tool }, caller) =>
      audit.warn(
        // A tool's name is the caller's input: cut as a task id is.
        {
          event: 'access.denied',
          right,
          ...(tool === undefined ? {} : { tool: tool.slice(0, 100) }),
          ...who(caller),
        },
        `access refused by auth.rules: ${right}`,
      ),
    othersTask: (taskId, method, caller, server) =>
      logs() &&
      audit.info(
        { event: 'task.others', taskId, method, ...on(server), ...who(caller) },
        "another caller's task, by a rule's tasks: all",
      ),
    close: unsubscribe,
  };
}

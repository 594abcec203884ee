/**
 * What the Redis scripts return, read back: records as RECORD_FIELDS values, and the one place where the
 * scripts' refusals become the store's typed errors (the same words as the memory store's).
 */
import { Pieces } from '../protocol/pieces.js';
import { CallerLimitError, TaskLimitError, TaskNotFoundError } from './errors.js';
import type { Reply } from './redis-link.js';
import { RECORD_FIELDS } from './redis-scripts.js';
import { owned } from './result-bytes.js';
import {
  IllegalTransitionError,
  StaleStatusError,
  type TaskOutcome,
  type TaskRecord,
  type TaskStatus,
  type TransitionChange,
} from './state.js';

/**
 * A task as the scripts return it: RECORD_FIELDS in order, then the outcome when it was asked for (as its
 * bytes when read for them: withOutcomeBytes).
 */
export type Values = (string | Buffer | null)[];

/** What a refusal is about, for its error. */
export interface RefusalContext {
  taskId: string;
  change?: TransitionChange | undefined;
  maxTasks: number;
  maxResultBytes: number;
  /** The live limit of a create. */
  maxLive?: number | undefined;
}

/** The rest of an 'ok' reply; any refusal becomes its typed error. */
export function accepted(reply: Reply, context: RefusalContext): unknown[] {
  const [code, ...rest] = reply;
  if (code === 'ok') return rest;
  throw refusal(code, rest, context);
}

function refusal(code: string, rest: unknown[], context: RefusalContext): Error {
  const { taskId, change } = context;
  const to = change?.status as TaskStatus;
  switch (code) {
    case 'not_found':
      return new TaskNotFoundError(taskId);
    case 'stale':
      return new StaleStatusError(taskId, change?.from as TaskStatus, rest[0] as TaskStatus, to);
    case 'illegal':
      return new IllegalTransitionError(taskId, rest[0] as TaskStatus, to);
    case 'too_large':
      return TaskLimitError.resultBytes(Number(rest[0]), context.maxResultBytes);
    case 'full':
      return TaskLimitError.liveTasks(context.maxTasks);
    case 'caller_full':
      return new CallerLimitError(Number(rest[0]), context.maxLive ?? Number(rest[0]));
    case 'exists':
      return new Error(`Task id collision on ${taskId} (a broken random source?)`);
    default:
      return new Error(`Unexpected reply from a task store script: ${String(code)}`);
  }
}

/**
 * A reply of a script that returns one record (RedisLink.runForBytes) as text, but for the record's outcome:
 * kept as its bytes, so that a result kept as bytes is neither decoded nor copied.
 */
export function withOutcomeBytes(reply: unknown[]): Reply {
  const [code, values] = reply as [Buffer, (Buffer | null)[] | Buffer | undefined];
  if (!Array.isArray(values)) return [code.toString(), ...reply.slice(1).map(String)];
  const record = values.map((value, i) =>
    value === null || i === RECORD_FIELDS.length ? value : value.toString(),
  );
  return [code.toString(), record, ...reply.slice(2)];
}

export function decode(values: Values): { record: TaskRecord; position: number } {
  const field = Object.fromEntries(RECORD_FIELDS.map((name, i) => [name, values[i] ?? null])) as Record<
    (typeof RECORD_FIELDS)[number],
    string | null
  >;
  const record: TaskRecord = {
    taskId: String(field.id),
    status: field.status as TaskStatus,
    createdAt: Number(field.created),
    lastUpdatedAt: Number(field.updated),
    ttl: Number(field.ttl),
    pollInterval: Number(field.poll),
    owner: String(field.owner),
    sessionId: String(field.session),
    toolName: String(field.tool),
    outcomeBytes: Number(field.bytes),
  };
  if (field.message !== null) record.statusMessage = field.message;
  if (field.identity !== null) record.identity = field.identity;
  if (field.trace !== null) record.traceparent = field.trace;
  if (field.server !== null) record.server = field.server;
  const outcome = values[RECORD_FIELDS.length];
  if (outcome === null || outcome === undefined) return { record, position: Number(field.pos) };
  if (typeof outcome === 'string') {
    if (outcome.startsWith(KEPT_BYTES)) record.resultBytes = outcome.slice(KEPT_BYTES.length, -1);
    else record.outcome = JSON.parse(outcome) as TaskOutcome;
  } else if (outcome.toString('latin1', 0, KEPT_BYTES.length) === KEPT_BYTES) {
    // A small result lies in the reply parser's read: a view would keep that read alive as long as the
    // answer made of it (an SSE event log keeps answers) while counting only the result's length.
    record.resultBytes = owned(outcome.subarray(KEPT_BYTES.length, -1));
  } else record.outcome = JSON.parse(outcome.toString()) as TaskOutcome;
  return { record, position: Number(field.pos) };
}

/**
 * A result kept as bytes (result-bytes.ts) is stored as `{"bytes":<the result>}`: still JSON, and never
 * the text of a TaskOutcome (`{"result":…}` or `{"error":…}`), so that reading it back tells them apart.
 */
const KEPT_BYTES = '{"bytes":';

/**
 * The stored text of a change's outcome, or of its result kept as bytes, in parts for the update script to
 * join (a result kept in pieces is sent as them, not joined here); [''] for a change with neither.
 */
export function encodeOutcome(change: TransitionChange): (string | Buffer)[] {
  if (change.outcome !== undefined) return [JSON.stringify(change.outcome)];
  const bytes = change.resultBytes;
  if (bytes === undefined) return [''];
  if (typeof bytes === 'string') return [`${KEPT_BYTES}${bytes}}`];
  return [KEPT_BYTES, ...(bytes instanceof Pieces ? bytes.parts : [bytes]), '}'];
}

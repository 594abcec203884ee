/**
 * What the tasks extension (extension-tasks.ts) keeps of each task it created: who created it, what its
 * creating request declared, the input its server waits for, the `tasks/result` held open on the Session,
 * the outcome once known, and its call while it waits for promotion; with the little derived from
 * a record (its weight in bytes, its open input, its creator, what is posted for the replicas).
 */
import type { TaskV1 } from '@modelcontextprotocol/ext-tasks/core/v1';
import type { RequestCaller } from '../protocol/caller.js';
import type { JsonObject, RequestId } from '../protocol/messages.js';
import type { ClientCapabilities } from '../protocol/modern/meta.js';
import type { TaskOutcome } from '../tasks/state.js';
import type { PostedTask } from '../tasks/store.js';
import type { Promotion } from './extension-task-promotion.js';

export type Outcome = TaskOutcome;

export interface HeldInput {
  serverRequestId: RequestId;
  method: string;
  params: JsonObject | undefined;
  /** The size of the server's request, counted against the creator's share. */
  bytes: number;
}

export interface ExtensionTask {
  taskId: string;
  /** Who created it (identity and subject): the Session is asked about the task as them. */
  caller: RequestCaller;
  /** What the creating request declared that the server may ask for (inputCapabilitiesOf): not the request. */
  declared: ClientCapabilities;
  /** Input the server asked for and the client has not answered, by key. */
  inputs: Map<string, HeldInput>;
  /** The id of the `tasks/result` held open on the Session, while it is. */
  follower: number | undefined;
  /** What that `tasks/result` answered: the outcome once the task is terminal, if its bytes had room. */
  outcome: Outcome | undefined;
  outcomeBytes: number;
  promotion: Promotion | undefined;
  /** How often its tasks/result ended early and was sent again. */
  refollows: number;
  /** Epoch ms after which the task is forgotten here (its ttl; the Session's store is the authority). */
  forgetAt: number;
}

/** Without a ttl, a task is remembered here this long. */
const UNLIMITED_TTL_REMEMBERED_MS = 24 * 60 * 60 * 1000;

/** The record of a task the Session just created, for `caller`, remembered from `now`. */
export const newTask = (
  created: TaskV1,
  caller: RequestCaller,
  declared: ClientCapabilities,
  now: number,
): ExtensionTask => ({
  taskId: created.taskId,
  caller,
  declared,
  inputs: new Map(),
  follower: undefined,
  outcome: undefined,
  outcomeBytes: 0,
  promotion: undefined,
  refollows: 0,
  forgetAt: now + (created.ttl ?? UNLIMITED_TTL_REMEMBERED_MS),
});

/** The input a task held here waits for, as tasks/get inlines it. */
export function openInputs(task: ExtensionTask): JsonObject {
  const inputRequests: JsonObject = {};
  for (const [key, held] of task.inputs) {
    inputRequests[key] =
      held.params === undefined ? { method: held.method } : { method: held.method, params: held.params };
  }
  return inputRequests;
}

/** The bytes a task keeps: its held input and its outcome. */
export function weightOf(task: ExtensionTask): number {
  let bytes = task.outcomeBytes;
  for (const held of task.inputs.values()) bytes += held.bytes;
  return bytes;
}

/** What the replicas sharing the store are told of a task held here. */
export const postedOf = (task: ExtensionTask): PostedTask => ({
  ...(task.caller.identity === undefined ? {} : { principal: task.caller.identity }),
  inputRequests: openInputs(task),
});

/** Who created a task held here, or (`posted`) by another replica; nobody for a task never seen. */
export const creator = (task: ExtensionTask | undefined, posted: PostedTask | undefined): RequestCaller =>
  task?.caller ?? (posted?.principal === undefined ? {} : { identity: posted.principal });

/**
 * What taskgate does with a tools/call of any era: the table of docs/design.md as one pure function, decided
 * once per call where the facts are known: by the Session (a 2025 client's call, and a 2026-07-28 call the
 * bridge hands it, whose context says the server decides: TaskChoice), or, in front of several servers, at
 * the aggregator's end of the bridge (aggregate/modern.ts). Everything it needs is an input, so that every
 * combination can be tested in-process; what differs between the eras is one fact, who decides whether a
 * call becomes a task.
 */
import type { ToolPolicy } from '../config/policy.js';
import { methodNotFound } from '../protocol/errors.js';
import { TASKS_EXTENSION } from '../protocol/modern/capabilities.js';
import { MissingCapabilityError } from '../protocol/modern/errors.js';

/** What the upstream is known to do with one tool (from its initialize and tools/list answers). */
export interface UpstreamTool {
  /** Its tools/list says it runs the tool as a task itself (taskSupport optional or required). */
  listedAsTask: boolean;
  /** Listed so, or not listed yet by an upstream that has tasks for tools/call (the benefit of the doubt). */
  mayRunAsTask: boolean;
  /** Its tools/list says it accepts the tool only as a task. */
  requiresTask: boolean;
}

export interface ToolCallFacts {
  /**
   * Who decides whether the call is a task: the `client` by asking (2025-11-25's `task` param), or the
   * `server` (2026-07-28's tasks extension, tasks.md "Capability Negotiation": the client never asks).
   */
  taskDecidedBy: 'client' | 'server';
  /** The caller can be answered with a task: a 2025 client's tasks capability, a request's tasks extension. */
  canTakeTask: boolean;
  /** The call carries `task` (only where the client decides). */
  asksTask: boolean;
  upstream: UpstreamTool;
  /** The operator's rule for the tool. */
  policy: Pick<ToolPolicy, 'taskSupport' | 'unwrap' | 'promoteAfter'>;
}

/** How a call run as a task is answered: with the task at once, or plainly if it ends within `promoteAfterMs`. */
export interface TaskAnswer {
  promoteAfterMs: number | undefined;
}

export type ToolCallPlan =
  /** Run the call upstream as a task and follow it for a caller that gets the plain answer (unwrap). */
  | { kind: 'unwrap' }
  /** Sent on as asked: a plain call taskgate leaves alone, or (`task`) a task the upstream runs itself. */
  | { kind: 'forward'; task?: TaskAnswer }
  /** Serve the task here, running the plain call upstream (augment). */
  | { kind: 'augment'; task: TaskAnswer }
  /** A task for a tool whose taskSupport does not allow one. */
  | { kind: 'refuse-task'; taskSupport: 'forbidden' | 'passthrough' }
  /**
   * A plain call of a tool only a task can serve: from a 2025 client that could have asked for one (`task`),
   * or from a 2026-07-28 request without the tasks extension (-32021 naming it).
   */
  | { kind: 'refuse-plain'; missing: 'task' | 'extension' };

export function decideToolCall(facts: ToolCallFacts): ToolCallPlan {
  const { upstream, policy } = facts;
  const serverDecides = facts.taskDecidedBy === 'server';
  const asTask = serverDecides ? facts.canTakeTask && mayBeTask(facts) : facts.asksTask;
  if (asTask) {
    const task = { promoteAfterMs: serverDecides ? promoteAfter(facts) : undefined };
    if (upstream.mayRunAsTask) return { kind: 'forward', task };
    return policy.taskSupport === 'forbidden' || policy.taskSupport === 'passthrough'
      ? { kind: 'refuse-task', taskSupport: policy.taskSupport }
      : { kind: 'augment', task };
  }
  if (!facts.canTakeTask && (upstream.requiresTask || (upstream.listedAsTask && policy.unwrap))) {
    return { kind: 'unwrap' };
  }
  if (upstream.mayRunAsTask || policy.taskSupport !== 'required') return { kind: 'forward' };
  // Only a task of taskgate's can serve the tool. A 2025 client without tasks could never send one: it gets
  // the plain call; a 2026-07-28 request could have declared the extension.
  if (serverDecides) return { kind: 'refuse-plain', missing: 'extension' };
  return facts.canTakeTask ? { kind: 'refuse-plain', missing: 'task' } : { kind: 'forward' };
}

/** The upstream runs the tool as a task, or the operator lets taskgate run it as one. */
function mayBeTask({ upstream, policy }: ToolCallFacts): boolean {
  return upstream.mayRunAsTask || policy.taskSupport === 'optional' || policy.taskSupport === 'required';
}

/**
 * Where the server decides: a tool that must be a task (the upstream requires it, or the operator for a tool
 * the upstream does not run as a task) is one at once, an optional one after its `promoteAfter` (0: at once).
 */
function promoteAfter({ upstream, policy }: ToolCallFacts): number | undefined {
  const required = upstream.mayRunAsTask ? upstream.requiresTask : policy.taskSupport === 'required';
  return required || policy.promoteAfter === 0 ? undefined : policy.promoteAfter;
}

/**
 * Where the server decides (a 2026-07-28 request's context, request-contexts.ts): whether its caller can
 * take a task (it declared the tasks extension), and the plan made for the call, told once to whoever
 * carries the answer (the bridge: a task's CreateTaskResult is answered as the extension's task).
 */
export interface TaskChoice {
  readonly canTakeTask: boolean;
  decided(plan: ToolCallPlan): void;
}

/** A tools/call plan's task, where it has one: the call goes on as a task (forward or augment). */
export function taskOf(plan: ToolCallPlan): TaskAnswer | undefined {
  return plan.kind === 'forward' || plan.kind === 'augment' ? plan.task : undefined;
}

/** Why a call of the tool `name` is refused by its plan, in the words of the era that decided. */
export function refusalOf(
  plan: Extract<ToolCallPlan, { kind: 'refuse-task' | 'refuse-plain' }>,
  name: string | undefined,
): Error {
  if (plan.kind === 'refuse-task') {
    const why = plan.taskSupport === 'forbidden' ? 'forbidden' : 'left to the server, which has no tasks';
    return methodNotFound(
      `Tool "${name}" cannot be called as a task (its taskSupport is "${why}"); call it without "task"`,
    );
  }
  if (plan.missing === 'task') {
    return methodNotFound(
      `Tool "${name}" must be called as a task (its taskSupport is "required"): add a "task" field to the tools/call params`,
    );
  }
  const missing = new MissingCapabilityError({ extensions: { [TASKS_EXTENSION]: {} } });
  missing.message = `Tool "${name}" runs only as a task: ${missing.message}`;
  return missing;
}

/**
 * What taskgate does with a tools/call: the table of docs/design.md as one pure function. Everything it needs
 * is an input, so that every combination can be tested in-process, and the next protocol era adds inputs
 * here rather than branches in the session.
 */
import type { TaskSupport } from '../config/schema.js';

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
  /** The call carries `task` (it asks to be run as a task). */
  asTask: boolean;
  /** The client declared the tasks capability in its initialize. */
  clientHasTasks: boolean;
  upstream: UpstreamTool;
  /** The operator's rule for the tool: the taskSupport taskgate advertises, and whether to unwrap. */
  policy: { taskSupport: TaskSupport; unwrap: boolean };
}

export type ToolCallPlan =
  /** Run the call upstream as a task and follow it for a client that cannot (unwrap). */
  | { kind: 'unwrap' }
  /** Forward as it is: the upstream runs it as a task itself, or it is a plain call taskgate leaves alone. */
  | { kind: 'forward' }
  /** Serve the task here, running the plain call upstream (augment). */
  | { kind: 'augment' }
  /** A task for a tool whose taskSupport does not allow one. */
  | { kind: 'refuse-task'; taskSupport: 'forbidden' | 'passthrough' }
  /** A plain call to a tool that taskgate advertises as requiring a task, from a client that could send one. */
  | { kind: 'refuse-plain' };

export function decideToolCall(facts: ToolCallFacts): ToolCallPlan {
  const { asTask, clientHasTasks, upstream, policy } = facts;
  if (!clientHasTasks && !asTask && (upstream.requiresTask || (upstream.listedAsTask && policy.unwrap))) {
    return { kind: 'unwrap' };
  }
  if (upstream.mayRunAsTask) return { kind: 'forward' };
  if (asTask) {
    return policy.taskSupport === 'forbidden' || policy.taskSupport === 'passthrough'
      ? { kind: 'refuse-task', taskSupport: policy.taskSupport }
      : { kind: 'augment' };
  }
  // A client without tasks could never satisfy "required": it gets the plain call.
  if (policy.taskSupport === 'required' && clientHasTasks) return { kind: 'refuse-plain' };
  return { kind: 'forward' };
}

/** What taskgate knows about a 2026-07-28 client's tools/call. */
export interface ModernToolCallFacts {
  /** The request declared the tasks extension (`io.modelcontextprotocol/tasks`): it may get a task. */
  extension: boolean;
  /** How the tool may run, as taskgate would list it for a 2025 client with tasks. */
  taskSupport: 'required' | 'optional' | 'forbidden';
  /** The upstream runs the tool as a task itself (so taskgate can follow it for a client without tasks). */
  upstreamTask: boolean;
  /** The tool's `promoteAfter`: how long an optional call runs plainly before it becomes a task. */
  promoteAfterMs: number;
}

export type ModernToolCallPlan =
  /** As a 2025 client without tasks would call it (the session unwraps what the upstream runs as a task). */
  | { kind: 'plain' }
  /** Only a task could serve it, and the client did not declare the extension: -32021 naming it. */
  | { kind: 'refuse' }
  /** Answered with a CreateTaskResult at once. */
  | { kind: 'task' }
  /** Run as a task, answered plainly if it ends within `afterMs`, else with a CreateTaskResult then. */
  | { kind: 'promote'; afterMs: number };

/**
 * The tasks extension lets the server decide (ext-tasks tasks.md "Capability Negotiation"): a client that
 * did not declare it never gets a task — a tool the operator made `required` is refused with -32021, one
 * the upstream requires is unwrapped —, `required` tools are tasks, `optional` ones are by `promoteAfter`.
 */
export function decideModernToolCall(facts: ModernToolCallFacts): ModernToolCallPlan {
  if (!facts.extension) {
    return facts.taskSupport === 'required' && !facts.upstreamTask ? { kind: 'refuse' } : { kind: 'plain' };
  }
  if (facts.taskSupport === 'forbidden') return { kind: 'plain' };
  if (facts.taskSupport === 'required' || facts.promoteAfterMs === 0) return { kind: 'task' };
  return { kind: 'promote', afterMs: facts.promoteAfterMs };
}

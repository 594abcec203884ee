/**
 * What the upstream server offers, as its initialize and tools/list answers told: its own tasks and the
 * tools it runs as tasks, and the rewrites by which the client sees taskgate's tasks beside them. Where a
 * call's handling hangs on a tool no listing has shown (or one the upstream said changed), taskgate lists
 * the upstream's tools itself first.
 */
import type { Logger } from 'pino';
import type { Policy } from '../config/policy.js';
import { isObject, type JsonObject } from '../protocol/messages.js';
import type { OwnCall } from '../tasks/own-call.js';
import type { UpstreamTool } from './decide.js';

/** How the profile asks the upstream itself (the session's own calls). */
export type CallUpstream = (method: string, params: JsonObject) => OwnCall;

/** Pages of tools/list taskgate reads at most when it lists the upstream's tools itself. */
const MAX_PAGES = 100;

const UNKNOWN_TOOL: UpstreamTool = { listedAsTask: false, mayRunAsTask: false, requiresTask: false };

export class UpstreamProfile {
  /** The upstream's own `capabilities.tasks`, once initialize has told; undefined when it has none. */
  private ownTasks: JsonObject | undefined;
  /** Tools the upstream runs as tasks itself (taskSupport optional or required in its tools/list). */
  private readonly nativeTaskTools = new Set<string>();
  /** Of those, the ones it requires to be called as tasks. */
  private readonly nativeRequiredTools = new Set<string>();
  /** Tools the upstream's tools/list has shown, native or not. */
  private readonly listedTools = new Set<string>();
  /** taskgate has listed every tool itself since the upstream last said its list changed. */
  private learnt = false;
  /** The upstream said its tools changed since taskgate last listed them. */
  private changed = false;
  private learning: Promise<void> | undefined;

  constructor(
    private readonly policy: Policy,
    private readonly logger: Logger,
  ) {}

  /** The upstream declared tasks of its own (for any request type). */
  get hasTasks(): boolean {
    return this.ownTasks !== undefined;
  }

  /** The upstream serves tasks/list for its own tasks. */
  get lists(): boolean {
    return isObject(this.ownTasks?.list);
  }

  /** Whether the upstream declared tasks for this request type (`tasks.requests.<a>.<b>` for "a/b"). */
  takesTask(method: string): boolean {
    const requests = this.ownTasks?.requests;
    // Asked twice for every tools/call: no split (an array and two strings) for a server without tasks.
    if (!isObject(requests)) return false;
    const [category, action] = method.split('/');
    const byCategory = category !== undefined ? requests[category] : undefined;
    return isObject(byCategory) && action !== undefined && isObject(byCategory[action]);
  }

  /**
   * The upstream's initialize answer as the client sees it: its capabilities with `tasks` as taskgate
   * offers them beside the upstream's own (`offered`, given the upstream's).
   */
  rewriteInitialize(
    result: JsonObject,
    offered: (ownTasks: JsonObject | undefined) => JsonObject,
  ): JsonObject {
    const capabilities = isObject(result.capabilities) ? result.capabilities : {};
    this.ownTasks = isObject(capabilities.tasks) ? capabilities.tasks : undefined;
    this.logger.info(
      this.takesTask('tools/call')
        ? 'upstream server has tasks of its own: its task tools pass through, taskgate serves the rest'
        : 'upstream server has no tasks for tools/call: taskgate serves them',
    );
    return { ...result, capabilities: { ...capabilities, tasks: offered(this.ownTasks) } };
  }

  /**
   * Marks each tool with taskSupport: the upstream's own where it runs the tool as a task, else policy's.
   * `clientHasTasks`: the client declared the tasks capability.
   */
  rewriteToolsList(result: JsonObject, clientHasTasks: boolean): JsonObject {
    if (!Array.isArray(result.tools)) return result;
    const nativeTasks = this.takesTask('tools/call');
    const tools = result.tools.map((tool: unknown) => {
      if (!isObject(tool) || typeof tool.name !== 'string') return tool;
      const execution = isObject(tool.execution) ? tool.execution : {};
      const native = this.note(tool.name, execution, nativeTasks);
      // A client without a tasks capability may still ask for tasks (a client's 2025 tasks capability is
      // about requests it receives), but must not see "required": SDK clients then refuse to call the tool,
      // and taskgate serves them the plain call (or follows the server's task for them).
      const hidesRequired = !clientHasTasks;
      // In front of a server with tasks of its own, such a client sees the tools as the server lists them.
      const asListed = native || (hidesRequired && nativeTasks);
      const { taskSupport } = asListed ? { taskSupport: 'passthrough' } : this.policy.forTool(tool.name);
      if (taskSupport === 'passthrough') {
        return hidesRequired && execution.taskSupport === 'required'
          ? withoutTaskSupport(tool, execution)
          : tool;
      }
      if (hidesRequired && taskSupport === 'required') return withoutTaskSupport(tool, execution);
      return { ...tool, execution: { ...execution, taskSupport } };
    });
    if (result.nextCursor === undefined) this.policy.warnUnmatchedRules(this.listedTools, this.logger);
    return { ...result, tools };
  }

  /**
   * Whether a call must wait for taskgate to list the upstream's tools: a plain call from a client
   * without tasks to an upstream with tasks for tools/call is unwrapped only if the tool is one it runs
   * as a task, which only a listing tells (and only a listing since its last list_changed).
   */
  needsListing(name: string | undefined, asTask: boolean, clientHasTasks: boolean): boolean {
    if (name === undefined || asTask || clientHasTasks || this.learnt) return false;
    return this.takesTask('tools/call') && (this.changed || !this.listedTools.has(name));
  }

  /** Lists the upstream's tools (every page) to know what each does; one listing for concurrent needs. */
  learn(call: CallUpstream): Promise<void> {
    this.learning ??= this.listAll(call).finally(() => (this.learning = undefined));
    return this.learning;
  }

  /** The upstream said its tools changed (notifications/tools/list_changed). */
  toolsChanged(): void {
    this.learnt = false;
    this.changed = true;
  }

  private async listAll(call: CallUpstream): Promise<void> {
    const nativeTasks = this.takesTask('tools/call');
    this.changed = false;
    let cursor: string | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      const answer = await call('tools/list', cursor === undefined ? {} : { cursor }).done;
      const result = answer && 'result' in answer.response ? answer.response.result : undefined;
      if (result === undefined) {
        // Not asked again for every call (until the upstream says its tools changed).
        this.logger.debug('could not list the upstream server’s tools: calls are decided by what is known');
        break;
      }
      for (const tool of Array.isArray(result.tools) ? result.tools : []) {
        if (!isObject(tool) || typeof tool.name !== 'string') continue;
        this.note(tool.name, isObject(tool.execution) ? tool.execution : {}, nativeTasks);
      }
      if (typeof result.nextCursor !== 'string') break;
      cursor = result.nextCursor;
    }
    // A change said during the listing may not be in it.
    this.learnt = !this.changed;
  }

  /** Notes what a listing says of one tool; true when the upstream runs it as a task itself. */
  private note(name: string, execution: JsonObject, nativeTasks: boolean): boolean {
    this.listedTools.add(name);
    const native =
      nativeTasks && (execution.taskSupport === 'optional' || execution.taskSupport === 'required');
    if (native) this.nativeTaskTools.add(name);
    else this.nativeTaskTools.delete(name);
    if (native && execution.taskSupport === 'required') this.nativeRequiredTools.add(name);
    else this.nativeRequiredTools.delete(name);
    return native;
  }

  /** What the upstream is known to do with the tool, for decideToolCall. */
  tool(name: string | undefined): UpstreamTool {
    if (name === undefined) return UNKNOWN_TOOL;
    return {
      listedAsTask: this.nativeTaskTools.has(name),
      mayRunAsTask: this.mayRunAsTask(name),
      requiresTask: this.nativeRequiredTools.has(name),
    };
  }

  /**
   * Whether the upstream runs this tool as a task itself. A tool its tools/list has not shown yet is
   * given the benefit of the doubt when the upstream has tasks for tools/call at all.
   */
  private mayRunAsTask(name: string): boolean {
    if (!this.takesTask('tools/call')) return false;
    return this.nativeTaskTools.has(name) || !this.listedTools.has(name);
  }
}

function withoutTaskSupport(tool: JsonObject, execution: JsonObject): JsonObject {
  if (!('taskSupport' in execution)) return tool;
  const { taskSupport: _, ...rest } = execution;
  const { execution: __, ...bare } = tool;
  return Object.keys(rest).length > 0 ? { ...bare, execution: rest } : bare;
}

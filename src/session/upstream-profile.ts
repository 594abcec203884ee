/**
 * What the upstream server offers, as its initialize and tools/list answers told: its own tasks and the
 * tools it runs as tasks, and the rewrites by which the client sees taskgate's tasks beside them.
 */
import type { Logger } from 'pino';
import type { Policy } from '../config/policy.js';
import { isObject, type JsonObject } from '../protocol/messages.js';
import type { UpstreamTool } from './decide.js';

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
    const [category, action] = method.split('/');
    const requests = this.ownTasks?.requests;
    const byCategory = isObject(requests) && category !== undefined ? requests[category] : undefined;
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
      this.listedTools.add(tool.name);
      const native =
        nativeTasks && (execution.taskSupport === 'optional' || execution.taskSupport === 'required');
      if (native) this.nativeTaskTools.add(tool.name);
      else this.nativeTaskTools.delete(tool.name);
      if (native && execution.taskSupport === 'required') this.nativeRequiredTools.add(tool.name);
      else this.nativeRequiredTools.delete(tool.name);
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
   * How a call of the tool may run, as taskgate lists it for a 2025 client with tasks: the upstream's own
   * taskSupport for a tool it runs as a task, else the operator's rule (`passthrough` to a server that does
   * not run it as a task: never a task). What a 2026-07-28 front decides a call by.
   */
  taskSupportFor(name: string): {
    taskSupport: 'required' | 'optional' | 'forbidden';
    upstreamTask: boolean;
  } {
    if (this.mayRunAsTask(name)) {
      return {
        taskSupport: this.nativeRequiredTools.has(name) ? 'required' : 'optional',
        upstreamTask: true,
      };
    }
    const { taskSupport } = this.policy.forTool(name);
    return { taskSupport: taskSupport === 'passthrough' ? 'forbidden' : taskSupport, upstreamTask: false };
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

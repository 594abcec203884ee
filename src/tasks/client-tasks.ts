/**
 * Client-side tasks: a server may task-augment `sampling/createMessage` and `elicitation/create` towards
 * a client that declares them. For a client that does not, taskgate declares them to the upstream on its
 * behalf, answers the upstream at once with a CreateTaskResult, puts the request to the client as an
 * ordinary one, and serves the upstream's tasks/get, tasks/result and tasks/cancel from its store. The
 * same rules as augment, in the other direction.
 */
import type { Logger } from 'pino';
import type { Policy } from '../config/policy.js';
import { invalidParams } from '../protocol/errors.js';
import { isObject, type JsonObject, type RequestId } from '../protocol/messages.js';
import type { OwnCall } from './own-call.js';
import type { ResultAnswer } from './result-bytes.js';
import { toWireTask } from './state.js';
import type { TaskStore } from './store.js';
import { TaskService, type TaskServiceConfig } from './task-service.js';

/** The requests a server may task-augment towards a client, and the client capability each needs. */
const TASKABLE = [
  { method: 'sampling/createMessage', capability: 'sampling', category: 'sampling', action: 'createMessage' },
  { method: 'elicitation/create', capability: 'elicitation', category: 'elicitation', action: 'create' },
] as const;

export interface ClientTasksHost {
  /** Sends a request of taskgate's own to the client. */
  callClient(method: string, params: JsonObject): OwnCall;
  cancelClient(wireId: RequestId, reason: string): void;
  notifyUpstream(method: string, params: JsonObject): void;
}

export class ClientTasks {
  /** The request types taskgate serves as tasks for this client (declared on its behalf). */
  private readonly served = new Set<string>();
  private readonly running = new Map<string, RequestId>();
  private readonly tasks: TaskService;

  constructor(
    store: TaskStore,
    private readonly policy: Policy,
    config: TaskServiceConfig,
    private readonly host: ClientTasksHost,
    sessionId: string,
    private readonly logger: Logger,
  ) {
    this.tasks = new TaskService(
      store,
      config,
      // The upstream server has no identity here: its tasks are keyed to this session's upstream.
      { sessionId, owner: `upstream:${sessionId}` },
      (method, params) => host.notifyUpstream(method, params),
      ({ taskId, status }) => {
        const wireId = status === 'cancelled' ? this.running.get(taskId) : undefined;
        if (wireId !== undefined) host.cancelClient(wireId, `task ${taskId} was cancelled`);
      },
    );
  }

  /**
   * The capabilities to send upstream for a client: its own, plus client-side tasks for each taskable
   * request it can answer but not as a task. Unchanged (the same object) when there is nothing to add.
   */
  declareFor(capabilities: JsonObject): JsonObject {
    const tasks = isObject(capabilities.tasks) ? capabilities.tasks : {};
    const requests = isObject(tasks.requests) ? tasks.requests : {};
    const added: JsonObject = { ...requests };
    for (const { method, capability, category, action } of TASKABLE) {
      const native = isObject(requests[category]) && isObject(requests[category][action]);
      if (native || !isObject(capabilities[capability])) continue;
      const existing = isObject(added[category]) ? added[category] : {};
      added[category] = { ...existing, [action]: {} };
      this.served.add(method);
    }
    if (this.served.size === 0) return capabilities;
    return { ...capabilities, tasks: { ...tasks, cancel: {}, requests: added } };
  }

  /** Whether a task-augmented request of this type is taskgate's to serve. */
  serves(method: string): boolean {
    return this.served.has(method);
  }

  /** Creates the task, puts the request to the client as an ordinary one, returns the CreateTaskResult. */
  async create(method: string, params: JsonObject | undefined): Promise<JsonObject> {
    const { task, ...plain } = params ?? {};
    const requested = isObject(task) ? task.ttl : undefined;
    if (!isObject(task) || (requested !== undefined && (typeof requested !== 'number' || requested < 0))) {
      throw invalidParams(
        `Invalid params for ${method}: task must be an object with an optional non-negative ttl`,
      );
    }
    const defaults = this.policy.defaults;
    const what = { what: method === 'sampling/createMessage' ? 'Sampling request' : 'Elicitation' };
    const record = await this.tasks.create(
      {
        toolName: method,
        ttl: this.policy.ttlFor(defaults, requested),
        pollInterval: defaults.pollInterval,
      },
      ({ taskId }) => {
        const call = this.host.callClient(method, plain);
        this.running.set(taskId, call.wireId);
        void call.done
          .then((answer) => answer && this.tasks.finish(taskId, answer, what))
          .catch((error: unknown) =>
            this.logger.error({ err: error, taskId }, 'client-side task bookkeeping failed'),
          )
          .finally(() => this.running.delete(taskId));
      },
      what,
    );
    return { task: toWireTask(record) };
  }

  knows(params: JsonObject | undefined): Promise<boolean> {
    return this.tasks.knows(params);
  }

  get(params: JsonObject | undefined): Promise<JsonObject> {
    return this.tasks.get(params);
  }

  result(params: JsonObject | undefined, signal: AbortSignal): Promise<ResultAnswer> {
    return this.tasks.result(params, signal);
  }

  cancel(params: JsonObject | undefined): Promise<JsonObject> {
    return this.tasks.cancel(params);
  }

  /**
   * The server that asked went away: its tasks are cancelled, which withdraws their requests from the
   * client (nobody is left to fetch the answers).
   */
  abandon(): void {
    for (const taskId of this.running.keys()) {
      this.tasks
        .cancel({ taskId })
        .catch((error: unknown) =>
          this.logger.debug({ err: error, taskId }, 'could not cancel a client-side task'),
        );
    }
  }

  close(): void {
    this.tasks.close();
  }
}

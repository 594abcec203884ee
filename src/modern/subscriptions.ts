/**
 * `subscriptions/listen` for 2026-07-28 clients (basic/patterns/subscriptions.mdx; tasks.md "Task Status
 * Notifications"): each listen request is a stream that stays open until the client closes it, and gets
 * the acknowledgment first, then only the notifications its filter asked for and the upstream can send,
 * each tagged with the subscription's id. Resource subscriptions are made upstream in 2025 terms
 * (`resources/subscribe`), once per URI however many listeners want it. A filter is bounded, and a stream
 * holds only what was agreed: the acknowledgment names the task ids taskgate will send (tasks.md "Task
 * Status Notifications"), those of tasks the caller created, not every id it was sent. Open streams are
 * shared by callers (caller-shares.ts): past its share a caller is refused, and a full pool ends the oldest
 * stream of a caller over its share, never one of a caller within it.
 */
import type { Logger } from 'pino';
import { ErrorCode, type JsonRpcErrorObject } from '../protocol/errors.js';
import { isObject, type JsonObject, type Request, type RequestId } from '../protocol/messages.js';
import { toJsonRpcError } from '../tasks/wire-errors.js';
import type { ModernAnswer, ModernExchange } from '../protocol/modern/exchange.js';
import { CallerShares, type ShareLimits } from './caller-shares.js';

export const SUBSCRIPTION_ID_META = 'io.modelcontextprotocol/subscriptionId';

/** Entries in each list of a filter at most (`taskIds`, `resourceSubscriptions`): more, open another listen. */
export const MAX_FILTER_ENTRIES = 256;
/** UTF-8 bytes of a filter's strings at most. */
export const MAX_FILTER_BYTES = 64 * 1024;

/** The filter of a listen request (subscriptions.mdx "Notification Filter"; tasks.md `taskIds`). */
interface Filter {
  toolsListChanged: boolean;
  promptsListChanged: boolean;
  resourcesListChanged: boolean;
  resourceSubscriptions: ReadonlySet<string>;
  taskIds: ReadonlySet<string>;
  /** UTF-8 bytes of its strings: what the stream keeps. */
  bytes: number;
}

const LIST_CHANGED: Readonly<Record<string, keyof Filter>> = {
  'notifications/tools/list_changed': 'toolsListChanged',
  'notifications/prompts/list_changed': 'promptsListChanged',
  'notifications/resources/list_changed': 'resourcesListChanged',
};

interface Listener {
  id: RequestId;
  principal: string | undefined;
  notify: ModernExchange['notify'];
  filter: Filter;
  end(answer: ModernAnswer): void;
}

export interface SubscriptionsOptions {
  /** Makes or drops the upstream's subscription to a resource (2025 resources/subscribe, unsubscribe). */
  upstream(method: 'resources/subscribe' | 'resources/unsubscribe', uri: string): void;
  /** The `notifications/tasks` params for a 2025 status notification, if `principal` may see the task. */
  taskStatus(params: JsonObject, principal: string | undefined): Promise<JsonObject | undefined>;
  /** Whether `principal` created the task: only such ids are agreed to. */
  createdBy(taskId: string, principal: string | undefined): Promise<boolean>;
  refuse(request: Request, error: JsonRpcErrorObject): ModernAnswer;
  /** Open listen requests (and their filters' bytes) at most, and per caller. */
  shares: ShareLimits;
  logger: Pick<Logger, 'warn'>;
}

export class Subscriptions {
  private readonly listeners = new Set<Listener>();
  /** Listeners per resource URI subscribed upstream. */
  private readonly resources = new Map<string, number>();
  private readonly shares: CallerShares<Listener>;

  constructor(private readonly options: SubscriptionsOptions) {
    this.shares = new CallerShares({
      limits: options.shares,
      what: 'open subscriptions',
      evictOwn: false,
      evicted: (listener) => listener.end(closing(listener.id)),
    });
  }

  /** Opens the stream for `caller`; resolves when it ends (undefined once the client closed it). */
  async listen(
    exchange: ModernExchange,
    upstreamCapabilities: JsonObject,
    caller: string,
  ): Promise<ModernAnswer> {
    const { request } = exchange;
    const asked = readFilter(request.params?.notifications);
    if ('code' in asked) return this.options.refuse(request, asked);
    const taskIds = new Set<string>();
    try {
      const asks = [...asked.taskIds];
      const created = await Promise.all(
        asks.map((taskId) => this.options.createdBy(taskId, exchange.principal)),
      );
      for (const [at, taskId] of asks.entries()) if (created[at] === true) taskIds.add(taskId);
    } catch (error) {
      return this.options.refuse(request, toJsonRpcError(error));
    }
    if (exchange.signal.aborted) return undefined;
    return this.open(exchange, honoured(asked, upstreamCapabilities, taskIds), caller);
  }

  /**
   * The stream keeps the parts of its exchange it needs, not the request (whose params may be large); it
   * is refused when its caller's share, or the pool, has no room for it.
   */
  private open(
    { request, principal, notify, signal }: ModernExchange,
    filter: Filter,
    caller: string,
  ): Promise<ModernAnswer> | ModernAnswer {
    const { id } = request;
    let resolve!: (answer: ModernAnswer) => void;
    const ended = new Promise<ModernAnswer>((settle) => (resolve = settle));
    const closed = () => listener.end(undefined);
    const listener: Listener = {
      id,
      principal,
      notify,
      filter,
      end: (answer) => {
        if (!this.listeners.delete(listener)) return;
        this.shares.remove(listener);
        signal.removeEventListener('abort', closed);
        for (const uri of filter.resourceSubscriptions) this.release(uri);
        resolve(answer);
      },
    };
    const admitted = this.shares.add(caller, listener, filter.bytes);
    if (admitted !== undefined) {
      return this.options.refuse(request, {
        code: ErrorCode.LimitExceeded,
        message: `Too many open subscriptions: ${admitted.refused}; close one first`,
      });
    }
    signal.addEventListener('abort', closed, { once: true });
    this.listeners.add(listener);
    for (const uri of filter.resourceSubscriptions) this.hold(uri);
    notify({
      jsonrpc: '2.0',
      method: 'notifications/subscriptions/acknowledged',
      params: { _meta: { [SUBSCRIPTION_ID_META]: id }, notifications: ackOf(filter) },
    });
    if (signal.aborted) closed();
    return ended;
  }

  /** Whether a listener's filter names the task. */
  watches(taskId: string): boolean {
    for (const listener of this.listeners) if (listener.filter.taskIds.has(taskId)) return true;
    return false;
  }

  /** A notification from the upstream side: to every listener whose filter names it. */
  notification(method: string, params: JsonObject | undefined): void {
    if (this.listeners.size === 0) return;
    const listChanged = LIST_CHANGED[method];
    if (listChanged !== undefined) {
      for (const listener of this.listeners) {
        if (listener.filter[listChanged] === true) send(listener, method, {});
      }
      return;
    }
    if (method === 'notifications/resources/updated' && typeof params?.uri === 'string') {
      const { uri } = params;
      for (const listener of this.listeners) {
        if (listener.filter.resourceSubscriptions.has(uri)) send(listener, method, { uri });
      }
      return;
    }
    if (method === 'notifications/tasks/status' && typeof params?.taskId === 'string') {
      const { taskId } = params;
      for (const listener of this.listeners) {
        if (!listener.filter.taskIds.has(taskId)) continue;
        this.options.taskStatus(params, listener.principal).then(
          (task) => {
            if (task !== undefined && this.listeners.has(listener))
              send(listener, 'notifications/tasks', task);
          },
          (error: unknown) =>
            this.options.logger.warn({ err: error, taskId }, 'a task status could not be sent'),
        );
      }
    }
  }

  /** taskgate ends every stream gracefully: a complete result names the subscription it closes. */
  close(): void {
    for (const listener of [...this.listeners]) listener.end(closing(listener.id));
  }

  private hold(uri: string): void {
    const count = this.resources.get(uri) ?? 0;
    this.resources.set(uri, count + 1);
    if (count === 0) this.options.upstream('resources/subscribe', uri);
  }

  private release(uri: string): void {
    const count = (this.resources.get(uri) ?? 1) - 1;
    if (count > 0) return void this.resources.set(uri, count);
    this.resources.delete(uri);
    this.options.upstream('resources/unsubscribe', uri);
  }
}

/** How taskgate ends a stream itself: a complete result naming the subscription it closes. */
function closing(id: RequestId): ModernAnswer {
  return {
    response: {
      jsonrpc: '2.0',
      id,
      result: { resultType: 'complete', _meta: { [SUBSCRIPTION_ID_META]: id } },
    },
  };
}

function send(listener: Listener, method: string, params: JsonObject): void {
  const meta = isObject(params._meta) ? params._meta : {};
  listener.notify({
    jsonrpc: '2.0',
    method,
    params: { ...params, _meta: { ...meta, [SUBSCRIPTION_ID_META]: listener.id } },
  });
}

/** The filter as asked, or why it is refused: malformed (-32602), or beyond the bounds above. */
function readFilter(value: unknown): Filter | JsonRpcErrorObject {
  const invalid = (problem: string) => ({
    code: ErrorCode.InvalidParams,
    message: `Invalid params: ${problem}`,
  });
  if (value === undefined) value = {};
  if (!isObject(value)) return invalid('notifications must be an object (the notification filter)');
  const flag = (key: string): boolean | string =>
    value[key] === undefined || typeof value[key] === 'boolean'
      ? value[key] === true
      : `notifications.${key} must be a boolean`;
  let bytes = 0;
  let tooMany: string | undefined;
  const list = (key: string): ReadonlySet<string> | string => {
    const entries = value[key];
    if (entries === undefined) return new Set();
    if (!Array.isArray(entries) || !entries.every((entry) => typeof entry === 'string'))
      return `notifications.${key} must be an array of strings`;
    if (entries.length > MAX_FILTER_ENTRIES) tooMany ??= `notifications.${key} has ${entries.length} entries`;
    for (const entry of entries as string[]) bytes += Buffer.byteLength(entry);
    return new Set(entries as string[]);
  };
  const filter = {
    toolsListChanged: flag('toolsListChanged'),
    promptsListChanged: flag('promptsListChanged'),
    resourcesListChanged: flag('resourcesListChanged'),
    resourceSubscriptions: list('resourceSubscriptions'),
    taskIds: list('taskIds'),
    bytes: 0,
  };
  const problem = Object.values(filter).find((field) => typeof field === 'string');
  if (typeof problem === 'string') return invalid(problem);
  if (bytes > MAX_FILTER_BYTES) tooMany ??= `the notification filter's strings are ${bytes} bytes`;
  filter.bytes = bytes;
  if (tooMany === undefined) return filter as Filter;
  return {
    code: ErrorCode.LimitExceeded,
    message: `Too large a subscription: ${tooMany}; taskgate takes at most ${MAX_FILTER_ENTRIES} task ids and ${MAX_FILTER_ENTRIES} resource URIs, ${MAX_FILTER_BYTES} bytes in all, per subscriptions/listen: open another`,
  };
}

/** What the upstream can send of what was asked (subscriptions.mdx "Acknowledgment": the rest is omitted). */
function honoured(asked: Filter, capabilities: JsonObject, taskIds: ReadonlySet<string>): Filter {
  const declares = (capability: string, feature: string): boolean => {
    const declared = capabilities[capability];
    return isObject(declared) && declared[feature] === true;
  };
  return {
    toolsListChanged: asked.toolsListChanged && declares('tools', 'listChanged'),
    promptsListChanged: asked.promptsListChanged && declares('prompts', 'listChanged'),
    resourcesListChanged: asked.resourcesListChanged && declares('resources', 'listChanged'),
    resourceSubscriptions: declares('resources', 'subscribe') ? asked.resourceSubscriptions : new Set(),
    // taskgate serves the tasks extension itself, whatever the upstream has.
    taskIds,
    bytes: asked.bytes,
  };
}

function ackOf(filter: Filter): JsonObject {
  const ack: JsonObject = {};
  if (filter.toolsListChanged) ack.toolsListChanged = true;
  if (filter.promptsListChanged) ack.promptsListChanged = true;
  if (filter.resourcesListChanged) ack.resourcesListChanged = true;
  if (filter.resourceSubscriptions.size > 0) ack.resourceSubscriptions = [...filter.resourceSubscriptions];
  if (filter.taskIds.size > 0) ack.taskIds = [...filter.taskIds];
  return ack;
}

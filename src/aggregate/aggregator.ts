/**
 * Several servers behind one endpoint, for a 2025-11-25 client: the aggregator is the server its client
 * sees and the client of one Session per server (src/aggregate/members.ts), each of which still decides
 * augment, unwrap or pass-through for its own server. What the aggregator does is only the routing: a
 * request to every server (initialize, the lists, logging/setLevel, tasks/list) is asked of each and the
 * answers merged; one to a tool, prompt, resource or task goes to its server under the name that server
 * gave it, with the client's own id, and comes back as it is unless a task id or resource URI in it needs
 * its prefix.
 */
import type { Logger } from 'pino';
import type { ToolFacts } from '../modern/bridge-call.js';
import { carriedCancellation, Correlation } from '../protocol/correlation.js';
import { ErrorCode, type JsonRpcErrorObject, ProtocolError } from '../protocol/errors.js';
import {
  errorResponse,
  isObject,
  successResponse,
  type JsonObject,
  type Notification,
  type Request,
  type RequestId,
  type Response,
} from '../protocol/messages.js';
import { isModernRequest } from '../protocol/modern/meta.js';
import { readHanded } from '../protocol/read-message.js';
import { unknownTool } from '../security/access.js';
import { telemetry } from '../telemetry/telemetry.js';
import type { Arrival, Channel, Route } from '../transport/channel.js';
import { ExactIdChannel } from '../transport/exact-id-channel.js';
import { gathered } from './fan-out.js';
import { InOrder } from './in-order.js';
import { ListChanges, type ListKind } from './list-changes.js';
import { ListReader } from './lists.js';
import { mergedInitialize } from './merge.js';
import { Member, type MemberSpec, type Outcome } from './member.js';
import { NameRoutes } from './name-routes.js';
import type { Names } from './names.js';
import type { ServersReadiness } from './readiness.js';
import { invalid, modernRefused, wireError } from './refusals.js';
import { withOuterUpdatedUri, withOuterUris } from './resource-uris.js';
import { ResourceRoutes } from './resources.js';
import type { RoutedAbout, SessionServerTasks, TaskHolder } from './replica-tasks.js';
import { ServerRequests } from './server-requests.js';
import { withOuterRelatedTaskId, withOuterTaskIds, type TaskIdNames } from './task-ids.js';
import { TaskLists } from './task-lists.js';

export interface AggregatorOptions {
  names: Names;
  logger: Logger;
  /** taskgate's version, for the serverInfo of the merged initialize. */
  version: string;
  /** The client went away (the members are closed by then). */
  closed(reason: string): void;
  /**
   * How long the servers slower than the first get to answer a request asked of all of them
   * (aggregate.slowServerGrace): the merged answer goes without those still silent then.
   */
  graceMs: number;
  /** The servers' list changes within this of the first are one list_changed (aggregate.listChangedWindow). */
  listChangedWindowMs: number;
  /** The tasks the servers run themselves, reached from every replica sharing the store (none without one). */
  serverTasks?: SessionServerTasks | undefined;
}

/** A client request sent on to one server, and what its answer needs on its way back. */
interface Routed {
  id: RequestId;
  member: Member;
  /** The server's result as the client gets it; undefined: the bytes go as they are. */
  rewrite: (result: JsonObject) => JsonObject | undefined;
  /** A tools/call (its task may be the server's own), or a tasks/* request of the task it names. */
  about?: RoutedAbout;
}

const LIST_CHANGED = /^notifications\/(tools|prompts|resources)\/list_changed$/;

export class Aggregator implements TaskHolder {
  private readonly client: Channel;
  private readonly members: Member[];
  private readonly byName = new Map<string, Member>();
  /** The client's requests in flight with a server, by the id the server got (the client's own while free). */
  private readonly routed = new Correlation<Routed>();
  private readonly serverRequests: ServerRequests;
  private readonly taskLists: TaskLists;
  private readonly names: Names;
  private readonly taskIds: TaskIdNames;
  private readonly nameRoutes: NameRoutes;
  private readonly resources: ResourceRoutes;
  private readonly lists: ListReader;
  private readonly listChanges: ListChanges;
  private readonly inOrder: InOrder;
  private closing: Promise<void> | undefined;
  /** The client has sent notifications/initialized (a server that joins late is sent it then). */
  private clientInitialized = false;
  private capabilities: JsonObject = {};

  constructor(
    client: Channel,
    members: MemberSpec[],
    private readonly options: AggregatorOptions,
  ) {
    this.client = new ExactIdChannel(client, false);
    this.names = options.names;
    this.taskIds = options.serverTasks?.taskIds ?? options.names;
    this.members = members.map((spec) => new Member(spec));
    for (const member of this.members) this.byName.set(member.name, member);
    this.serverRequests = new ServerRequests(this.client);
    this.taskLists = new TaskLists(this.taskIds);
    this.lists = new ListReader(options.logger, options.graceMs);
    this.resources = new ResourceRoutes(options.logger, this.lists);
    this.nameRoutes = new NameRoutes(this.members, {
      names: this.names,
      logger: options.logger,
      lists: this.lists,
      serving: () => this.serving(),
    });
    this.listChanges = new ListChanges((kind) => this.notifyListChanged(kind), options.listChangedWindowMs);
    this.inOrder = new InOrder(options.logger);
  }

  start(): void {
    for (const member of this.members) {
      member.start({
        message: (raw, arrival, parsed) => this.fromMember(member, raw, arrival, parsed),
        malformed: () => undefined,
        closed: ({ reason }) => this.memberGone(member, reason),
      });
    }
    this.client.start({
      message: (raw, _arrival, parsed) => this.fromClient(raw, parsed),
      malformed: (error, id) => {
        if (id !== null) this.refuse(id, error.toJson());
      },
      closed: ({ reason }) => void this.close(reason),
    });
  }

  /** Each server's state, for /readyz. */
  servers(): ServersReadiness {
    return Object.fromEntries(this.members.map((member) => [member.name, member.readiness]));
  }

  close(reason = 'taskgate closed'): Promise<void> {
    this.closing ??= (async () => {
      this.listChanges.close();
      this.options.serverTasks?.close(this);
      await Promise.all(this.members.map((member) => member.close()));
      await this.client.close();
      this.options.closed(reason);
    })();
    return this.closing;
  }

  private fromClient(raw: Buffer, parsed: object | undefined): void {
    const read = readHanded(raw, parsed, 'the client');
    if (!read.ok) {
      const id = isObject(read.value) && 'method' in read.value ? read.value.id : undefined;
      const error = read.error instanceof ProtocolError ? read.error.toJson() : invalid('unreadable message');
      if (typeof id === 'string' || typeof id === 'number') this.refuse(id, error);
      return;
    }
    const { message } = read;
    if (message.kind === 'request') return void this.request(message.msg);
    if (message.kind === 'notification') return this.notification(message.msg, { raw, parsed });
    this.serverRequests.answered(message.msg);
  }

  /** A request of a client that hands values, not bytes (the 2026-07-28 bridge, modern.ts). */
  take(request: Request): void {
    void this.request(request);
  }

  /** A notification or an answer of a client that hands values (the 2026-07-28 bridge). */
  takeMessage(message: Notification | Response): void {
    if ('method' in message) this.notification(message);
    else this.serverRequests.answered(message);
  }

  private async request(request: Request): Promise<void> {
    const { id, method, params } = request;
    // A 2026-07-28 request on a 2025 connection: a 2026-07-28 client is served by the bridge in front of
    // the aggregator (modern.ts), which speaks 2025 to it.
    if (isModernRequest(params)) return this.refuse(id, modernRefused(params));
    try {
      switch (method) {
        case 'initialize':
          return this.answer(id, await this.initialize(params));
        case 'ping':
          return this.answer(id, {});
        case 'tools/list':
        case 'prompts/list':
          return this.answer(id, await this.nameRoutes.page(method, params?.cursor));
        case 'tools/call':
        case 'prompts/get':
          return await this.toNamed(request, method === 'tools/call' ? 'tool' : 'prompt');
        case 'completion/complete':
          return await this.complete(request);
        case 'resources/list':
        case 'resources/templates/list':
          return this.answer(id, await this.resources.page(this.serving(), method, params?.cursor));
        case 'resources/read':
        case 'resources/subscribe':
        case 'resources/unsubscribe':
          return await this.toResource(request);
        case 'logging/setLevel':
          return this.answer(id, await this.everyone(method, params));
        case 'tasks/get':
        case 'tasks/result':
        case 'tasks/cancel':
          return this.toTask(request);
        case 'tasks/list':
          return this.answer(
            id,
            await this.taskLists.list(this.serving(), params, (from) =>
              this.options.serverTasks === undefined
                ? Promise.resolve({ tasks: [] })
                : this.options.serverTasks.listedElsewhere(this, from),
            ),
          );
        default:
          return this.toOnly(request);
      }
    } catch (error) {
      this.refuse(id, wireError(error));
    }
  }

  /** Answers go on their request's own stream (over HTTP, its POST's). */
  private answer(id: RequestId, result: JsonObject): void {
    this.client.send(successResponse(id, result), { responseTo: id });
  }

  private refuse(id: RequestId, error: JsonRpcErrorObject): void {
    this.client.send(errorResponse(id, error), { responseTo: id });
  }

  private serving(): Member[] {
    return this.members.filter((member) => member.serving);
  }

  private async initialize(params: JsonObject | undefined): Promise<JsonObject> {
    // One that could not be started (or is gone already) has been logged: it is left out.
    const { answered, late } = await gathered(
      this.serving(),
      (member) => member.ask('initialize', params),
      this.options.graceMs,
    );
    const answers = [];
    for (const { member, value } of answered) {
      if (value.ok) answers.push({ server: member.name, result: value.result });
      else this.refusedInitialize(member, value.error);
    }
    for (const { member, answer } of late) {
      member.joining = true;
      this.options.logger.warn(
        { server: member.name },
        `the server "${member.name}" has not answered initialize ${this.options.graceMs} ms after the first: it joins when it does`,
      );
      void answer.then((outcome) => this.joined(member, outcome));
    }
    if (answers.length === 0) {
      throw new ProtocolError(ErrorCode.UpstreamUnavailable, 'No server behind taskgate answered initialize');
    }
    const result = mergedInitialize(answers, params?.protocolVersion, this.options.version);
    this.capabilities = isObject(result.capabilities) ? result.capabilities : {};
    return result;
  }

  private refusedInitialize(member: Member, error: JsonRpcErrorObject): void {
    member.refusedInitialize = error;
    this.options.logger.error(
      { server: member.name, error: error.message },
      `the server "${member.name}" (${member.description}) refused initialize: it serves nothing in this session`,
    );
  }

  /** A server that answered initialize after the merged answer went out: its names join the lists. */
  private joined(member: Member, outcome: Outcome): void {
    member.joining = false;
    if (!outcome.ok) return this.refusedInitialize(member, outcome.error);
    if (member.goneReason !== undefined) return;
    this.options.logger.info({ server: member.name }, `the server "${member.name}" joined late`);
    if (this.clientInitialized) member.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    this.listsChanged();
  }

  /** A server came or went: the merged lists are not what the client was given. */
  private listsChanged(): void {
    this.nameRoutes.changed();
    this.resources.clear();
    for (const kind of ['tools', 'prompts', 'resources'] as const) this.listChanges.changed(kind);
  }

  /** The one list_changed of a kind for every change since the last (ListChanges), if the client can list it. */
  private notifyListChanged(kind: ListKind): void {
    if (!this.clientInitialized || this.closing !== undefined || !isObject(this.capabilities[kind])) return;
    this.client.send({ jsonrpc: '2.0', method: `notifications/${kind}/list_changed` });
  }

  /** What the server of a tool the client named does with it (NameRoutes.toolFacts), for the 2026-07-28 bridge. */
  toolFacts(name: string): ToolFacts {
    return this.nameRoutes.toolFacts(name);
  }

  /** What toolFacts waits for (NameRoutes.toolsKnown). */
  toolsKnown(): Promise<unknown> | undefined {
    return this.nameRoutes.toolsKnown();
  }

  private async toNamed(request: Request, kind: 'tool' | 'prompt'): Promise<void> {
    const name = request.params?.name;
    const found = typeof name === 'string' ? await this.nameRoutes.named(kind, name) : undefined;
    if (found === undefined) {
      // A tool the caller's rules hide is refused by its server's Session as unknown: no server's is said alike.
      if (kind === 'tool') throw unknownTool(String(name));
      throw new ProtocolError(ErrorCode.InvalidParams, `Prompt ${JSON.stringify(name)} not found`);
    }
    const params = { ...request.params, name: found.name };
    const about = kind === 'tool' ? { method: 'tools/call' as const } : undefined;
    this.forward(found.member, { ...request, params }, this.outerResult(found.member), about);
  }

  /** A server's result as the client gets it: its task ids and, for a prefixed server, its URIs renamed. */
  private outerResult(member: Member): Routed['rewrite'] {
    return (result) => {
      const renamed = withOuterTaskIds(result, member.name, this.taskIds);
      return member.prefixed ? (withOuterUris(renamed ?? result, member.name) ?? renamed) : renamed;
    };
  }

  private async complete(request: Request): Promise<void> {
    const ref = request.params?.ref;
    if (isObject(ref) && ref.type === 'ref/prompt' && typeof ref.name === 'string') {
      const found = await this.nameRoutes.named('prompt', ref.name);
      if (found === undefined)
        throw new ProtocolError(ErrorCode.InvalidParams, `Prompt ${JSON.stringify(ref.name)} not found`);
      const params = { ...request.params, ref: { ...ref, name: found.name } };
      return this.forward(found.member, { ...request, params }, () => undefined);
    }
    if (isObject(ref) && typeof ref.uri === 'string') {
      const routed = await this.resources.route(ref.uri, this.members, this.serving());
      const params = { ...request.params, ref: { ...ref, uri: routed.uri } };
      return this.forward(routed.member, { ...request, params }, () => undefined);
    }
    throw new ProtocolError(
      ErrorCode.InvalidParams,
      'completion/complete needs a ref/prompt or a ref/resource',
    );
  }

  private async toResource(request: Request): Promise<void> {
    const uri = request.params?.uri;
    if (typeof uri !== 'string')
      throw new ProtocolError(ErrorCode.InvalidParams, `${request.method} needs a uri`);
    const routed = await this.resources.route(uri, this.members, this.serving());
    const { member } = routed;
    this.forward(member, { ...request, params: { ...request.params, uri: routed.uri } }, (result) =>
      member.prefixed ? withOuterUris(result, member.name) : undefined,
    );
  }

  private toTask(request: Request): void {
    const taskId = request.params?.taskId;
    const servers = this.members.map((m) => m.name);
    const found = typeof taskId === 'string' ? this.taskIds.innerTaskId(taskId, servers) : undefined;
    if (found === undefined) {
      throw new ProtocolError(ErrorCode.InvalidParams, `Task not found or expired: ${String(taskId)}`);
    }
    const member = this.byName.get(found.server)!;
    const params = { ...request.params, taskId: found.name };
    this.forward(member, { ...request, params }, this.outerResult(member), {
      method: request.method,
      taskId: taskId as string,
      request,
    });
  }

  /** Asks a task's server what another session or replica asked of it (TaskHolder). */
  async askTask(method: string, taskId: string): Promise<Outcome> {
    const found = this.taskIds.innerTaskId(taskId, [...this.byName.keys()]);
    const member = found === undefined ? undefined : this.byName.get(found.server);
    if (found === undefined || member === undefined) {
      return { ok: false, error: { code: ErrorCode.InvalidParams, message: `Task not found: ${taskId}` } };
    }
    const outcome = await member.ask(method, { taskId: found.name });
    if (!outcome.ok) return outcome;
    return { ok: true, result: this.outerResult(member)(outcome.result) ?? outcome.result };
  }

  /** Asks the client a server's request carried from another session holding its task (TaskHolder). */
  askClient(request: Request, about: RequestId, signal: AbortSignal): Promise<Response | undefined> {
    return this.serverRequests.askCarried(request, { relatedTo: about }, signal);
  }

  /** A method the aggregator does not route: the one server's, with one server; unknown with several. */
  private toOnly(request: Request): void {
    const [only, ...others] = this.members;
    if (only === undefined || others.length > 0) {
      throw new ProtocolError(ErrorCode.MethodNotFound, `Method not found: ${request.method}`);
    }
    this.forwardTo(only, request);
  }

  private async everyone(method: string, params: JsonObject | undefined): Promise<JsonObject> {
    const outcomes = await Promise.all(this.serving().map((member) => member.ask(method, params)));
    const failed = outcomes.find((outcome) => !outcome.ok);
    if (failed !== undefined && !failed.ok && outcomes.every((outcome) => !outcome.ok)) {
      throw new ProtocolError(failed.error.code, failed.error.message, failed.error.data);
    }
    return {};
  }

  private forwardTo(member: Member, request: Request): void {
    this.forward(member, request, () => undefined);
  }

  private forward(
    member: Member,
    request: Request,
    rewrite: Routed['rewrite'],
    about?: Routed['about'],
  ): void {
    const unavailable = member.unavailable();
    if (unavailable !== undefined) return this.refuse(request.id, unavailable);
    const routed = { id: request.id, member, rewrite, ...(about === undefined ? {} : { about }) };
    const wireId = this.routed.forward(request.id, routed);
    telemetry().routed(member.name);
    member.send(wireId === request.id ? request : { ...request, id: wireId });
  }

  /** `bytes`: what it was read from, relayed as they are; a value handed without them is sent as one. */
  private notification(
    notification: Notification,
    bytes?: { raw: Buffer; parsed: object | undefined },
  ): void {
    const relay = (member: Member): void =>
      bytes === undefined ? member.send(notification) : member.sendRaw(bytes.raw, undefined, bytes.parsed);
    if (notification.method === 'notifications/cancelled') {
      const requestId = notification.params?.requestId;
      if (typeof requestId !== 'string' && typeof requestId !== 'number') return;
      this.options.serverTasks?.cancelled(requestId);
      // Its answer, if the server still sends one, is not the client's to get.
      const withdrawn = this.routed.withdraw(requestId);
      if (withdrawn === undefined) return;
      const [wireId, { member }] = withdrawn;
      if (wireId === requestId) relay(member);
      else member.send(carriedCancellation(notification, wireId));
      return;
    }
    if (notification.method === 'notifications/initialized') this.clientInitialized = true;
    // initialized, roots/list_changed and the rest concern every server.
    for (const member of this.serving()) relay(member);
  }

  private fromMember(
    member: Member,
    raw: Buffer,
    arrival: Arrival | undefined,
    parsed: object | undefined,
  ): void {
    const read = readHanded(raw, parsed, `the server "${member.name}"`);
    if (!read.ok) return;
    const { message } = read;
    if (message.kind === 'response') return this.memberAnswered(member, raw, message.msg, parsed);
    const route = this.routeOf(member, arrival);
    this.inOrder.send(member.name, raw.length, () => this.toClient(member, raw, message.msg, route, parsed));
  }

  private toClient(member: Member, raw: Buffer, msg: Request | Notification, route?: Route, parsed?: object) {
    if ('id' in msg) {
      const reply = (answer: Response): void => member.send(answer, { responseTo: msg.id });
      if (this.options.serverTasks?.carried(member.name, msg, reply) === true) return;
      return this.serverRequests.ask(member, msg, this.taskIds, route);
    }
    const { method, params } = msg;
    if (method === 'notifications/cancelled') return this.serverRequests.cancelled(member, msg, route);
    const listChanged = LIST_CHANGED.exec(method)?.[1] as ListKind | undefined;
    if (listChanged !== undefined) return this.serverListChanged(listChanged);
    const rename = method.startsWith('notifications/tasks/') ? withOuterTaskIds : withOuterRelatedTaskId;
    let renamed = params === undefined ? undefined : rename(params, member.name, this.taskIds);
    if (method === 'notifications/resources/updated' && member.prefixed && params !== undefined) {
      renamed = withOuterUpdatedUri(renamed ?? params, member.name);
    }
    if (renamed !== undefined) this.client.send({ ...msg, params: renamed }, route);
    else this.client.sendRaw(raw, route, parsed);
  }

  /** One server's list changed: the merged one has, and the client is told with the others' (ListChanges). */
  private serverListChanged(kind: ListKind): void {
    if (kind === 'tools') this.nameRoutes.changed('tool');
    if (kind === 'prompts') this.nameRoutes.changed('prompt');
    if (kind === 'resources') this.resources.clear();
    this.listChanges.changed(kind);
  }

  /**
   * Where a server's message about one of the client's requests goes: with that request (on its stream,
   * over HTTP), when the server's Session said which it is about and it is one the client sent.
   */
  private routeOf(member: Member, arrival: Arrival | undefined): Route | undefined {
    const about = arrival?.onStreamOf;
    if (about === undefined) return undefined;
    const routed = this.routed.get(about);
    return routed?.member === member ? { relatedTo: routed.id } : undefined;
  }

  private memberAnswered(member: Member, raw: Buffer, response: Response, parsed: object | undefined): void {
    if (member.takeAnswer(response)) return;
    if (response.id === null) return;
    if (this.routed.get(response.id)?.member !== member) return;
    const routed = this.routed.take(response.id)!;
    const rewritten = 'result' in response ? routed.rewrite(response.result) : undefined;
    const route = { responseTo: routed.id };
    const { serverTasks } = this.options;
    const createsTask =
      serverTasks !== undefined && routed.about?.method === 'tools/call' && isObject(rewritten?.task);
    const deliver = this.inOrder.answer(member.name, raw.length, createsTask, () => {
      if (rewritten !== undefined) this.client.send(successResponse(routed.id, rewritten), route);
      else if (response.id === routed.id) this.client.sendRaw(raw, route, parsed);
      else this.client.send({ ...response, id: routed.id }, route);
    });
    if (serverTasks === undefined || routed.about === undefined) return deliver();
    serverTasks.answered(this, routed.about, response, rewritten?.task, deliver, (answer) =>
      this.client.send(answer, route),
    );
  }

  /** A server's Session went away: what waits on it is answered, and the others keep serving. */
  private memberGone(member: Member, reason: string): void {
    member.gone(reason);
    if (this.closing !== undefined) return;
    this.options.logger.error(
      { server: member.name, reason },
      `the server "${member.name}" is gone (${reason}): its calls fail, the other servers keep serving`,
    );
    const error = member.unavailable()!;
    for (const [, routed] of this.routed.takeWhere((routed) => routed.member === member)) {
      this.refuse(routed.id, error);
    }
    this.serverRequests.memberGone(member);
    this.listsChanged();
  }
}

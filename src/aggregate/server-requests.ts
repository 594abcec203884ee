/**
 * The requests the servers' sides send the client (elicitation, sampling, roots, ping, and a server's
 * `tasks/*` about the client's own tasks): each reaches the client under an id of the aggregator's, since
 * two servers number theirs alike, and its answer goes back to the server that asked, under its own id.
 */
import { randomBytes } from 'node:crypto';
import type { Request, RequestId, Response } from '../protocol/messages.js';
import { idKey, type Notification } from '../protocol/messages.js';
import type { Channel, Route } from '../transport/channel.js';
import type { Member } from './member.js';
import { withOuterRelatedTaskId, type TaskIdNames } from './task-ids.js';

interface Asked {
  member: Member;
  id: RequestId;
}

const TOKEN = randomBytes(6).toString('hex');

export class ServerRequests {
  private readonly asked = new Map<string, Asked>();
  /** Those carried from a server's process elsewhere (replica-tasks.ts): who waits for each answer. */
  private readonly carried = new Map<string, (response: Response) => void>();
  /** The aggregator's id of each open request, by server and the server's own id. */
  private readonly ours = new Map<Member, Map<string | number, string>>();
  private next = 0;

  constructor(private readonly client: Channel) {}

  ask(member: Member, request: Request, names: TaskIdNames, route: Route | undefined): void {
    const id = `taskgate-server-${TOKEN}-${++this.next}`;
    this.asked.set(id, { member, id: request.id });
    let own = this.ours.get(member);
    if (own === undefined) this.ours.set(member, (own = new Map()));
    own.set(idKey(request.id), id);
    // The ids in a server's tasks/* are the client's own tasks'; in any other, the server's task's.
    const params =
      request.params === undefined || request.method.startsWith('tasks/')
        ? undefined
        : withOuterRelatedTaskId(request.params, member.name, names);
    this.client.send({ ...request, id, ...(params === undefined ? {} : { params }) }, route);
  }

  /** A server's request carried from where its task is held, asked of the client: its answer. */
  askCarried(request: Request, route: Route): Promise<Response> {
    const id = `taskgate-server-${TOKEN}-${++this.next}`;
    return new Promise((resolve) => {
      this.carried.set(id, resolve);
      this.client.send({ ...request, id }, route);
    });
  }

  /** The client's answer to one of them, taken back to its server. */
  answered(response: Response): void {
    if (typeof response.id !== 'string') return;
    const carried = this.carried.get(response.id);
    if (carried !== undefined) {
      this.carried.delete(response.id);
      return carried(response);
    }
    const asked = this.asked.get(response.id);
    if (asked === undefined) return;
    this.forget(response.id, asked);
    asked.member.send({ ...response, id: asked.id }, { responseTo: asked.id });
  }

  /** A server withdrew one of its requests. */
  cancelled(member: Member, notification: Notification, route: Route | undefined): void {
    const requestId = notification.params?.requestId;
    if (typeof requestId !== 'string' && typeof requestId !== 'number') return;
    const id = this.ours.get(member)?.get(idKey(requestId));
    if (id === undefined) return;
    this.forget(id, this.asked.get(id)!);
    this.client.send({ ...notification, params: { ...notification.params, requestId: id } }, route);
  }

  /** What a server that is gone asked is withdrawn from the client. */
  memberGone(member: Member): void {
    for (const id of this.ours.get(member)?.values() ?? []) {
      this.asked.delete(id);
      this.client.send({
        jsonrpc: '2.0',
        method: 'notifications/cancelled',
        params: { requestId: id, reason: `the server "${member.name}" is gone` },
      });
    }
    this.ours.delete(member);
  }

  private forget(id: string, asked: Asked): void {
    this.asked.delete(id);
    this.ours.get(asked.member)?.delete(idKey(asked.id));
  }
}

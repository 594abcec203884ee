/**
 * The requests the servers' sides send the client (elicitation, sampling, roots, ping, and a server's
 * `tasks/*` about the client's own tasks): each reaches the client under an id of the aggregator's, since
 * two servers number theirs alike, and its answer goes back to the server that asked, under its own id.
 */
import { randomBytes } from 'node:crypto';
import { cancellation, carriedCancellation, Correlation } from '../protocol/correlation.js';
import type { Notification, Request, RequestId, Response } from '../protocol/messages.js';
import type { Channel, Route } from '../transport/channel.js';
import type { Member } from './member.js';
import { withOuterRelatedTaskId, type TaskIdNames } from './task-ids.js';

/** A server's request: its server and its own id; or one carried from where its task is held: who waits. */
type Asked = { member: Member; id: RequestId } | { reply: (response: Response) => void };

const TOKEN = randomBytes(6).toString('hex');

export class ServerRequests {
  /** Each open request by the aggregator's id, with its server (the origin) and the server's own id. */
  private readonly asked = new Correlation<Asked, Member>({
    renumber: true,
    mint: (counter) => `taskgate-server-${TOKEN}-${counter + 1}`,
  });

  constructor(private readonly client: Channel) {}

  ask(member: Member, request: Request, names: TaskIdNames, route: Route | undefined): void {
    const id = this.asked.forward(request.id, { member, id: request.id }, member);
    // The ids in a server's tasks/* are the client's own tasks'; in any other, the server's task's.
    const params =
      request.params === undefined || request.method.startsWith('tasks/')
        ? undefined
        : withOuterRelatedTaskId(request.params, member.name, names);
    this.client.send({ ...request, id, ...(params === undefined ? {} : { params }) }, route);
  }

  /**
   * A server's request carried from where its task is held (replica-tasks.ts), asked of the client: its
   * answer; undefined once `signal` says no one waits for it any more, when it is withdrawn from the client.
   */
  askCarried(request: Request, route: Route, signal: AbortSignal): Promise<Response | undefined> {
    return new Promise((resolve) => {
      const withdraw = (): void => {
        if (this.asked.take(id) === undefined) return;
        // Not on the route of the request it was about: that one is over.
        this.client.send(cancellation(id, 'the request it was asked for is no longer waiting'));
        resolve(undefined);
      };
      const reply = (response: Response): void => {
        signal.removeEventListener('abort', withdraw);
        resolve(response);
      };
      const id = this.asked.own({ reply });
      signal.addEventListener('abort', withdraw, { once: true });
      this.client.send({ ...request, id }, route);
    });
  }

  /** The client's answer to one of them, taken back to its server. */
  answered(response: Response): void {
    if (response.id === null) return;
    const asked = this.asked.take(response.id);
    if (asked === undefined) return;
    if ('reply' in asked) return asked.reply(response);
    asked.member.send({ ...response, id: asked.id }, { responseTo: asked.id });
  }

  /** A server withdrew one of its requests. */
  cancelled(member: Member, notification: Notification, route: Route | undefined): void {
    const requestId = notification.params?.requestId;
    if (typeof requestId !== 'string' && typeof requestId !== 'number') return;
    const withdrawn = this.asked.withdraw(requestId, member);
    if (withdrawn !== undefined) this.client.send(carriedCancellation(notification, withdrawn[0]), route);
  }

  /** What a server that is gone asked is withdrawn from the client. */
  memberGone(member: Member): void {
    for (const [id] of this.asked.takeWhere((asked) => 'member' in asked && asked.member === member)) {
      this.client.send(cancellation(id, `the server "${member.name}" is gone`));
    }
  }
}

/**
 * The bridge's own requests to its Session (bridge.ts): those of the tasks extension, the tools/list read
 * for header parameters, the subscriptions' (un)subscribes. Each is made for a caller (the creator of the
 * task it is about), counted against no quota, and answered with the reason once the Session is gone.
 */
import { cancellation } from '../protocol/correlation.js';
import type { JsonRpcErrorObject } from '../protocol/errors.js';
import { NO_CALLER, type RequestCaller } from '../protocol/caller.js';
import type { JsonObject, Notification, Request } from '../protocol/messages.js';
import type { TaskOutcome as Outcome } from '../tasks/state.js';

/** What the bridge lends: its ids (one sequence with its calls'), its sending, and whether the Session is gone. */
export interface OwnRequestsHost {
  nextId(): number;
  /** Hands a request to the Session, made for `caller`. */
  take(request: Request, caller: RequestCaller): void;
  /** Sends the Session a notification (a cancellation). */
  toSession(message: Notification): void;
  /** The error a request gets once the Session is gone; undefined while it is not. */
  gone(): JsonRpcErrorObject | undefined;
}

export class OwnRequests {
  private readonly pending = new Map<number, { settle(outcome: Outcome): void }>();

  constructor(private readonly host: OwnRequestsHost) {}

  /** A request of the bridge's own to the Session, for `caller`; answered with the reason once the Session is gone. */
  ask(
    method: string,
    params: JsonObject,
    caller: RequestCaller = NO_CALLER,
  ): { id: number; answer: Promise<Outcome> } {
    const id = this.host.nextId();
    const gone = this.host.gone();
    if (gone !== undefined) return { id, answer: Promise.resolve({ error: gone }) };
    const answer = new Promise<Outcome>((settle) => this.pending.set(id, { settle }));
    this.host.take({ jsonrpc: '2.0', id, method, params }, withoutQuota(caller));
    return { id, answer };
  }

  /**
   * The answer to a request the bridge already sent (a client's call given up before its answer) is taken
   * as its own: `settle` gets it.
   */
  adopt(id: number, settle: (outcome: Outcome) => void): void {
    this.pending.set(id, { settle });
  }

  /** Gives up one of the bridge's own requests. */
  drop(id: number, reason: string): void {
    if (!this.pending.delete(id) || this.host.gone() !== undefined) return;
    this.host.toSession(cancellation(id, reason));
  }

  /** The Session answered: says whether it was one of these (then it is settled). */
  answered(id: number, outcome: Outcome): boolean {
    const own = this.pending.get(id);
    if (own === undefined) return false;
    this.pending.delete(id);
    own.settle(outcome);
    return true;
  }

  /** The Session is gone: each request still waiting is answered with the error `unavailable` makes. */
  close(unavailable: () => JsonRpcErrorObject): void {
    const own = [...this.pending.values()];
    this.pending.clear();
    for (const { settle } of own) settle({ error: unavailable() });
  }
}

/** The caller a request of the bridge's own is made for: counted already, when it was the client's. */
const withoutQuota = ({ quota: _quota, ...caller }: RequestCaller): RequestCaller => caller;

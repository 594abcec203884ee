/**
 * The client as the session sends requests to it: one table of what it has been asked and not answered
 * yet — the upstream's requests relayed to it, and taskgate's own (a client-side task's request) — so
 * that ids never collide, and whatever the client can no longer answer is ended in one place.
 */
import { Correlation, cancellation, goneError } from '../protocol/correlation.js';
import { errorResponse, type JsonObject, type Request, type RequestId } from '../protocol/messages.js';
import type { OwnCall } from '../tasks/own-call.js';
import type { Channel, Route } from '../transport/channel.js';
import { dropCall, placeCall, type OwnPending } from './own-calls.js';

/** A request of the upstream's relayed to the client. */
export interface Relayed {
  kind: 'upstream';
  upstreamId: RequestId;
  /** The task of taskgate's own it was made for (its answer ends the task's input_required). */
  taskId?: string;
  /** The stream it went on. */
  route?: Route;
  /** It asked the client for a task. */
  asTask?: boolean;
}

type ClientPending = Relayed | OwnPending;

export class ClientPeer {
  private readonly pending = new Correlation<ClientPending>();

  constructor(readonly channel: Channel) {}

  /**
   * Relays an upstream request to the client (as its exact bytes, `raw`, when its id goes unchanged),
   * on `entry.route`.
   */
  relay(request: Request, entry: Omit<Relayed, 'kind' | 'upstreamId'>, raw?: Buffer, handed?: object): void {
    const wireId = this.pending.forward(request.id, { kind: 'upstream', upstreamId: request.id, ...entry });
    if (wireId === request.id && raw !== undefined) this.channel.sendRaw(raw, entry.route, handed);
    else this.channel.send({ ...request, id: wireId }, entry.route);
  }

  /** The request an answer from the client answers, now no longer awaited. */
  answered(wireId: RequestId): ClientPending | undefined {
    return this.pending.take(wireId);
  }

  awaits(wireId: RequestId): boolean {
    return this.pending.get(wireId) !== undefined;
  }

  /** Stops waiting for a relayed request the upstream cancelled: the id the client knows it by, if awaited. */
  withdraw(upstreamId: RequestId): RequestId | undefined {
    return this.pending.withdraw(upstreamId)?.[0];
  }

  /** A request of taskgate's own to the client. */
  call(method: string, params: JsonObject): OwnCall {
    return placeCall(this.pending, (m) => this.channel.send(m), method, params);
  }

  cancelCall(wireId: RequestId, reason: string): void {
    dropCall(this.pending, (m) => this.channel.send(m), wireId, reason);
  }

  /**
   * The client's input ended: nothing asked of it will be answered. Own calls settle with the error; the
   * relayed requests are handed back, for the upstream to be told.
   */
  inputEnded(reason: string): { upstreamId: RequestId; error: { code: number; message: string } }[] {
    const error = goneError('client', `The client closed its input (${reason})`);
    const refused = [];
    for (const [, entry] of this.pending.takeWhere(() => true)) {
      if (entry.kind === 'own') entry.settle({ response: errorResponse(null, error), bytes: 0 });
      else refused.push({ upstreamId: entry.upstreamId, error });
    }
    return refused;
  }

  /**
   * The upstream that asked went away: the client is told to stop, on each request's own stream (a
   * request that asked for a task would need tasks/cancel, with an id not known yet: it is only forgotten).
   */
  withdrawAllRelayed(reason: string): void {
    for (const [requestId, entry] of this.pending.takeWhere((pending) => pending.kind === 'upstream')) {
      if (entry.kind !== 'upstream' || entry.asTask) continue;
      this.channel.send(cancellation(requestId, reason), entry.route);
    }
  }
}

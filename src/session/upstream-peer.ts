/**
 * The upstream as the session sends to it: one table of what is in flight there (forwarded client
 * requests and taskgate's own calls, each with the one deadline `upstream.requestTimeout`), and whether
 * it is there at all. Whatever it leaves unanswered — by its deadline, or by going away — is ended here
 * with the reason: an own call settles with the error, a forwarded request goes back to the session for
 * its client.
 */
import type { Logger } from 'pino';
import { ErrorCode } from '../protocol/errors.js';
import { Correlation, cancellation, goneError } from '../protocol/correlation.js';
import { withIdAt } from '../protocol/envelope.js';
import { handed } from '../protocol/exact-ids.js';
import { errorResponse, type JsonObject, type Request, type RequestId } from '../protocol/messages.js';
import { scanJson } from '../protocol/scan.js';
import type { OwnCall } from '../tasks/own-call.js';
import type { Channel } from '../transport/channel.js';
import { dropCall, placeCall, type OwnPending } from './own-calls.js';

/** A client request forwarded upstream. */
export interface Forwarded {
  kind: 'client';
  clientId: RequestId;
  method: string;
  sentAt: number;
  onResult?: (result: JsonObject) => JsonObject;
  /** For tasks/result of the upstream's own task: which one (answered, it is over for the client). */
  taskId?: string;
  /** For tools/call: the tool, to name the upstream's task if it answers with one. */
  tool?: string;
}

type UpstreamPending = Forwarded | OwnPending;

export interface UpstreamState {
  /** True once the upstream has answered initialize. */
  initialized: boolean;
  /** Why the upstream is away, while it is (for good, or until a restarted one is back). */
  goneReason?: string;
}

export interface UpstreamError {
  code: number;
  message: string;
}

export interface UpstreamPeerOptions {
  requestTimeoutMs: number;
  /** While a restarted upstream is awaited, requests wait for it (`upstreamRestart.holdRequests`). */
  holdsRequests: boolean;
  logger: Logger;
  /** A forwarded request the upstream will not answer: the client is owed `error`. */
  unanswered(entry: Forwarded, wireId: RequestId | undefined, error: UpstreamError): void;
}

export class UpstreamPeer {
  readonly state: UpstreamState = { initialized: false };
  private holding = false;
  /** Away, and not being restarted. */
  private goneForGood = false;
  private readonly pending: Correlation<UpstreamPending>;

  constructor(
    readonly channel: Channel,
    private readonly options: UpstreamPeerOptions,
  ) {
    this.pending = new Correlation<UpstreamPending>({
      deadline: {
        afterMs: options.requestTimeoutMs,
        expired: (wireId, entry, afterMs) => this.timedOut(wireId, entry, afterMs),
      },
    });
  }

  /** The upstream is away (for good, or being restarted). */
  get isAway(): boolean {
    return this.state.goneReason !== undefined;
  }

  get isGoneForGood(): boolean {
    return this.goneForGood;
  }

  /** Requests are refused: the upstream is away, and not coming back soon enough to wait for it. */
  get refuses(): boolean {
    return this.isAway && !this.holding;
  }

  /** What a request that cannot go to the upstream now is answered. */
  unavailable(): UpstreamError {
    return goneError('upstream', String(this.state.goneReason));
  }

  /** A client request about to be forwarded, awaited from now on: the id it goes as. */
  register(clientId: RequestId, entry: Forwarded): RequestId {
    return this.pending.forward(clientId, entry);
  }

  /**
   * Sends a registered client request: its exact bytes, handed beside them unless its id is an alias
   * (exact-ids.ts), which parsing the bytes would not give; renumbered, the same bytes with the wire id
   * over the client's. One handed as a value (Session.take) goes as it is.
   */
  send(request: Request, wireId: RequestId, raw: Buffer | undefined): void {
    if (raw === undefined) this.channel.send(wireId === request.id ? request : { ...request, id: wireId });
    else if (wireId === request.id) this.channel.sendRaw(raw, undefined, handed(request));
    else this.sendRenumbered({ ...request, id: wireId }, raw);
  }

  /**
   * `raw` with the id the scan finds in it replaced by `request`'s (issue 33): the payload is not
   * serialised again. With its `id` twice it goes serialised: JSON.parse took the last, a server's parser
   * might take the other.
   */
  private sendRenumbered(request: Request, raw: Buffer): void {
    const scanned = scanJson(raw);
    if (typeof scanned === 'string' || scanned.top.id === undefined || scanned.idRepeated) {
      return this.channel.send(request);
    }
    const renumbered = withIdAt(raw, scanned.top.id, Buffer.from(JSON.stringify(request.id)));
    this.channel.sendRaw(renumbered, undefined, handed(request));
  }

  /** The request an answer from the upstream answers, now no longer in flight. */
  answered(wireId: RequestId): UpstreamPending | undefined {
    return this.pending.take(wireId);
  }

  /** The request an answer from the upstream would answer, left in flight. */
  awaiting(wireId: RequestId): UpstreamPending | undefined {
    return this.pending.get(wireId);
  }

  /** Whether a request with this id is in flight upstream. */
  awaits(wireId: RequestId): boolean {
    return this.pending.get(wireId) !== undefined;
  }

  /** The client request that went upstream as `wireId`, while it is in flight. */
  clientRequestOf(wireId: RequestId): RequestId | undefined {
    const entry = this.pending.get(wireId);
    return entry?.kind === 'client' ? entry.clientId : undefined;
  }

  /** Stops waiting for a forwarded request the client cancelled: the id it went as, if it is in flight. */
  withdraw(clientId: RequestId): RequestId | undefined {
    return this.pending.withdraw(clientId)?.[0];
  }

  /** A request of taskgate's own (`timeoutMs` in place of upstream.requestTimeout). */
  call(method: string, params: JsonObject, timeoutMs?: number): OwnCall {
    if (this.refuses) {
      return {
        wireId: '',
        done: Promise.resolve({ response: errorResponse(null, this.unavailable()), bytes: 0 }),
      };
    }
    return placeCall(this.pending, (m) => this.channel.send(m), method, params, timeoutMs);
  }

  /** Gives up on one of taskgate's own calls; the upstream is told, unless it is away. */
  cancelCall(wireId: RequestId, reason: string): void {
    dropCall(this.pending, this.isAway ? undefined : (m) => this.channel.send(m), wireId, reason);
  }

  /** The upstream went away; `reopening`: it is being restarted. */
  away(reason: string, reopening: boolean): void {
    this.state.goneReason = reopening ? `${reason}, and is being restarted` : reason;
    this.holding = reopening && this.options.holdsRequests;
    this.goneForGood = !reopening;
  }

  /** Everything in flight is ended with the reason the upstream went away. */
  failInFlight(reason: string): void {
    const error = goneError('upstream', reason);
    for (const entry of this.pending.drain()) {
      if (entry.kind === 'own') entry.settle({ response: errorResponse(null, error), bytes: 0 });
      else
        this.options.unanswered(entry, undefined, {
          ...error,
          message: `${error.message} before answering ${entry.method}`,
        });
    }
  }

  /** A restarted upstream is back. */
  back(): void {
    delete this.state.goneReason;
    this.holding = false;
    this.goneForGood = false;
  }

  /**
   * A request the upstream did not answer in time: the upstream is told to stop, and the request's sender
   * (the client, or taskgate itself: a task's call then fails its task) gets an error that says so.
   */
  private timedOut(wireId: RequestId, entry: UpstreamPending, afterMs: number): void {
    const message = `Upstream server did not answer ${entry.method} within ${afterMs} ms`;
    this.options.logger.warn({ id: wireId }, message);
    // MCP never cancels initialize.
    if (entry.method !== 'initialize') {
      this.channel.send(cancellation(wireId, message));
    }
    const error = { code: ErrorCode.UpstreamUnavailable, message };
    if (entry.kind === 'own') entry.settle({ response: errorResponse(wireId, error), bytes: 0 });
    else this.options.unanswered(entry, wireId, error);
  }
}

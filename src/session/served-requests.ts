/**
 * The requests of one peer that taskgate answers itself (tasks/*, a refused call, a client-side task's
 * creation), and the one way each is answered: its result, or the JSON-RPC error its failure maps to
 * (wire-errors.ts). One that blocks (tasks/result) may be cancelled meanwhile and then gets no answer, as
 * MCP cancellation says; nothing is answered to a peer that is gone.
 */
import type { Logger } from 'pino';
import { ProtocolError } from '../protocol/errors.js';
import { serialize } from '../protocol/exact-ids.js';
import {
  errorResponse,
  idKey,
  successResponse,
  type JsonObject,
  type RequestId,
} from '../protocol/messages.js';
import { Pieces } from '../protocol/pieces.js';
import type { ResultAnswer } from '../tasks/result-bytes.js';
import { toJsonRpcError } from '../tasks/wire-errors.js';

export type Outcome = ResultAnswer;

const CLOSE_BRACE = Buffer.from('}');

export class ServedRequests {
  /** Requests whose answer may wait (tasks/result), by id, to stop them when cancelled. */
  private readonly blocking = new Map<string | number, AbortController>();
  private gone = false;

  /** `send`: the answer to the peer's request `id`, on that request's stream; `sendRaw` the same as its bytes. */
  constructor(
    private readonly send: (id: RequestId, message: object) => void,
    private readonly sendRaw: (id: RequestId, raw: Pieces | string) => void,
    private readonly logger: Logger,
  ) {}

  /** The peer went away (a crashed upstream): what it asked gets no answer, so a restarted one never sees it. */
  get isGone(): boolean {
    return this.gone;
  }

  answer(id: RequestId, handler: () => Promise<JsonObject>): void {
    handler().then(
      (result) => this.reply(id, successResponse(id, result)),
      (error: unknown) => this.refuse(id, error),
    );
  }

  /** Like answer, for a request that may block (tasks/result) and so may be cancelled meanwhile. */
  answerBlocking(id: RequestId, handler: (signal: AbortSignal) => Promise<Outcome>): void {
    if (this.gone) return;
    const controller = new AbortController();
    const key = idKey(id);
    this.blocking.set(key, controller);
    const unblock = (): void => {
      if (this.blocking.get(key) === controller) this.blocking.delete(key);
    };
    handler(controller.signal).then(
      (outcome) => {
        if (controller.signal.aborted) {
          // Not answered: it was cancelled.
        } else if ('resultBytes' in outcome) {
          if (!this.gone) this.sendRaw(id, rawSuccess(id, outcome.resultBytes));
        } else {
          this.reply(
            id,
            'error' in outcome ? errorResponse(id, outcome.error) : successResponse(id, outcome.result),
          );
        }
        unblock();
      },
      (error: unknown) => {
        if (!controller.signal.aborted) this.refuse(id, error);
        unblock();
      },
    );
  }

  /** The error `error` maps to, as the answer. */
  refuse(id: RequestId, error: unknown): void {
    if (!(error instanceof ProtocolError)) this.logger.debug({ err: error }, 'request refused');
    this.reply(id, errorResponse(id, toJsonRpcError(error)));
  }

  /** The peer cancelled its request: true when it was one blocking here (stopped now, never answered). */
  cancel(id: RequestId): boolean {
    const controller = this.blocking.get(idKey(id));
    controller?.abort();
    return controller !== undefined;
  }

  isBlocking(key: string | number): boolean {
    return this.blocking.has(key);
  }

  get blockingCount(): number {
    return this.blocking.size;
  }

  /** Stops every request still blocking (the session closes). */
  stopBlocking(): void {
    for (const controller of this.blocking.values()) controller.abort();
  }

  /** The peer is gone: nothing it asked is answered any more. */
  abandon(): void {
    this.gone = true;
    this.stopBlocking();
  }

  private reply(id: RequestId, message: object): void {
    if (!this.gone) this.send(id, message);
  }
}

/** The success response to `id` around a result's JSON text, which is neither parsed nor copied. */
function rawSuccess(id: RequestId, result: Pieces | string): Pieces | string {
  const head = `${serialize({ jsonrpc: '2.0', id }).slice(0, -1)},"result":`;
  if (typeof result === 'string') return `${head}${result}}`;
  const first = Buffer.from(head);
  return new Pieces([first, ...result.parts, CLOSE_BRACE], first.length + result.length + 1);
}

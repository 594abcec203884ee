/**
 * One server behind the aggregator, as the aggregator sees it: the channel to its Session (the
 * aggregator is that Session's client), the requests the aggregator asked it itself (ids of its own,
 * which no client can send: they carry a random token), and whether it is still there.
 */
import { randomBytes } from 'node:crypto';
import { Correlation } from '../protocol/correlation.js';
import { ErrorCode, type JsonRpcErrorObject } from '../protocol/errors.js';
import type { JsonObject, Request, Response } from '../protocol/messages.js';
import type { ToolFacts } from '../modern/bridge-call.js';
import type { Channel, Route } from '../transport/channel.js';
import type { ToolFilter } from './names.js';
import type { ServerReadiness } from './readiness.js';

export type Outcome = { ok: true; result: JsonObject } | { ok: false; error: JsonRpcErrorObject };

/** What the aggregator is told of one server. */
export interface MemberSpec {
  name: string;
  /** Its tools and prompts are listed under `{name}{separator}`. */
  prefixed: boolean;
  filter: ToolFilter;
  /** The aggregator's end of the channel to the server's Session. */
  channel: Channel;
  /** For people: the command line or the URL. */
  description: string;
  /** It could not be started: why (it serves nothing). */
  failed?: string;
  /** Ends the server's Session, and so the server (the channel with it). */
  close(): Promise<void>;
  /**
   * What its Session knows the server does with a tool of its own name, and the operator's rule for it: what
   * the 2026-07-28 bridge decides a call by (bridge-call.ts). Absent for a server that could not be started.
   */
  toolFacts?(name: string): ToolFacts;
  /**
   * Hands its Session a request of the aggregator's own as no caller's, its answer to `answer`: the caller's
   * auth.rules do not narrow it. Absent for a server that could not be started.
   */
  handUnnarrowed?(request: Request, answer: (response: Response) => void): void;
  /** The caller's auth.rules let it see the tool of this name of the server's own (all, without rules). */
  shows?(tool: string): boolean;
}

const TOKEN = randomBytes(6).toString('hex');

export class Member {
  readonly name: string;
  readonly prefixed: boolean;
  readonly filter: ToolFilter;
  readonly description: string;
  readonly toolFacts: ((name: string) => ToolFacts) | undefined;
  readonly shows: (tool: string) => boolean;
  private readonly channel: Channel;
  private readonly handUnnarrowed: MemberSpec['handUnnarrowed'];
  private readonly end: () => Promise<void>;
  /** The aggregator's own requests to it, each with what settles it. */
  private readonly asked = new Correlation<(outcome: Outcome) => void>({
    mint: (counter) => `taskgate-aggregate-${TOKEN}-${counter + 1}`,
  });
  /** Why it is no longer there; undefined while it is. */
  goneReason: string | undefined;
  /** Its answer to the client's initialize was an error: it serves nothing. */
  refusedInitialize: JsonRpcErrorObject | undefined;
  /** It has not answered the client's initialize yet (it was too slow for the merged answer). */
  joining = false;

  constructor(spec: MemberSpec) {
    this.name = spec.name;
    this.prefixed = spec.prefixed;
    this.filter = spec.filter;
    this.description = spec.description;
    this.channel = spec.channel;
    this.toolFacts = spec.toolFacts;
    this.shows = spec.shows ?? (() => true);
    this.handUnnarrowed = spec.handUnnarrowed;
    this.end = spec.close;
    this.goneReason = spec.failed === undefined ? undefined : `it could not be started: ${spec.failed}`;
  }

  get serving(): boolean {
    return this.goneReason === undefined && this.refusedInitialize === undefined && !this.joining;
  }

  /** Why a request for this server cannot be served, as the error the client gets; undefined when it can. */
  unavailable(): JsonRpcErrorObject | undefined {
    if (this.goneReason !== undefined) {
      return {
        code: ErrorCode.UpstreamUnavailable,
        message: `The server "${this.name}" is gone (${this.goneReason})`,
      };
    }
    if (this.joining) {
      return {
        code: ErrorCode.UpstreamUnavailable,
        message: `The server "${this.name}" has not answered initialize yet`,
      };
    }
    if (this.refusedInitialize !== undefined) {
      return {
        code: ErrorCode.UpstreamUnavailable,
        message: `The server "${this.name}" refused initialize: ${this.refusedInitialize.message}`,
      };
    }
    return undefined;
  }

  /** What /readyz says of it. */
  get readiness(): ServerReadiness {
    if (this.goneReason !== undefined) return { state: 'gone', cause: this.goneReason };
    if (this.refusedInitialize !== undefined) {
      return { state: 'refused', cause: this.refusedInitialize.message };
    }
    return { state: this.joining ? 'joining' : 'ready' };
  }

  start(handlers: Parameters<Channel['start']>[0]): void {
    this.channel.start(handlers);
  }

  send(message: object, route?: Route): void {
    this.channel.send(message, route);
  }

  sendRaw(raw: Buffer | string, route?: Route, parsed?: object): void {
    this.channel.sendRaw(raw, route, parsed);
  }

  /** A request of the aggregator's own (a part of one the client sent to every server). */
  ask(method: string, params: JsonObject | undefined): Promise<Outcome> {
    return this.asking(method, params, (request) => this.channel.send(request));
  }

  /**
   * A request of the aggregator's own that the caller's auth.rules do not narrow (the whole lists it routes
   * by, which the client never sees as they are): a name they hide still reaches its server's Session,
   * which refuses it as it refuses a prefixed one.
   */
  askUnnarrowed(method: string, params: JsonObject | undefined): Promise<Outcome> {
    const hand = this.handUnnarrowed;
    if (hand === undefined) return this.ask(method, params);
    return this.asking(method, params, (request) => hand(request, (response) => this.takeAnswer(response)));
  }

  private asking(
    method: string,
    params: JsonObject | undefined,
    send: (request: Request) => void,
  ): Promise<Outcome> {
    const gone = this.goneReason === undefined ? undefined : this.unavailable();
    if (gone !== undefined) return Promise.resolve({ ok: false, error: gone });
    return new Promise((resolve) => {
      const id = this.asked.own(resolve);
      send({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) });
    });
  }

  /** Takes the answer to one of the aggregator's own requests; false for any other response. */
  takeAnswer(response: Response): boolean {
    if (response.id === null) return false;
    const resolve = this.asked.take(response.id);
    if (resolve === undefined) return false;
    resolve(
      'result' in response ? { ok: true, result: response.result } : { ok: false, error: response.error },
    );
    return true;
  }

  /** The server's Session went away: what the aggregator asked it is answered with why. */
  gone(reason: string): void {
    this.goneReason ??= reason;
    const error = this.unavailable()!;
    for (const resolve of this.asked.drain()) resolve({ ok: false, error });
  }

  close(): Promise<void> {
    return this.end();
  }
}

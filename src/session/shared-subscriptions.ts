/**
 * The resource subscriptions of the client sessions on a shared upstream (`upstream.sharing: shared` and
 * `pool`). The server holds one subscription per URI; this says which sessions want its updates and
 * settles each session's subscribe and unsubscribe against that one (the multiplexer,
 * src/transport/shared-upstream.ts, sends and answers what it is told).
 */
import { idKey, successResponse, type Request, type RequestId, type Response } from '../protocol/messages.js';
import type {
  SharedPort,
  SharedSubscriptionRules,
  SubscriptionHost,
  WireId,
} from '../transport/shared-rules.js';

/** A resources/subscribe on its way upstream, and the ports' subscribes to its URI that wait for its answer. */
interface Subscribing {
  uri: string;
  /** The port whose subscribe it is, while it waits for the answer. */
  sender: SharedPort | undefined;
  waiting: { port: SharedPort; id: RequestId }[];
}

type Key = string | number;

export class SharedSubscriptions implements SharedSubscriptionRules {
  /** URI → the ports subscribed to it (or whose first subscribe is on its way). */
  private readonly byUri = new Map<string, Set<SharedPort>>();
  /** Each URI's subscribe in flight upstream, by its wire id: the one that made its subscribers' record. */
  private readonly subscribing = new Map<string, WireId>();
  /** The subscribes in flight upstream, by wire id. */
  private readonly sent = new Map<WireId, Subscribing>();
  /** Each port's subscribes waiting for another's in flight to the same URI: its own id's key → that one's wire id. */
  private readonly waitingOf = new Map<SharedPort, Map<Key, WireId>>();
  private host: SubscriptionHost | undefined;

  bind(host: SubscriptionHost): void {
    this.host = host;
  }

  /**
   * The first subscriber's subscribe goes upstream; one that comes while it is in flight waits for its
   * answer and is given the same outcome, so that no session is told it is subscribed to what the server
   * refused. A refusal leaves nobody subscribed: the next subscriber asks the server again. Once the
   * server has said yes, later subscribers are answered here. A session that stops waiting (it cancelled,
   * or closed) is no subscriber, and a subscribe nobody waits on any more is cancelled (letGo).
   */
  subscribe(port: SharedPort, request: Request): void {
    const uri = request.params?.uri;
    if (typeof uri !== 'string') return void this.host?.ask(port, request);
    if (this.join(uri, port)) {
      this.host?.ask(port, request, (wireId) => {
        this.sent.set(wireId, { uri, sender: port, waiting: [] });
        this.subscribing.set(uri, wireId);
      });
      return;
    }
    const pending = this.subscribing.get(uri);
    const first = pending === undefined ? undefined : this.sent.get(pending);
    if (pending === undefined || first === undefined) return port.deliver(successResponse(request.id, {}));
    first.waiting.push({ port, id: request.id });
    let waiting = this.waitingOf.get(port);
    if (waiting === undefined) this.waitingOf.set(port, (waiting = new Map()));
    waiting.set(idKey(request.id), pending);
  }

  /** Only the last subscriber's unsubscribe goes upstream; the others are answered here. */
  unsubscribe(port: SharedPort, request: Request): void {
    const uri = request.params?.uri;
    if (typeof uri === 'string' && !this.leave(uri, port)) {
      return port.deliver(successResponse(request.id, {}));
    }
    this.host?.ask(port, request);
  }

  /** The server answered a request: if a subscribe, its subscribers' record and every subscribe waiting on it follow. */
  answered(wireId: WireId, response: Response): void {
    const subscribe = this.sent.get(wireId);
    if (subscribe === undefined) return;
    this.sent.delete(wireId);
    const { uri, waiting } = subscribe;
    if (this.subscribing.get(uri) === wireId) {
      this.subscribing.delete(uri);
      // Everyone in the record joined while this one was in flight: none of them is subscribed.
      if ('error' in response) this.byUri.delete(uri);
    }
    // (Otherwise its subscribers all left and a new first subscribe went upstream after it: theirs is moot.)
    for (const { port, id } of waiting) {
      this.waitingOf.get(port)?.delete(idKey(id));
      port.deliver({ ...response, id });
    }
  }

  /** A port stops waiting for a subscribe of another's (it cancelled its own): true if it was waiting. */
  cancelled(port: SharedPort, key: Key): boolean {
    const waiting = this.waitingOf.get(port);
    const wireId = waiting?.get(key);
    if (waiting === undefined || wireId === undefined) return false;
    waiting.delete(key);
    const subscribe = this.sent.get(wireId);
    if (subscribe !== undefined) {
      subscribe.waiting = subscribe.waiting.filter((w) => w.port !== port || idKey(w.id) !== key);
      this.letGo(port, wireId, subscribe);
    }
    return true;
  }

  /**
   * A subscribe upstream is not cancelled while others wait on it: its answer settles the record its
   * port's subscribers share. The port that sent it stops waiting; the answer goes to those that joined
   * it. True if the request was a subscribe (nothing else is to be done with it).
   */
  orphaned(wireId: WireId): boolean {
    const subscribe = this.sent.get(wireId);
    if (subscribe === undefined) return false;
    const port = subscribe.sender;
    subscribe.sender = undefined;
    this.host?.release(wireId);
    if (port !== undefined) this.letGo(port, wireId, subscribe);
    return true;
  }

  subscribers(uri: string): Iterable<SharedPort> {
    return this.byUri.get(uri) ?? [];
  }

  /** A port is closing: it waits for nobody's subscribe any more. */
  leaving(port: SharedPort): void {
    for (const key of [...(this.waitingOf.get(port)?.keys() ?? [])]) this.cancelled(port, key);
    this.waitingOf.delete(port);
  }

  /** A port closed, the upstream still here: the URIs it was the last subscriber of are let go upstream. */
  left(port: SharedPort): void {
    for (const uri of [...this.byUri.keys()]) {
      if (!this.leave(uri, port)) continue;
      const unsubscribe: Request = {
        jsonrpc: '2.0',
        id: 0,
        method: 'resources/unsubscribe',
        params: { uri },
      };
      this.host?.ask(undefined, unsubscribe);
    }
  }

  /** The upstream forgot them all (it went away). */
  upstreamClosed(): void {
    this.byUri.clear();
    this.subscribing.clear();
    this.sent.clear();
    this.waitingOf.clear();
  }

  /**
   * A port no longer waits on a subscribe in flight (it cancelled its own, or closed): its client saw it
   * fail, so it is no subscriber of the URI, whatever the server answers. Once nobody waits on it, the
   * subscribe is let go as that session's own would be (cancelled upstream), so that the URI's next
   * subscriber asks the server afresh instead of joining one the server may never answer, and nothing
   * is held for it here.
   */
  private letGo(port: SharedPort, wireId: WireId, subscribe: Subscribing): void {
    const { uri } = subscribe;
    const ours = this.subscribing.get(uri) === wireId;
    const waits = subscribe.sender === port || subscribe.waiting.some((w) => w.port === port);
    // (Not ours: a later first subscribe owns the URI's record, and the port's place in it is that one's.)
    if (ours && !waits) this.leave(uri, port);
    if (subscribe.sender !== undefined || subscribe.waiting.length > 0) return;
    if (ours && (this.byUri.get(uri)?.size ?? 0) > 0) return;
    this.sent.delete(wireId);
    if (ours) this.subscribing.delete(uri);
    this.host?.drop(wireId, 'no client session waits for this subscribe any more');
  }

  /** Adds the port; true when it is the URI's first subscriber (the upstream must be told). */
  private join(uri: string, port: SharedPort): boolean {
    const ports = this.byUri.get(uri);
    if (ports !== undefined) {
      ports.add(port);
      return false;
    }
    this.byUri.set(uri, new Set([port]));
    return true;
  }

  /** Removes the port; true when it was the URI's last subscriber (the upstream must be told). */
  private leave(uri: string, port: SharedPort): boolean {
    const ports = this.byUri.get(uri);
    if (ports?.delete(port) !== true || ports.size > 0) return false;
    this.byUri.delete(uri);
    return true;
  }
}

/**
 * A 2026-07-28 Streamable HTTP server as a channel of modern messages (basic/transports/streamable-http.mdx):
 * each request is one POST with no session, carrying the routing headers its body names (`MCP-Protocol-
 * Version`, `Mcp-Method`, `Mcp-Name`, and `Mcp-Param-*` for the tool's `x-mcp-header` parameters, learnt
 * from the tools/list answers that pass); its answer comes back as JSON or on the POST's own event stream,
 * every message of that stream tagged with the request; a listed tool whose `x-mcp-header` annotations
 * break the rules is left out of the list. `notifications/cancelled` closes the request's
 * stream, which is how 2026-07-28 cancels over HTTP; no other client notification or response has a place
 * on this transport (input comes by MRTR). A request that fails at the HTTP level is answered here with an
 * error naming why, so that nothing waits for an answer that cannot come.
 */
import type { Logger } from 'pino';
import { Correlation } from '../protocol/correlation.js';
import { ErrorCode, ProtocolError, type JsonRpcErrorObject } from '../protocol/errors.js';
import { withExactId } from '../protocol/exact-ids.js';
import { idOfBrokenAnswer, idOfOversized, parseFrame } from '../protocol/frames.js';
import {
  classify,
  errorResponse,
  isObject,
  metaOf,
  type JsonObject,
  type Request,
  type RequestId,
} from '../protocol/messages.js';
import {
  encodeHeaderValue,
  headerAnnotationProblem,
  headerParamsOf,
  NAME_SOURCE,
  paramHeaderValues,
  type HeaderParam,
} from '../protocol/modern/headers.js';
import { MODERN_VERSIONS, PROTOCOL_VERSION_META } from '../protocol/modern/meta.js';
import { envelopeOf } from '../protocol/envelope.js';
import { Pieces, type Bytes } from '../protocol/pieces.js';
import type { ScanFailure, Scanned } from '../protocol/scanned.js';
import { deliverPieces, type Channel, type ChannelHandlers, type Route } from './channel.js';
import type { UpstreamCredential } from '../security/upstream-credentials.js';
import {
  discard,
  header,
  HttpOrigin,
  mediaType,
  networkReason,
  pump,
  readScanned,
  statusLine,
  type OriginConnections,
  type Reply,
} from './http-wire.js';
import { SseParser, type ScannedEvent } from './sse.js';
import { upstreamUnauthorized } from './upstream-refusal.js';

export interface ModernHttpUpstreamOptions {
  url: string;
  /** Sent with every request (the operator's). */
  headers?: Record<string, string> | undefined;
  /** The Authorization of every request (upstream.auth, or the caller's own token). */
  credential?: UpstreamCredential | undefined;
  /** Keep-alive connections shared with the gateway's other sessions; its own without them. */
  connections?: OriginConnections | undefined;
  maxMessageBytes: number;
}

/** One request's POST while it is open: what aborts it, and whether its answer teaches tools' headers. */
interface Post {
  id: RequestId;
  /** Its key in `open`: its id, unless another POST in flight held that when it was made. */
  key: RequestId;
  controller: AbortController;
  listing: boolean;
}

export class ModernHttpUpstream implements Channel {
  private handlers: ChannelHandlers | undefined;
  private readonly origin: HttpOrigin;
  /**
   * Each request's POST until its answer, by the translator's id: a cancellation withdraws the POST it
   * names (the first of two sent with one id); an answer takes out its own POST, never another's, before
   * it is handed on (the id is free again for whatever the translator sends next).
   */
  private readonly open = new Correlation<Post>();
  /**
   * What aborts each POST until its stream ends, answered or not: a server may keep a stream open after
   * its answer (SHOULD close, not MUST), and over connections shared with other sessions only this abort
   * lets the connection go when the session closes.
   */
  private readonly streams = new Set<AbortController>();
  private readonly toolHeaders = new Map<string, HeaderParam[]>();
  private closed = false;

  constructor(
    private readonly options: ModernHttpUpstreamOptions,
    private readonly logger: Logger,
  ) {
    this.origin = new HttpOrigin(new URL(options.url), options.credential, options.connections);
  }

  start(handlers: ChannelHandlers): void {
    this.handlers = handlers;
  }

  send(message: object): void {
    this.fromTranslator(message, undefined);
  }

  sendRaw(raw: Buffer | string, _route?: Route, parsed?: object): void {
    const bytes = typeof raw === 'string' ? Buffer.from(raw) : raw;
    this.fromTranslator(parsed, bytes);
  }

  /** One message of the translator's: the value, its bytes, or both (each made from the other if need be). */
  private fromTranslator(value: object | undefined, bytes: Buffer | undefined): void {
    if (this.closed) return;
    let message;
    try {
      message = classify(value ?? parseFrame(bytes!, 'taskgate'));
    } catch (error) {
      this.logger.warn({ err: (error as Error).message }, 'not sent to the 2026-07-28 upstream');
      return;
    }
    if (message.kind === 'request') {
      return void this.post(message.msg, bytes ?? Buffer.from(JSON.stringify(value)));
    }
    if (message.kind === 'notification' && message.msg.method === 'notifications/cancelled') {
      const requestId = message.msg.params?.requestId;
      if (typeof requestId === 'string' || typeof requestId === 'number') {
        this.open.withdraw(requestId)?.[1].controller.abort();
      }
      return;
    }
    this.logger.debug(
      { kind: message.kind },
      'a 2026-07-28 server over HTTP takes no client notifications or responses: not sent',
    );
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const controller of this.streams) controller.abort();
    await this.origin.close();
  }

  private async post(request: Request, body: Buffer): Promise<void> {
    const controller = new AbortController();
    const { id } = request;
    const post: Post = { id, key: id, controller, listing: request.method === 'tools/list' };
    post.key = this.open.forward(id, post);
    this.streams.add(controller);
    try {
      let reply = await this.origin.request('POST', this.headersFor(request), controller.signal, body);
      if (reply.statusCode === 401 && this.origin.renewsOwnToken) {
        // taskgate's own token, revoked before its expiry: refused unread, so sent once more with a new one.
        discard(reply.body);
        reply = await this.origin.request('POST', this.headersFor(request), controller.signal, body);
      }
      await this.answer(post, reply);
    } catch (error) {
      // Given up (cancelled, or closing): whoever cancelled answers for it.
      if (!controller.signal.aborted) {
        this.fail(post, `Upstream server unavailable: ${networkReason(error)}`);
      }
    } finally {
      this.streams.delete(controller);
      this.settled(post);
    }
  }

  /** The POST is answered (or over): out of `open`, unless a cancellation took it (its key may be another's). */
  private settled(post: Post): void {
    if (this.open.get(post.key) === post) this.open.take(post.key);
  }

  private headersFor(request: Request): Record<string, string> {
    const version = metaOf(request.params)?.[PROTOCOL_VERSION_META];
    const headers: Record<string, string> = {
      ...this.options.headers,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': typeof version === 'string' ? version : MODERN_VERSIONS[0]!,
      'mcp-method': request.method,
    };
    const source = NAME_SOURCE[request.method];
    const name = source === undefined ? undefined : request.params?.[source];
    if (typeof name === 'string') headers['mcp-name'] = encodeHeaderValue(name);
    if (request.method === 'tools/call' && typeof name === 'string') {
      const params = this.toolHeaders.get(name);
      if (params !== undefined) Object.assign(headers, paramHeaderValues(params, request.params?.arguments));
    }
    return headers;
  }

  /** The reply to one POST: its JSON answer, or every message of its event stream. */
  private async answer(post: Post, reply: Reply): Promise<void> {
    if (reply.statusCode === 401 && this.origin.refusalIsCallers) {
      discard(reply.body);
      const raw = upstreamUnauthorized(post.id, header(reply, 'www-authenticate'));
      this.settled(post);
      return void this.handlers?.message(raw, { onStreamOf: post.id });
    }
    const type = mediaType(reply);
    if (reply.statusCode >= 200 && reply.statusCode < 300 && type === 'text/event-stream') {
      return this.readStream(post, reply);
    }
    if (type !== 'application/json') {
      discard(reply.body);
      return this.fail(post, `Upstream server unavailable: ${statusLine(reply.statusCode)}`);
    }
    const read = await readScanned(reply.body, this.options.maxMessageBytes);
    if (read === undefined) {
      return this.fail(
        post,
        `The upstream's answer is larger than maxMessageBytes (${this.options.maxMessageBytes})`,
      );
    }
    // A refusal comes with a JSON-RPC error for the request (400 -32020, 404 -32601): that is its answer.
    const { raw, scanned } = read;
    const taken = this.deliverScanned(post, raw, scanned) ?? this.deliver(post, joined(raw));
    if (!taken) this.fail(post, `Upstream server unavailable: ${statusLine(reply.statusCode)}`);
  }

  private async readStream(post: Post, reply: Reply): Promise<void> {
    const { id } = post;
    let answered = false;
    const scanned = (event: ScannedEvent): void => {
      if (this.deliverScanned(post, event.data, event.scanned) ?? this.deliver(post, event.data.join())) {
        answered = true;
      }
    };
    const takesPieces = (): boolean => this.handlers?.pieces !== undefined;
    const parser = new SseParser(this.options.maxMessageBytes, {
      event: (event) => {
        if (event.data.length > 0 && this.deliver(post, event.data)) answered = true;
      },
      get scanned() {
        return takesPieces() ? scanned : undefined;
      },
      retry: () => undefined,
      oversized: (bytes, head, tail) => {
        if (idOfOversized(head, tail) !== id) return;
        answered = true;
        this.fail(post, `The upstream's answer (${bytes} bytes) is larger than maxMessageBytes`);
      },
    });
    const error = await pump(reply.body, parser);
    if (answered || this.closed) return;
    const why = error === undefined ? 'it ended the stream' : networkReason(error);
    this.fail(post, `Upstream server unavailable: ${why} before answering`);
  }

  /**
   * A big answer, scanned as it was read, to a translator that takes pieces (issue 33): handed on unparsed,
   * as those pieces with their scan; true. Undefined for what is read the usual way: what the scan refuses
   * (the parse says why), anything but the request's answer, the answer to a tools/list (which teaches).
   */
  private deliverScanned(
    post: Post,
    raw: Bytes,
    scanned: Scanned | ScanFailure | undefined,
  ): true | undefined {
    const { id } = post;
    const handlers = this.handlers;
    if (typeof scanned !== 'object' || handlers?.pieces === undefined || post.listing) {
      return undefined;
    }
    const envelope = envelopeOf(raw, scanned);
    if (envelope?.id !== id || (envelope.kind !== 'response' && envelope.kind !== 'error')) return undefined;
    this.settled(post);
    deliverPieces(handlers, raw instanceof Pieces ? raw : new Pieces([raw], raw.length), scanned, {
      onStreamOf: id,
    });
    return true;
  }

  /** Hands one message of a request's reply on; says whether it was the request's answer. */
  private deliver(post: Post, raw: Buffer): boolean {
    const { id } = post;
    const read = parsedJson(raw);
    if ('error' in read) return this.unreadable(post, raw, read.error);
    const { value } = read;
    const isAnswer = isObject(value) && value.id === id && ('result' in value || 'error' in value);
    if (isAnswer) this.settled(post);
    if (isAnswer && post.listing && isObject(value.result)) {
      const kept = this.learnTools(value.result);
      if (kept !== undefined) {
        const message = { ...value, result: { ...value.result, tools: kept } };
        this.handlers?.message(Buffer.from(JSON.stringify(message)), { onStreamOf: id });
        return true;
      }
    }
    if (isObject(value) && (isAnswer || !('id' in value) || 'method' in value)) {
      // Read once: the value goes beside its bytes, unless JSON rounded an id in it (exact-ids.ts).
      const exact = withExactId(value, raw) === value;
      this.handlers?.message(raw, { onStreamOf: id }, exact ? value : undefined);
    }
    return isAnswer;
  }

  /**
   * A message of a request's reply that could not be read. One that is not JSON yet whose edges say it
   * answers the request is its answer: the request fails now, saying why, rather than as a stream that
   * ended unanswered (true then).
   */
  private unreadable(post: Post, raw: Buffer, error: unknown): boolean {
    const notJson = error instanceof ProtocolError && error.code === ErrorCode.ParseError;
    if (!notJson || idOfBrokenAnswer(raw) !== post.id) return false;
    this.fail(post, 'The upstream server answered with a message that is not valid JSON');
    return true;
  }

  /**
   * Learns each listed tool's header parameters. A tool whose `x-mcp-header` annotations break the rules
   * is left out (streamable-http.mdx "Schema Extension": a client MUST, and SHOULD say so): the tools kept,
   * when one was left out.
   */
  private learnTools(result: JsonObject): unknown[] | undefined {
    const tools = Array.isArray(result.tools) ? result.tools : [];
    const kept = tools.filter((tool) => {
      if (!isObject(tool) || typeof tool.name !== 'string') return true;
      const problem = headerAnnotationProblem(tool.inputSchema);
      if (problem !== undefined) {
        this.logger.warn(
          { tool: tool.name, problem },
          'tool left out of tools/list: its x-mcp-header breaks the rules',
        );
        this.toolHeaders.delete(tool.name);
        return false;
      }
      const params = headerParamsOf(tool.inputSchema);
      if (params.length > 0) this.toolHeaders.set(tool.name, params);
      else this.toolHeaders.delete(tool.name);
      return true;
    });
    return kept.length === tools.length ? undefined : kept;
  }

  private fail(post: Post, message: string): void {
    const error: JsonRpcErrorObject = { code: ErrorCode.UpstreamUnavailable, message };
    this.settled(post);
    const { id } = post;
    this.handlers?.message(Buffer.from(JSON.stringify(errorResponse(id, error))), { onStreamOf: id });
  }
}

/** The message, read as every upstream message is (frames.ts bounds its nesting), or why it is none. */
function parsedJson(raw: Buffer): { value: unknown } | { error: unknown } {
  try {
    return { value: parseFrame(raw, 'the upstream server') };
  } catch (error) {
    return { error };
  }
}

const joined = (raw: Bytes): Buffer => (raw instanceof Pieces ? raw.join() : raw);

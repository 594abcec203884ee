/**
 * How the HTTP front serves a 2026-07-28 request: its headers checked, the exchange handed to the bridge,
 * and the answer given as JSON with its status, or as the end of its SSE stream once something about the
 * request went before the answer.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ErrorCode } from '../protocol/errors.js';
import { serialize } from '../protocol/exact-ids.js';
import type { Message, Request } from '../protocol/messages.js';
import {
  ClientGiveUp,
  type AnswerSink,
  type ModernAnswer,
  type ModernExchange,
  type ModernServe,
} from '../protocol/modern/exchange.js';
import { checkModernHeaders, paramHeadersOf } from '../protocol/modern/headers.js';
import { toModernError } from '../protocol/modern/results.js';
import type { Authentication } from '../security/auth.js';
import { toJsonRpcError } from '../tasks/wire-errors.js';
import { reply } from './http-io.js';
import type { UpstreamChallenge } from './http-refusals.js';
import { MODERN_UPSTREAM_UNAUTHORIZED, refusalIn } from './upstream-refusal.js';

type Caller = Extract<Authentication, { identity: string }>;

/**
 * Who a 2026-07-28 request is from, as its bridge is chosen (caller-bridges.ts): identity and the rules
 * that grant its rights (a later token of the identity with fewer rights is not served by servers bound
 * to the first one's), else address.
 */
export function callerKeyOf(req: IncomingMessage, caller: Caller | undefined): string {
  if (caller === undefined) return `address:${req.socket.remoteAddress ?? 'unknown'}`;
  const granted = caller.access?.grantKey;
  return granted === undefined ? caller.identity : `${caller.identity} rules:${granted}`;
}

/** What postModern needs of the front: whether it takes requests, its answers not yet written, its 500. */
export interface ModernFront {
  accepting(): boolean;
  readonly upstreamChallenge: UpstreamChallenge | undefined;
  readonly answers: OpenAnswers;
  /** Serving a request failed in a way no answer says: the front reports it on the response. */
  failed(res: ServerResponse, error: unknown): void;
}

/**
 * A 2026-07-28 message: no session; the routing headers are checked against the body, the answer is
 * JSON, or an SSE stream once something about the request comes before it; a closed stream cancels.
 */
export function postModern(
  req: IncomingMessage,
  res: ServerResponse,
  message: Message,
  caller: Caller | undefined,
  serve: ModernServe,
  front: ModernFront,
): void {
  // No client notification is defined for Streamable HTTP in 2026-07-28; one is taken and dropped.
  if (message.kind === 'notification') {
    res.writeHead(202).end();
    return;
  }
  if (message.kind === 'response') {
    reply(res, 400, null, {
      code: ErrorCode.InvalidRequest,
      message:
        'A 2026-07-28 client sends no responses: it is never asked anything over HTTP (input comes by MRTR)',
    });
    return;
  }
  const request = message.msg;
  const headers = checkModernHeaders(req.headers, request);
  if (!headers.ok) {
    reply(res, 400, request.id, toJsonRpcError(headers.error));
    return;
  }
  if (!front.accepting()) {
    res.setHeader('connection', 'close');
    reply(
      res,
      503,
      request.id,
      toModernError(request.method, {
        code: ErrorCode.UpstreamUnavailable,
        message: 'Service Unavailable: taskgate is shutting down',
      }),
    );
    return;
  }
  const post = new ModernPost(res, front);
  try {
    serve(exchangeOf(req, request, caller, post), post);
  } catch (error) {
    // As a failure the sink is told of: the post is no longer open, and the front reports it.
    post.failed(error);
  }
}

/** The exchange a request is served as: its caller, its headers, its give-up and its stream's messages. */
function exchangeOf(
  req: IncomingMessage,
  request: Request,
  caller: Caller | undefined,
  post: ModernPost,
): ModernExchange {
  // Made as one object: the spreads of optional members were a share of every call's garbage.
  const exchange: { -readonly [K in keyof ModernExchange]: ModernExchange[K] } = {
    request,
    caller: callerKeyOf(req, caller),
    signal: post,
    notify: post.notify,
  };
  if (caller !== undefined) {
    exchange.principal = caller.identity;
    exchange.subject = caller.subject;
    if (caller.access !== undefined) exchange.access = caller.access;
    if (caller.upstreamAuthorization !== undefined)
      exchange.upstreamAuthorization = caller.upstreamAuthorization;
  }
  if (request.method === 'tools/call') exchange.paramHeaders = paramHeadersOf(req.headers);
  return exchange;
}

/**
 * The 2026-07-28 answers a front has not handed to their sockets yet: closing waits for them (a stream
 * ended on closing, subscriptions/listen's closing result, reaches its client), a bounded time.
 */
export class OpenAnswers {
  private readonly open = new Set<ModernPost>();
  private drained: (() => void) | undefined;

  /** How many are open. */
  get size(): number {
    return this.open.size;
  }

  add(post: ModernPost): void {
    this.open.add(post);
  }

  delete(post: ModernPost): void {
    if (this.open.delete(post) && this.open.size === 0) this.drained?.();
  }

  /** Resolves once every answer open now or later is written, or after `ms`, whichever is first. */
  settled(ms: number): Promise<void> {
    if (this.open.size === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.drained = undefined;
        resolve();
      }, ms);
      this.drained = () => {
        clearTimeout(timer);
        this.drained = undefined;
        resolve();
      };
    });
  }
}

/**
 * One POST's request being answered: its give-up signal (the response closed before the answer), the sink
 * the answer is written into, and whether messages before it made the response an SSE stream. One object
 * with one 'close' listener, counted open until its answer is handed to the socket, with no promise
 * between the bridge and the socket: a promise per request, its callbacks, a stream object and a second
 * listener were each a share of every modern call in its profile (PROFILING.md).
 */
class ModernPost extends ClientGiveUp implements AnswerSink {
  private answered = false;
  private streaming = false;

  constructor(
    private readonly res: ServerResponse,
    private readonly front: ModernFront,
  ) {
    super();
    front.answers.add(this);
    // 'close' follows 'finish', or comes alone when the socket goes first.
    res.on('close', () => (this.answered ? front.answers.delete(this) : this.giveUp()));
  }

  /** A message that belongs with the request before its answer: it makes the response an SSE stream. */
  readonly notify = (related: object): void => {
    const { res } = this;
    if (this.answered || res.destroyed) return;
    if (!this.streaming) {
      this.streaming = true;
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    }
    res.write(sseEvent(related));
  };

  answer(answer: ModernAnswer): void {
    const { res } = this;
    this.answered = true;
    if (!res.destroyed) {
      if (answer === undefined) res.end();
      else if (this.streaming)
        res.end(answer.body === undefined ? sseEvent(answer.response) : sseBytes(answer.body));
      else writeJson(res, answer, this.front.upstreamChallenge);
    }
    // Else its 'close' says when it is handed to the socket.
    if (res.writableFinished || res.destroyed) this.front.answers.delete(this);
  }

  failed(error: unknown): void {
    this.answered = true;
    this.front.answers.delete(this);
    this.front.failed(this.res, error);
  }
}

function writeJson(
  res: ServerResponse,
  answer: NonNullable<ModernAnswer>,
  upstreamChallenge: UpstreamChallenge | undefined,
): void {
  // Bytes are a success made from the upstream's: 200, nothing to look for in them.
  if (answer.body !== undefined) {
    res.writeHead(200, { 'content-type': 'application/json' }).end(answer.body);
    return;
  }
  // An upstream's 401 to the caller's credential: 401 (authorization/index.mdx "Token Handling").
  const refused = upstreamChallenge === undefined ? undefined : refusalOf(answer);
  const body = serialize(answer.response);
  if (refused === undefined) {
    res.writeHead(modernStatus(answer), { 'content-type': 'application/json' }).end(body);
    return;
  }
  const challenge = upstreamChallenge!(refused.wwwAuthenticate);
  res.writeHead(401, { 'www-authenticate': challenge, 'content-type': 'application/json' }).end(body);
}

/**
 * A refusal is 400, and a method taskgate does not serve 404 (streamable-http.mdx "Protocol Version
 * Header"); the upstream's own answers, errors included, are 200 like any JSON-RPC response.
 */
function modernStatus(answer: NonNullable<ModernAnswer>): number {
  const { error } = answer.response as { error?: { code?: unknown } };
  if (error?.code === ErrorCode.MethodNotFound) return 404;
  // Whoever found it (taskgate, or a 2026-07-28 server behind it), these errors are HTTP 400.
  return answer.refused === true || BAD_REQUEST_CODES.has(error?.code) ? 400 : 200;
}

/** When the answer is an upstream's 401 to the caller's credential: with the upstream's challenge, if any. */
function refusalOf(answer: NonNullable<ModernAnswer>): { wwwAuthenticate?: string } | undefined {
  const { error } = answer.response as { error?: unknown };
  return refusalIn(error, MODERN_UPSTREAM_UNAUTHORIZED) ?? refusalIn(error, ErrorCode.UpstreamUnauthorized);
}

/** The 2026-07-28 errors that streamable-http.mdx answers with 400 Bad Request. */
const BAD_REQUEST_CODES: ReadonlySet<unknown> = new Set([
  ErrorCode.HeaderMismatch,
  ErrorCode.MissingRequiredClientCapability,
  ErrorCode.UnsupportedProtocolVersion,
]);

export const sseEvent = (message: object): string => `event: message\ndata: ${serialize(message)}\n\n`;

/** The same for a message's bytes (they hold no line break: result-bytes.ts). */
const sseBytes = (body: Buffer): Buffer =>
  Buffer.concat([Buffer.from('event: message\ndata: '), body, Buffer.from('\n\n')]);

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

/**
 * A 2026-07-28 message: no session; the routing headers are checked against the body, the answer is
 * JSON, or an SSE stream once something about the request comes before it; a closed stream cancels.
 * Returns the answering, or undefined when the message was answered at once.
 */
export function postModern(
  req: IncomingMessage,
  res: ServerResponse,
  message: Message,
  caller: Caller | undefined,
  serve: ModernServe,
  front: { accepting?(): boolean; upstreamChallenge?: UpstreamChallenge },
): Promise<void> | undefined {
  // No client notification is defined for Streamable HTTP in 2026-07-28; one is taken and dropped.
  if (message.kind === 'notification') {
    res.writeHead(202).end();
    return undefined;
  }
  if (message.kind === 'response') {
    reply(res, 400, null, {
      code: ErrorCode.InvalidRequest,
      message:
        'A 2026-07-28 client sends no responses: it is never asked anything over HTTP (input comes by MRTR)',
    });
    return undefined;
  }
  const request = message.msg;
  const headers = checkModernHeaders(req.headers, request);
  if (!headers.ok) {
    reply(res, 400, request.id, toJsonRpcError(headers.error));
    return undefined;
  }
  if (front.accepting?.() === false) {
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
    return undefined;
  }
  const cancelled = new ClientGiveUp();
  const stream: AnswerStream = { answered: false, streaming: false };
  res.on('close', () => {
    if (!stream.answered) cancelled.giveUp();
  });
  return new Promise<void>((answered, failed) => {
    const sink = new ResponseSink(res, stream, front.upstreamChallenge, answered, failed);
    serve(exchangeOf(req, request, caller, cancelled, stream, res), sink);
  });
}

/** The exchange a request is served as: its caller, its headers, its give-up and its stream's messages. */
function exchangeOf(
  req: IncomingMessage,
  request: Request,
  caller: Caller | undefined,
  cancelled: ClientGiveUp,
  stream: AnswerStream,
  res: ServerResponse,
): ModernExchange {
  const notify = (related: object): void => {
    if (stream.answered || res.destroyed) return;
    if (!stream.streaming) {
      stream.streaming = true;
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    }
    res.write(sseEvent(related));
  };
  // Made as one object: the spreads of optional members were a share of every call's garbage.
  const exchange: { -readonly [K in keyof ModernExchange]: ModernExchange[K] } = {
    request,
    caller: callerKeyOf(req, caller),
    signal: cancelled,
    notify,
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

/** Whether the answer was given, and whether messages before it made the response an SSE stream. */
interface AnswerStream {
  answered: boolean;
  streaming: boolean;
}

/**
 * Writes the answer where the bridge hands it (no promise per layer, no async function, no spread of the
 * headers: each was a share of every modern call in its profile, PROFILING.md); `written` once it is
 * handed to the socket, so that closing may wait for it.
 */
class ResponseSink implements AnswerSink {
  constructor(
    private readonly res: ServerResponse,
    private readonly stream: AnswerStream,
    private readonly upstreamChallenge: UpstreamChallenge | undefined,
    private readonly written: () => void,
    readonly failed: (error: unknown) => void,
  ) {}

  answer(answer: ModernAnswer): void {
    const { res, stream } = this;
    stream.answered = true;
    if (res.destroyed) return this.written();
    if (answer === undefined) res.end();
    else if (stream.streaming)
      res.end(answer.body === undefined ? sseEvent(answer.response) : sseBytes(answer.body));
    else writeJson(res, answer, this.upstreamChallenge);
    // 'close' follows 'finish', or comes alone when the socket goes first. One listener: stream.finished()
    // added six, and its end-of-stream bookkeeping was a share of every modern call.
    if (res.writableFinished || res.destroyed) return this.written();
    res.once('close', this.written);
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

/** Resolves once every answer is given, or after `ms`, whichever is first. */
export function settledWithin(answers: readonly Promise<void>[], ms: number): Promise<void> {
  if (answers.length === 0) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    void Promise.allSettled(answers).then(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

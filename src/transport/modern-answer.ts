/**
 * How the HTTP front answers a 2026-07-28 request: JSON with its status, or the end of its SSE stream once
 * something about the request went before the answer.
 */
import type { ServerResponse } from 'node:http';
import { ErrorCode } from '../protocol/errors.js';
import { serialize } from '../protocol/exact-ids.js';
import type { ModernAnswer } from '../protocol/modern/exchange.js';
import type { UpstreamChallenge } from './http-refusals.js';
import { MODERN_UPSTREAM_UNAUTHORIZED, refusalIn } from './upstream-refusal.js';

/**
 * Writes the answer once it comes; resolves once it is handed to the socket, so that closing may wait for
 * it. Promise callbacks rather than an async function, and no spread of the headers: both were a share of
 * every modern call in its profile (PROFILING.md).
 */
export function answerModern(
  res: ServerResponse,
  served: Promise<ModernAnswer>,
  stream: { answered: boolean; streaming: boolean },
  upstreamChallenge?: UpstreamChallenge,
): Promise<void> {
  return served.then((answer) => {
    stream.answered = true;
    if (res.destroyed) return;
    if (answer === undefined) res.end();
    else if (stream.streaming)
      res.end(answer.body === undefined ? sseEvent(answer.response) : sseBytes(answer.body));
    else writeJson(res, answer, upstreamChallenge);
    // 'close' follows 'finish', or comes alone when the socket goes first. One listener: stream.finished()
    // added six, and its end-of-stream bookkeeping was a share of every modern call.
    if (res.writableFinished || res.destroyed) return;
    return new Promise<void>((resolve) => res.once('close', () => resolve()));
  });
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

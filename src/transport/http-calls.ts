/**
 * The POSTs of the Streamable HTTP client (http-upstream.ts) and what comes of them. A request's answer
 * comes back as one JSON body or on an SSE stream, with what the server sends for it on the way (delivered
 * with `onStreamOf` = its id); a stream that drops before the answer is resumed (GET with Last-Event-ID),
 * a read-only request whose connection broke is sent once more, and what cannot be answered fails with an
 * error made here. A notification or a response is a one-way POST, answered 202. The session each call
 * belongs to (its id, its renewal after a 404) is the host's.
 */
import type { Logger } from 'pino';
import { Correlation } from '../protocol/correlation.js';
import { ErrorCode, ProtocolError } from '../protocol/errors.js';
import { idOfOversized } from '../protocol/frames.js';
import { errorResponse, idKey, type RequestId } from '../protocol/messages.js';
import type { Bytes } from '../protocol/pieces.js';
import { SCAN_FROM_BYTES, scanJson } from '../protocol/scan.js';
import type { ScanFailure, Scanned } from '../protocol/scanned.js';
import { backoffDelay } from './backoff.js';
import {
  answerOf,
  encode,
  jsonRpcErrorOf,
  unknownError,
  type Outgoing,
  type OutgoingRequest,
} from './http-envelope.js';
import {
  type HttpOrigin,
  connectionBroke,
  discard,
  header,
  mediaType,
  networkReason,
  pause,
  pump,
  readLimited,
  readScanned,
  statusLine,
  type Headers,
  type Reply,
  type ReplyBody,
} from './http-wire.js';
import { SseParser, type ScannedEvent, type SseEvent } from './sse.js';
import { upstreamUnauthorized } from './upstream-refusal.js';
import type { Valve } from './valve.js';

export interface CallsHost {
  origin: HttpOrigin;
  logger: Logger;
  maxMessageBytes: number;
  /** How long an initialize may wait for its answer, and a one-way POST for its acceptance. */
  handshakeTimeoutMs: number;
  resumeAttempts: number;
  resumeTimeoutMs: number;
  reconnectDelayMs: number;
  reconnectMaxDelayMs: number;
  /** While one of these is shut, response streams are not read (valve.ts). */
  paused?: readonly Valve[] | undefined;
  /** Headers for any exchange in the current session (session id, protocol version, static headers). */
  headers(): Headers;
  /** The upstream session now (counted): a call remembers the one it was sent in. */
  generation(): number;
  closed(): boolean;
  /** The initialize that opens a session was taken, with this session id (or none). */
  opened(sessionId: string | undefined): void;
  /**
   * A call was answered (by the server, or with the JSON-RPC error of its HTTP error); it is finished.
   * `scanned`: the scan of a large answer, made as it was read (issue 33).
   */
  answered(call: Call, raw: Bytes, scanned?: Scanned | ScanFailure): void;
  /** A call ends with an error made here (code UpstreamUnavailable); it is finished. */
  failed(call: Call, message: string): void;
  /** The server answered 404 to the session id; `resend` is a notification it refused unread. */
  sessionGone(generation: number, resend?: Outgoing): void;
  /** The server took notifications/initialized, sent in session `generation`. */
  initializedTaken(generation: number): void;
  /** A message the server sent on a request's stream that is not its answer (with its scan, if made). */
  deliver(raw: Bytes, onStreamOf: RequestId, scanned?: Scanned | ScanFailure): void;
  /**
   * The server closed a request's stream before its answer, to be polled (it is resumed here): settles
   * when the client whose request it is resumed its own stream, if it was closed alike (else undefined).
   */
  polled(onStreamOf: RequestId, retryMs: number | undefined): Promise<void> | undefined;
  malformed(error: ProtocolError, id: RequestId | null): void;
  /** Work that runs on its own (its failures are logged). */
  background(work: Promise<unknown>): void;
}

/**
 * Requests that only read, sent once more when their connection broke before any answer (a kept-alive
 * connection the server was closing as they went out). Nothing that acts is ever sent twice: a
 * tools/call may have run even though its answer never came.
 */
const REPEATABLE = new Set([
  'ping',
  'tools/list',
  'resources/list',
  'resources/templates/list',
  'resources/read',
  'prompts/list',
  'prompts/get',
  'completion/complete',
  'tasks/get',
  'tasks/result',
  'tasks/list',
]);

/** How long an answered stream may stay open before it is closed from this side. */
const ANSWERED_STREAM_GRACE_MS = 1_000;
const ERROR_BODY_LIMIT = 64 * 1024;
/**
 * How long a notifications/cancelled may wait for the server to take the request it cancels. Answer headers
 * say the server has it; a server answering with one JSON body sends none until it is done.
 */
const CANCEL_HOLD_MAX_MS = 1_000;

/** A request waiting for its answer. */
export interface Call {
  out: OutgoingRequest;
  /** The upstream session it was sent in. */
  generation: number;
  /** Ends its HTTP exchange (POST, or the GET resuming it); a new one when it is sent once more. */
  controller: AbortController;
  /** Settles once the server has taken the POST (answer headers came) or it failed. */
  taken: Promise<void>;
  markTaken(): void;
  timer: NodeJS.Timeout | undefined;
  /** Runs while a resumption has brought nothing for the request. */
  resumeTimer: NodeJS.Timeout | undefined;
  done: boolean;
  lastEventId: string | undefined;
  /** What the server asked for with `retry:`. */
  retryMs: number | undefined;
  /** Sent a second time, its connection having broken (only requests in REPEATABLE). */
  repeated: boolean;
  /** Sent a second time, the upstream having refused taskgate's own token (a new one was got). */
  reauthorized: boolean;
  resumes: number;
  /** Ids of the events delivered, so that a replay never delivers one twice. */
  seen: Set<string>;
  /** For taskgate's own calls (the initialize of a new session): the answer goes here, not to the session. */
  own?: { resolve(raw: Buffer): void; reject(error: Error): void };
  /** Its key in the table of calls (its id, unless another call in flight has it). */
  key: RequestId;
}

export class HttpCalls {
  /** The calls in flight, the session's under the id it sent them with (its cancellations find them). */
  private readonly calls = new Correlation<Call>();

  constructor(private readonly host: CallsHost) {}

  /** Ends the calls sent in session `generation`: they are lost with it, and nobody is told. */
  endGeneration(generation: number): void {
    for (const [, call] of this.calls.takeWhere((each) => each.generation === generation)) {
      this.finish(call);
      call.controller.abort();
    }
  }

  /** Ends every call: taskgate's own are rejected, the session's are its own to answer. */
  endAll(): void {
    for (const call of this.calls.drain()) {
      this.finish(call);
      call.controller.abort();
      call.own?.reject(new Error('closed'));
    }
  }

  // ── sending ──────────────────────────────────────────────────────────────────────────────────────

  newCall(out: OutgoingRequest, own?: Call['own']): Call {
    let markTaken!: () => void;
    const taken = new Promise<void>((resolve) => (markTaken = resolve));
    const call: Call = {
      out,
      generation: this.host.generation(),
      controller: new AbortController(),
      taken,
      markTaken,
      timer: undefined,
      resumeTimer: undefined,
      done: false,
      lastEventId: undefined,
      retryMs: undefined,
      repeated: false,
      reauthorized: false,
      resumes: 0,
      seen: new Set(),
      ...(own === undefined ? {} : { own }),
      key: out.id,
    };
    call.key = own === undefined ? this.calls.forward(out.id, call) : this.calls.own(call);
    if (out.opens) this.arm(call);
    return call;
  }

  async runCall(call: Call): Promise<void> {
    const { method } = call.out;
    const headers = this.postHeaders();
    let reply: Reply;
    try {
      reply = await this.host.origin.request('POST', headers, call.controller.signal, call.out.body);
    } catch (error) {
      if (!call.done && !call.repeated && REPEATABLE.has(method) && connectionBroke(error)) {
        call.repeated = true;
        this.host.logger.info(
          { err: error },
          `the connection broke under ${method}, unanswered: sending it again`,
        );
        return this.runCall(call);
      }
      call.markTaken();
      if (call.done) return;
      this.host.logger.warn({ err: error }, `cannot reach the upstream server to send ${method}`);
      return this.fail(call, `Upstream server unavailable: ${networkReason(error)}`);
    }
    call.markTaken();
    if (call.done) return discard(reply.body);
    const status = reply.statusCode;
    if (status === 404 && headers['mcp-session-id'] !== undefined && !call.own) {
      // The server has forgotten the session: the request is lost with it, as it would be with a child that died.
      discard(reply.body);
      return this.host.sessionGone(call.generation);
    }
    if (status === 401 && this.host.origin.renewsOwnToken && !call.reauthorized) {
      // A token revoked before its expiry: the request was refused unread, so it goes once more, newly authorized.
      discard(reply.body);
      call.reauthorized = true;
      this.host.logger.info(
        `the upstream server refused taskgate's token (HTTP 401): ${method} again with a new one`,
      );
      return this.runCall(call);
    }
    if (status >= 300) return this.failFromReply(call, reply);
    if (call.out.opens) this.host.opened(header(reply, 'mcp-session-id'));
    const type = mediaType(reply);
    if (status === 200 && type === 'text/event-stream') return this.readStream(call, reply.body);
    if (status === 200 && type === 'application/json') return this.readJson(call, reply.body);
    discard(reply.body);
    this.fail(
      call,
      status === 202
        ? `Upstream server accepted ${method} without answering it (HTTP 202)`
        : `Upstream server answered ${method} with ${statusLine(status)} and content type "${type}"`,
    );
  }

  /** A notification or a response: the server owes nothing back but 202. Says whether it was taken. */
  async postOneWay(out: Outgoing): Promise<boolean> {
    const what = out.method ?? 'a response';
    const generation = this.host.generation();
    const headers = this.postHeaders();
    let reply: Reply;
    try {
      reply = await this.host.origin.request(
        'POST',
        headers,
        AbortSignal.timeout(this.host.handshakeTimeoutMs),
        out.body,
      );
    } catch (error) {
      if (!this.host.closed()) this.host.logger.warn({ err: error }, `could not send ${what} upstream`);
      return false;
    }
    discard(reply.body);
    const status = reply.statusCode;
    if (status === 404 && headers['mcp-session-id'] !== undefined) {
      // A notification goes to the next session too; a response answers a request of the session that is gone.
      const again =
        out.id === undefined &&
        out.method !== undefined &&
        out.method !== 'notifications/initialized' &&
        out.cancels === undefined &&
        !out.resent;
      this.host.sessionGone(generation, again ? { ...out, resent: true } : undefined);
      return false;
    }
    if (status >= 300) {
      this.host.logger.warn(`upstream server refused ${what}: ${statusLine(status)}`);
      return false;
    }
    if (out.method === 'notifications/initialized') this.host.initializedTaken(generation);
    return true;
  }

  private postHeaders(): Headers {
    return {
      ...this.host.headers(),
      accept: 'application/json, text/event-stream',
      'content-type': 'application/json',
    };
  }

  // ── answers ──────────────────────────────────────────────────────────────────────────────────────

  private async readJson(call: Call, body: ReplyBody): Promise<void> {
    let read: Awaited<ReturnType<typeof readScanned>>;
    try {
      read = await readScanned(body, this.host.maxMessageBytes);
    } catch (error) {
      return this.fail(
        call,
        `Upstream server unavailable: the answer to ${call.out.method} was cut off (${networkReason(error)})`,
      );
    }
    if (call.done) return;
    if (read === undefined) return this.tooLarge(call, `more than ${this.host.maxMessageBytes}`, call.out.id);
    this.fromStream(call, read.raw, read.scanned);
    if (!call.done)
      this.fail(
        call,
        `Upstream server answered ${call.out.method} with a JSON body that is not its response`,
      );
  }

  private async readStream(call: Call, body: ReplyBody): Promise<void> {
    const { controller } = call;
    const parser = new SseParser(this.host.maxMessageBytes, {
      event: (event) => this.streamEvent(call, body, event),
      scanned: (event) => this.streamEvent(call, body, event),
      retry: (ms) => (call.retryMs = ms),
      oversized: (bytes, head, tail) => this.tooLarge(call, String(bytes), idOfOversized(head, tail)),
    });
    const error = await pump(body, parser, this.host.paused);
    if (call.done || this.host.closed() || call.controller !== controller) return;
    // Ended by the server after an event with an id: it polls (SEP-1699), and a front may pass that on.
    // Where it did, the resumption here is the client's: the MUST to wait `retry` is the client's, and a
    // relay that reconnects when its client does keeps the server's answer exactly when the client does
    // directly (a server that replays nothing loses what it sends while no stream is open). A client that
    // has not resumed once `retry` has passed is not waited for longer: taskgate resumes, keeping the answer.
    const clientResumed =
      error === undefined && call.lastEventId !== undefined && !call.own
        ? this.host.polled(call.out.id, call.retryMs)
        : undefined;
    const why = error === undefined ? 'the server ended it' : networkReason(error);
    await this.resume(call, why, clientResumed);
  }

  /** One event on a request's stream: once it was the answer, the stream is let go soon. */
  private streamEvent(call: Call, body: ReplyBody, event: SseEvent | ScannedEvent): void {
    if (this.callEvent(call, event)) setTimeout(() => body.destroy(), ANSWERED_STREAM_GRACE_MS).unref();
  }

  /** One event on a request's stream; says whether it was the answer. */
  private callEvent(call: Call, event: SseEvent | ScannedEvent): boolean {
    if (event.id !== undefined) {
      if (event.id !== '' && call.seen.has(event.id)) return false; // replayed: delivered already
      if (event.id !== '') call.seen.add(event.id);
      call.lastEventId = event.id === '' ? undefined : event.id;
    }
    call.resumes = 0;
    if (event.data.length === 0 || (event.type !== '' && event.type !== 'message')) return false;
    clearTimeout(call.resumeTimer);
    return this.fromStream(call, event.data, 'scanned' in event ? event.scanned : undefined);
  }

  /**
   * A message that came back for a request: its answer, or something the server sends on the way. A large
   * one is scanned (if it was not as it came) and read from its scan, which goes on with it.
   */
  private fromStream(call: Call, raw: Bytes, known?: Scanned | ScanFailure): boolean {
    const scanned = known ?? (raw.length >= SCAN_FROM_BYTES ? scanJson(raw) : undefined);
    const answer = answerOf(raw, scanned);
    const { id } = call.out;
    if (answer === undefined || (answer.id !== null && idKey(answer.id) !== idKey(id))) {
      if (!call.own) this.host.deliver(raw, id, scanned);
      return false;
    }
    if (call.done) {
      this.host.logger.debug({ id }, 'dropping a second answer to one request');
      return false;
    }
    // An error the server could not tie to the request (id null) is still the answer to it.
    if (answer.id === null) this.answer(call, encode(errorResponse(id, answer.error ?? unknownError())));
    else this.answer(call, raw, scanned);
    return true;
  }

  private answer(call: Call, raw: Bytes, scanned?: Scanned | ScanFailure): void {
    this.finish(call);
    this.host.answered(call, raw, scanned);
  }

  /** Ends a request with an error made here (code UpstreamUnavailable). */
  private fail(call: Call, message: string): void {
    if (call.done) return;
    this.finish(call);
    call.controller.abort();
    this.host.failed(call, message);
  }

  /** An HTTP error status: the server's own JSON-RPC error when the body is one, else one naming the status. */
  private async failFromReply(call: Call, reply: Reply): Promise<void> {
    const status = reply.statusCode;
    if (status === 401 && this.host.origin.refusalIsCallers && !call.own) {
      discard(reply.body);
      this.host.logger.info(
        `the upstream server answered ${call.out.method} with HTTP 401: the caller is told`,
      );
      call.controller.abort();
      return this.answer(call, upstreamUnauthorized(call.out.id, header(reply, 'www-authenticate')));
    }
    let raw: Buffer | undefined;
    try {
      raw = await readLimited(reply.body, ERROR_BODY_LIMIT);
    } catch {
      raw = undefined;
    }
    if (call.done) return;
    const error = raw === undefined ? undefined : jsonRpcErrorOf(raw);
    const words = `Upstream server answered ${call.out.method} with ${statusLine(status)}`;
    this.host.logger.warn(error === undefined ? words : `${words}: ${error.message}`);
    if (error === undefined) return this.fail(call, words);
    call.controller.abort();
    this.answer(call, encode(errorResponse(call.out.id, error)));
  }

  /** A message over the size limit: the session is told, and answers the request if it was its answer. */
  private tooLarge(call: Call, bytes: string, id: RequestId | null): void {
    const message = `Message of ${bytes} bytes from the upstream server exceeds the limit of ${this.host.maxMessageBytes} bytes (max-message-bytes); it was dropped`;
    if (call.own) return this.fail(call, message);
    this.host.malformed(new ProtocolError(ErrorCode.InvalidRequest, message), id);
    if (id !== null && idKey(id) === idKey(call.out.id)) {
      this.finish(call);
      call.controller.abort();
    }
  }

  /** Stops waiting for a request: it was answered, failed, or cancelled. */
  private finish(call: Call): void {
    call.done = true;
    clearTimeout(call.timer);
    clearTimeout(call.resumeTimer);
    if (this.calls.get(call.key) === call) this.calls.take(call.key);
  }

  /** Starts an initialize's timeout: from its sending to its answer, whatever arrives meanwhile. */
  private arm(call: Call): void {
    call.timer = setTimeout(() => this.timedOut(call), this.host.handshakeTimeoutMs).unref();
  }

  /** MCP never cancels initialize: it only fails. */
  private timedOut(call: Call): void {
    const message = `Upstream server did not answer ${call.out.method} within ${this.host.handshakeTimeoutMs} ms`;
    this.host.logger.warn(message);
    this.fail(call, message);
  }

  /**
   * The session cancelled a request: no answer is owed any more. Each message being its own POST, the
   * notification could overtake the request it cancels, and a server ignores a cancel for an id it has not
   * seen: it waits until the server has taken the request (bounded), then the request's stream is let go.
   */
  cancel(out: Outgoing, requestId: RequestId): void {
    const call = this.calls.withdraw(requestId)?.[1];
    if (call === undefined) return this.host.background(this.postOneWay(out));
    this.finish(call);
    const held = Promise.race([call.taken, pause(CANCEL_HOLD_MAX_MS, new AbortController().signal)]);
    this.host.background(
      held.then(async () => {
        await this.postOneWay(out);
        call.controller.abort();
      }),
    );
  }

  // ── resumption ───────────────────────────────────────────────────────────────────────────────────

  /**
   * A request's stream dropped before its answer: GET with Last-Event-ID continues it where it stopped,
   * after the delay the server asked for (the first time, sooner if `early` settles first), a few times;
   * without event ids there is nothing to resume from.
   */
  private async resume(call: Call, why: string, early?: Promise<void>): Promise<void> {
    const { method } = call.out;
    const { controller } = call;
    let reason = why;
    let sooner = early?.then(() => !controller.signal.aborted);
    while (!call.done && call.controller === controller) {
      clearTimeout(call.resumeTimer);
      if (call.lastEventId === undefined || call.resumes >= this.host.resumeAttempts) {
        const tried = call.lastEventId === undefined ? 'it could not be resumed' : 'resuming it failed';
        return this.fail(
          call,
          `Upstream server unavailable: the stream carrying the answer to ${method} was lost (${reason}) and ${tried}`,
        );
      }
      const delay =
        call.retryMs ?? backoffDelay(this.host.reconnectDelayMs, this.host.reconnectMaxDelayMs, call.resumes);
      call.resumes++;
      const waited = pause(delay, controller.signal);
      if (!(await (sooner === undefined ? waited : Promise.race([waited, sooner])))) return;
      sooner = undefined;
      const headers: Headers = {
        ...this.host.headers(),
        accept: 'text/event-stream',
        'last-event-id': call.lastEventId,
      };
      call.resumeTimer = setTimeout(() => this.resumedEmpty(call), this.host.resumeTimeoutMs).unref();
      let reply: Reply;
      try {
        reply = await this.host.origin.request('GET', headers, controller.signal);
      } catch (error) {
        reason = networkReason(error);
        continue;
      }
      if (call.done || call.controller !== controller) return discard(reply.body);
      const status = reply.statusCode;
      if (status === 404 && headers['mcp-session-id'] !== undefined) {
        discard(reply.body);
        return this.host.sessionGone(call.generation);
      }
      if (status === 200 && mediaType(reply) === 'text/event-stream') {
        this.host.logger.debug({ id: call.out.id }, `resuming the stream of ${method}`);
        return this.readStream(call, reply.body);
      }
      discard(reply.body);
      reason = `resuming was answered ${statusLine(status)}`;
    }
  }

  /**
   * A resumption brought nothing for its request within resumeTimeoutMs: the server may have answered
   * while no stream was open and kept nothing to replay. A request that only reads is sent once more (in
   * a new exchange; the old one is let go), any other fails: it may have run.
   */
  private resumedEmpty(call: Call): void {
    if (call.done) return;
    const { method } = call.out;
    const why = `resuming it brought nothing back within ${this.host.resumeTimeoutMs} ms`;
    if (call.repeated || !REPEATABLE.has(method)) {
      this.host.logger.warn(`the stream carrying the answer to ${method} was lost and ${why}: failing it`);
      return this.fail(
        call,
        `Upstream server unavailable: the stream carrying the answer to ${method} was lost and ${why}`,
      );
    }
    this.host.logger.info(
      `the stream carrying the answer to ${method} was lost and ${why}: sending it again`,
    );
    call.controller.abort();
    Object.assign(call, {
      controller: new AbortController(),
      repeated: true,
      lastEventId: undefined,
      retryMs: undefined,
      resumes: 0,
    });
    this.host.background(this.runCall(call));
  }
}

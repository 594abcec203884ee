import type { ProtocolError } from '../protocol/errors.js';
import type { RequestId } from '../protocol/messages.js';
import { Pieces } from '../protocol/pieces.js';
import type { Scanned } from '../protocol/scanned.js';

export interface CloseInfo {
  /** For people: why the other side went away ("exited with code 3", "stdin closed"). */
  reason: string;
  /**
   * The other side is coming back by itself, with none of its state: a restarted stdio child, a new
   * session of an HTTP server that ended the last one. `reopened` follows once it is back (or a final
   * `closed`, when it cannot be).
   */
  reopening?: boolean;
  /**
   * Only the other side's input to us ended (stdin reached its end): it sends nothing more, but answers to
   * what it sent can still reach it.
   */
  inputEnded?: boolean;
}

/**
 * Where a message arriving from a peer came from, when the transport knows: over Streamable HTTP, the
 * request whose response stream carried it (the id as this side sent it).
 */
export interface Arrival {
  onStreamOf?: RequestId;
}

/**
 * Where a message going to a peer belongs, for transports that carry messages on several streams
 * (Streamable HTTP): a response goes on the stream of its request; a message related to a request goes
 * on that request's stream while it is open. Stdio ignores it.
 */
export type Route = { responseTo: RequestId } | { relatedTo: RequestId };

/**
 * The supervisor contract: an upstream that goes away and comes back by itself (a stdio child restarted,
 * SupervisedStdioUpstream; an HTTP server that ended the session given a new one, HttpUpstream) keeps one
 * rule, tested over both by test/integration/supervisor-contract.test.ts.
 * - Going: `closed` with `reopening`, once. What was in flight is the receiver's to fail (-32000 naming
 *   the reason), and the server's own tasks with it; the supervisor answers none of it.
 * - Away: what is sent is held for what comes back, in order, bounded (1 000 messages and
 *   max-message-bytes; a request past that is refused at once), a request for `upstreamRestart.holdRequests`
 *   at most, then refused with -32000 "..., and was not back within N ms". A failed attempt at coming back
 *   does not refuse what is held: it waits its hold out for the next attempt.
 * - Back: the client's own handshake first (its answer kept here, never delivered), held to the first
 *   answer's protocol version and capabilities (serverInfo may change); `reopened` is reported before what
 *   was held goes out. Answered otherwise: a final `closed` saying so, and it stays down.
 */

/**
 * What a channel reports, in this order: messages, then `closed`. A `closed` with `reopening` may be
 * followed by `reopened` and more messages, then by further `closed`s; one without `reopening` is the last
 * thing heard. `closed` is the other side going away, never the owner's own close(). Every upstream kind
 * keeps this contract alike, so that the session treats a crashed stdio child and an HTTP server that
 * lost its session the same way.
 */
export interface ChannelHandlers {
  /**
   * The exact bytes of one message, not yet parsed (forwarded as they are when nothing changes), and, when
   * the sender handed it beside them (`Channel.sendRaw`), the value they were serialized from: the
   * receiver may read it instead of parsing `raw` again. It is the sender's object, not a copy: the
   * receiver does not change it (it copies what it would change).
   */
  message(raw: Buffer, arrival?: Arrival, parsed?: object): void;
  /**
   * One message that arrived in several reads, as those reads (issue 33), with its scan: valid JSON within
   * MAX_NESTING, spans in offsets of the whole. A large message read in one piece (an HTTP body) may come
   * this way too, for its scan to go with it. The bytes are the receiver's to give away (they may be
   * written over). A receiver without it gets `message` with them joined (`deliverPieces`). A wrapper
   * whose own receiver may or may not take pieces gives it as a getter, so that the channel reading them
   * scans in pieces only while someone takes them.
   */
  readonly pieces?: ((line: Pieces, scanned: Scanned, arrival?: Arrival) => void) | undefined;
  /** A frame that could not become a message: over the size limit. */
  malformed(error: ProtocolError, id: RequestId | null): void;
  /**
   * The other side is gone. Requests sent to it before this and not answered yet never will be, by the
   * channel: they are the receiver's to answer. What the other side asked before this is moot: answers to
   * it must not reach whatever comes back.
   *
   * Only the other side's going: never the owner's own `close()` (nor a stop of the owner's that ends the
   * channel), which the owner knows of already. From the moment close() is called nothing more is
   * reported as `closed`, even when the other side goes away while the close is under way (a child that
   * exits as its input is ended, a server that drops the connection while its session is being deleted):
   * that going is the close's own doing. So an owner that closes never re-enters its own handling of a
   * lost peer (failing what was in flight, saying the upstream is gone), and does in close() itself what
   * it would have done on hearing `closed`.
   */
  closed(info: CloseInfo): void;
  /**
   * After a `closed` with `reopening`: the other side is back, has answered the handshake as it did the
   * first time (protocol version and capabilities; one that answers otherwise is not let back, and a final
   * `closed` says why), and takes messages again. Called before anything sent meanwhile goes out to it, so
   * that the receiver's own restoring (the client's log level) goes first.
   */
  reopened?(): void;
  /**
   * Over Streamable HTTP: the server closed the stream of the request `onStreamOf` (the id as this side
   * sent it) before its answer, after an event with an id, to be polled (SEP-1699); `retryMs` is the
   * `retry` it asked for. The channel resumes it itself: this only lets a front do the same to its client,
   * and says when that client resumed its own stream (pauseStream, below), for the channel to resume then.
   */
  streamPaused?(onStreamOf: RequestId, retryMs: number | undefined): Promise<void> | undefined;
}

/**
 * One side of a proxied connection, speaking JSON-RPC messages. Deadlines are not the channel's: whoever
 * sends a request bounds its wait, and ends it with notifications/cancelled (the upstream's one deadline is
 * `upstream.requestTimeout`, held by the session). A channel only bounds what the session cannot cancel:
 * the initialize handshake.
 */
export interface Channel {
  start(handlers: ChannelHandlers): void;
  /**
   * Sends the bytes of one serialized JSON-RPC message, as they are. `parsed`: the value they were
   * serialized from, with nothing JSON drops (no undefined members) and no id that JSON cannot hold
   * exactly (exact-ids.ts), so that it is what parsing them gives. A channel in memory delivers it beside
   * the bytes (other channels ignore it); the sender gives it away and does not change it after.
   */
  sendRaw(raw: Buffer | string, route?: Route, parsed?: object): void;
  /** Sends a message in pieces as they are, never joined (a stream writes them with one writev); see `sendPieces`. */
  sendPieces?(line: Pieces, route?: Route): void;
  send(message: object, route?: Route): void;
  /**
   * Closes the stream of the client's request `requestId` before its answer, for the client to resume it
   * (Last-Event-ID) after `retryMs` (SEP-1699 polling), as the upstream did to taskgate; what comes for it
   * meanwhile is kept for the resumption. Only a Streamable HTTP front whose client can resume has it.
   * Settles when the client resumes it; undefined when the stream was not closed (the client is not told).
   */
  pauseStream?(requestId: RequestId, retryMs: number | undefined): Promise<void> | undefined;
  /**
   * The owner ends the channel: what was sent before still reaches the other side, which sees the end;
   * what is sent after is dropped. Safe to call again. Never reported back through `closed` (above).
   */
  close(): Promise<void>;
  /**
   * The upstream is a 2026-07-28 server behind the translator, which declares each request's own
   * capabilities upstream when the request carries them (`CALLER_CAPABILITIES_META`).
   */
  readonly takesCallerCapabilities?: boolean;
  /**
   * The protocol version spoken with the upstream, where the messages on this channel are of another era:
   * the translator's 2025 face on a 2026-07-28 server. Known once the era is.
   */
  readonly wireVersion?: string | undefined;
  /**
   * It delivers `parsed` beside the bytes (a channel in memory): a receiver that reads the value it is
   * handed is best served by a sender that parses once and hands it, rather than passing bytes unread.
   */
  readonly handsParsed?: boolean;
  /**
   * close() lets go of this connection only: the server goes on, for others, with what it runs (a port of
   * a shared upstream).
   */
  readonly outlivesClose?: boolean;
}

/** Hands a message in pieces to a receiver: as pieces when it takes them, else joined. */
export function deliverPieces(
  handlers: ChannelHandlers,
  line: Pieces,
  scanned: Scanned,
  arrival?: Arrival,
): void {
  if (handlers.pieces !== undefined) handlers.pieces(line, scanned, arrival);
  else handlers.message(line.join(), arrival);
}

/** Sends a message in pieces: as pieces to a channel that takes them, else joined. */
export function sendPieces(channel: Channel, line: Pieces, route?: Route): void {
  if (channel.sendPieces !== undefined) channel.sendPieces(line, route);
  else channel.sendRaw(line.join(), route);
}

/** Sends a message's bytes: in the pieces they are in (sendPieces), or as they are. */
export function sendBytes(channel: Channel, raw: Pieces | Buffer | string, route?: Route): void {
  if (raw instanceof Pieces) sendPieces(channel, raw, route);
  else channel.sendRaw(raw, route);
}

/**
 * What the Streamable HTTP client needs from HTTP itself, over one keep-alive undici Pool: requests,
 * bounded body reads, SSE pumping, and the words for what went wrong.
 */
import { STATUS_CODES } from 'node:http';
import { Pool, type Dispatcher } from 'undici';
import { Pieces, type Bytes } from '../protocol/pieces.js';
import { hasLineBreaks, onOneLine } from '../protocol/line-breaks.js';
import { JsonScanner, SCAN_FROM_BYTES, scanJson } from '../protocol/scan.js';
import type { ScanFailure, Scanned } from '../protocol/scanned.js';
import { UpstreamCredentialError, type UpstreamCredential } from '../security/upstream-credentials.js';
import type { SseParser } from './sse.js';
import { untilOpen, type Valve } from './valve.js';

export type Reply = Dispatcher.ResponseData;
export type ReplyBody = Reply['body'];
export type Headers = Record<string, string>;

/**
 * Keep-alive connections to upstream origins, one undici Pool each, for the sessions given them: a session
 * ends its own requests through their signals, so its end leaves the connections to the next session
 * (a Pool of its own cost each session three new connections in front of a server that takes a session
 * per conformance scenario, both ends setting them up and tearing them down). Idle, a connection holds
 * nothing: undici unrefs it, and lets it go after the keep-alive below.
 */
export class OriginConnections {
  private readonly pools = new Map<string, Pool>();

  pool(origin: string): Pool {
    let pool = this.pools.get(origin);
    if (pool === undefined) {
      pool = new Pool(origin, {
        connect: { timeout: 10_000 },
        // A kept-alive connection is let go 3 s before the server's advertised keep-alive ends (2 s idle
        // when it says none): a busy event loop reuses it late, and a request sent on a connection the
        // server is closing is lost with it (test/integration/load.test.ts found this under load).
        keepAliveTimeout: 2_000,
        keepAliveTimeoutThreshold: 3_000,
      });
      this.pools.set(origin, pool);
    }
    return pool;
  }

  async close(): Promise<void> {
    const pools = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(pools.map((pool) => pool.destroy()));
  }
}

/** One upstream URL, over connections of its own or over those it is given. */
export class HttpOrigin {
  private readonly pool: Pool;
  private readonly path: string;
  private readonly own: OriginConnections | undefined;

  /**
   * `credential`: the Authorization of every request (upstream.auth), got anew when it is refused.
   * `shared`: connections its owner closes; without them it has its own, closed with it.
   */
  constructor(
    url: URL,
    private readonly credential?: UpstreamCredential,
    shared?: OriginConnections,
  ) {
    this.own = shared === undefined ? new OriginConnections() : undefined;
    this.pool = (shared ?? this.own!).pool(url.origin);
    this.path = `${url.pathname}${url.search}`;
  }

  /**
   * One HTTP exchange with the MCP endpoint. Timeouts are the caller's (its signal): undici's own would end
   * a stream that is quiet while a tool runs.
   */
  async request(
    method: 'GET' | 'POST' | 'DELETE',
    headers: Headers,
    signal: AbortSignal,
    body?: Buffer | string,
  ): Promise<Reply> {
    const authorization = await this.credential?.authorization();
    const reply = await this.pool.request({
      path: this.path,
      method,
      headers: authorization === undefined ? headers : { ...headers, authorization },
      signal,
      headersTimeout: 0,
      bodyTimeout: 0,
      ...(body === undefined ? {} : { body }),
    });
    if (reply.statusCode === 401 && authorization !== undefined) this.credential!.refused(authorization);
    return reply;
  }

  /** A 401 of the upstream is the caller's to mend (its own token, or one exchanged for it). */
  get refusalIsCallers(): boolean {
    return this.credential?.forCaller === true;
  }

  /** A 401 of the upstream is taskgate's to mend: its own token (client credentials) is got anew. */
  get renewsOwnToken(): boolean {
    return this.credential !== undefined && !this.credential.forCaller;
  }

  async close(): Promise<void> {
    await this.own?.close();
  }
}

export function header(reply: Reply, name: string): string | undefined {
  const value = reply.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The media type of the reply, lower-cased and without parameters ("text/event-stream"). */
export function mediaType(reply: Reply): string {
  return (header(reply, 'content-type') ?? '').split(';')[0]!.trim().toLowerCase();
}

export const statusLine = (status: number): string =>
  `HTTP ${status}${STATUS_CODES[status] ? ` ${STATUS_CODES[status]}` : ''}`;

/** Reads and drops a body that is not wanted, so that its connection can serve the next request. */
export function discard(body: ReplyBody): void {
  body.dump({ limit: 64 * 1024 }).catch(() => undefined);
}

/** The whole body, or undefined when it is larger than `limit` bytes (then it is not read further). */
export async function readLimited(body: ReplyBody, limit: number): Promise<Buffer | undefined> {
  const read = await readChunks(body, limit);
  if (read === undefined) return undefined;
  return read.chunks.length === 1 ? read.chunks[0]! : Buffer.concat(read.chunks, read.total);
}

/**
 * The whole body as the chunks it came in, never joined, scanned as they come once it is SCAN_FROM_BYTES
 * or more (issue 33); undefined when it is larger than `limit` bytes (then it is not read further). A
 * valid body comes out on one line (line-breaks.ts): it may be forwarded as its bytes to any client.
 */
export async function readScanned(
  body: ReplyBody,
  limit: number,
): Promise<{ raw: Bytes; scanned: Scanned | ScanFailure | undefined } | undefined> {
  let scanner: JsonScanner | undefined;
  const read = await readChunks(body, limit, (chunks, total) => {
    if (scanner !== undefined) {
      scanner.push(chunks.at(-1)!);
    } else if (total >= SCAN_FROM_BYTES) {
      scanner = new JsonScanner();
      for (const part of chunks) scanner.push(part);
    }
  });
  if (read === undefined) return undefined;
  const { chunks, total } = read;
  if (scanner === undefined) {
    const raw = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total);
    // Rare (a pretty-printed body): only then is a small one scanned here, to know it valid.
    return {
      raw: hasLineBreaks(raw) && typeof scanJson(raw) !== 'string' ? onOneLine(raw) : raw,
      scanned: undefined,
    };
  }
  const raw = new Pieces(chunks, total);
  const scanned = scanner.end();
  return { raw: typeof scanned !== 'string' ? onOneLine(raw) : raw, scanned };
}

/** The body's chunks, each told to `read` as it comes; undefined past `limit` bytes (the body let go). */
async function readChunks(
  body: ReplyBody,
  limit: number,
  read?: (chunks: readonly Buffer[], total: number) => void,
): Promise<{ chunks: Buffer[]; total: number } | undefined> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    total += chunk.length;
    if (total > limit) {
      body.destroy();
      return undefined;
    }
    chunks.push(chunk);
    read?.(chunks, total);
  }
  return { chunks, total };
}

/**
 * Feeds an event stream to the parser until it ends; returns the error that ended it early, if any. What
 * the parser's sink throws is not a stream error: it is thrown on, after the body is let go. No chunk is
 * read while one of the `paused` valves is shut (the client is behind: valve.ts); TCP then holds the rest.
 */
export async function pump(
  body: ReplyBody,
  parser: SseParser,
  paused: readonly Valve[] = [],
): Promise<unknown> {
  const chunks = (body as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
  for (;;) {
    let next: IteratorResult<Buffer>;
    const open = untilOpen(paused);
    if (open !== undefined) await open;
    try {
      next = await chunks.next();
    } catch (error) {
      parser.end();
      return error ?? new Error('stream failed');
    }
    if (next.done === true) {
      parser.end();
      return undefined;
    }
    try {
      parser.push(next.value);
    } catch (error) {
      body.destroy();
      throw error;
    }
  }
}

const REASONS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  EPIPE: 'connection reset',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host not found',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  UND_ERR_SOCKET: 'connection lost',
  UND_ERR_CONNECT_TIMEOUT: 'connection timed out',
  UND_ERR_CLOSED: 'connection closed',
};

/** The first error code along the cause chain that `known` accepts. */
function codeOf(error: unknown, known: (code: string) => boolean): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && typeof current === 'object' && current !== null; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && known(code)) return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * Why a network exchange failed, in words fit for a client: the kind of failure, never the address (that
 * is for the logs).
 */
export function networkReason(error: unknown): string {
  if (error instanceof UpstreamCredentialError) return error.message;
  const code = codeOf(error, (candidate) => REASONS[candidate] !== undefined);
  return code === undefined ? 'connection failed' : `${REASONS[code]} (${code})`;
}

const BROKEN_CONNECTION = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET']);

/** The connection broke under the request with no answer at all (not refused, not timed out). */
export function connectionBroke(error: unknown): boolean {
  return codeOf(error, (code) => BROKEN_CONNECTION.has(code)) !== undefined;
}

/** Waits `ms`, or less when the signal aborts; says whether the wait ran to its end. */
export function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms).unref();
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

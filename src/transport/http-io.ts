/** The plain HTTP of the Streamable HTTP front: what a request accepts, its body, and the replies it gets. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { JsonRpcErrorObject } from '../protocol/errors.js';
import { serialize } from '../protocol/exact-ids.js';
import { EDGE_BYTES } from '../protocol/frames.js';
import type { RequestId } from '../protocol/messages.js';

export function accepts(req: IncomingMessage, type: string): boolean {
  const accept = req.headers.accept ?? '';
  return accept.includes(type) || accept.includes('*/*');
}

/** What a body over the limit showed of itself: its first and last bytes, the rest not kept. */
export interface OversizedBody {
  /** The bytes read; the body's size when `complete`. */
  bytes: number;
  head: string;
  /** Empty when the body was not read to its end. */
  tail: string;
  complete: boolean;
}

/** A body past the limit is read on this far, for its last bytes, keeping none of it but the ends. */
const DRAINED_BYTES = 64 * 1024 * 1024;

/** The body; past `limit`, only its ends (an answer too large to take still says which request it answers). */
export async function readBody(req: IncomingMessage, limit: number): Promise<Buffer | OversizedBody> {
  const chunks: Buffer[] = [];
  let size = 0;
  let head: Buffer | undefined;
  let tail = Buffer.alloc(0);
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (head === undefined && size <= limit) {
      chunks.push(chunk);
      continue;
    }
    if (head === undefined) {
      const read = Buffer.concat([...chunks, chunk]);
      chunks.length = 0;
      head = read.subarray(0, EDGE_BYTES);
      tail = read.subarray(-EDGE_BYTES);
    } else tail = Buffer.concat([tail, chunk]).subarray(-EDGE_BYTES);
    if (size > limit + DRAINED_BYTES)
      return { bytes: size, head: head.toString(), tail: '', complete: false };
  }
  if (head !== undefined)
    return { bytes: size, head: head.toString(), tail: tail.toString(), complete: true };
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
}

export function reply(
  res: ServerResponse,
  status: number,
  id: RequestId | null,
  error: JsonRpcErrorObject,
): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(serialize({ jsonrpc: '2.0', id, error }));
}

export function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

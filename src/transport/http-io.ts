/** The plain HTTP of the Streamable HTTP front: what a request accepts, its body, and the replies it gets. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { JsonRpcErrorObject } from '../protocol/errors.js';
import { serialize } from '../protocol/exact-ids.js';
import type { RequestId } from '../protocol/messages.js';

export function accepts(req: IncomingMessage, type: string): boolean {
  const accept = req.headers.accept ?? '';
  return accept.includes(type) || accept.includes('*/*');
}

/** The body, or undefined when it is larger than the limit (reading stops there). */
export async function readBody(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) return undefined;
    chunks.push(chunk);
  }
  return chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size);
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

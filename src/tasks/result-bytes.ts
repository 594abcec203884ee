/**
 * A task's result kept as the bytes it arrived as, and served as them (issue 33): a big result is neither
 * parsed into objects for the store nor re-serialised for tasks/result. Only the related-task `_meta` the
 * spec requires on tasks/result is written in, in front of the result's own members; a result that has a
 * `_meta` of its own (which the tag must join), or that is an error (isError: its statusMessage quotes it),
 * is kept as an object as before.
 */
import type { JsonRpcErrorObject } from '../protocol/errors.js';
import { RELATED_TASK_META, type JsonObject } from '../protocol/messages.js';
import { Pieces, type Bytes } from '../protocol/pieces.js';
import { scanJson } from '../protocol/scan.js';
import type { Scanned, ScanFailure } from '../protocol/scanned.js';

/**
 * What tasks/result answers: the result, or its bytes with the related-task tag written in (in the pieces
 * they were kept as, or text from a store that gave them back as text), or the error.
 */
export type ResultAnswer =
  { result: JsonObject } | { resultBytes: Pieces | string } | { error: JsonRpcErrorObject };

const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const WHITESPACE = new Set([0x20, 0x09, 0x0a, 0x0d]);

/**
 * The bytes of a success response's result, to keep for its task, as views of the reads they came in;
 * undefined when it is kept as an object. Views that would keep more than twice their bytes alive for the
 * task's life (a small result in a big read, past what the store's byte budget counts) are copied out, each
 * that is less than half of the read it lies in.
 */
export function keptResultBytes(
  raw: Bytes,
  scanned: Scanned | ScanFailure = scanJson(raw),
): Bytes | undefined {
  if (typeof scanned === 'string') return undefined;
  const span = scanned.top.result;
  if (span === undefined || span.first !== OPEN_BRACE) return undefined;
  if (scanned.result._meta !== undefined || scanned.result.isError !== undefined) return undefined;
  if (!(raw instanceof Pieces)) return owned(raw.subarray(span.start, span.end));
  const kept = raw.view(span.start, span.end);
  let held = 0;
  for (const read of new Set(kept.parts.map((part) => part.buffer))) held += read.byteLength;
  return held <= 2 * kept.length ? kept : new Pieces(kept.parts.map(owned), kept.length);
}

/** `bytes`, copied out when as a view it would keep more than twice its length alive. */
export const owned = (bytes: Buffer): Buffer =>
  bytes.length * 2 < bytes.buffer.byteLength ? Buffer.from(bytes) : bytes;

/**
 * The result kept as bytes, with `_meta: { related-task: { taskId } }` written in as its first member:
 * the result's own bytes are not copied, only put after the new first member.
 */
export function taggedResult(bytes: Bytes | string, taskId: string): Pieces | string {
  const head = (empty: boolean): string =>
    `{"_meta":${JSON.stringify({ [RELATED_TASK_META]: { taskId } })}${empty ? '' : ','}`;
  if (typeof bytes === 'string') {
    let next = 1;
    while (WHITESPACE.has(bytes.charCodeAt(next))) next++;
    return head(bytes.charCodeAt(next) === CLOSE_BRACE) + bytes.slice(1);
  }
  const pieces = bytes instanceof Pieces ? bytes : new Pieces([bytes], bytes.length);
  const first = Buffer.from(head(firstAfterBrace(pieces) === CLOSE_BRACE));
  const rest = pieces.view(1, pieces.length);
  return new Pieces([first, ...rest.parts], first.length + rest.length);
}

/** The first byte after an object's `{` that is not whitespace. */
function firstAfterBrace(pieces: Pieces): number | undefined {
  let skip = 1;
  for (const part of pieces.parts) {
    for (let i = skip; i < part.length; i++) if (!WHITESPACE.has(part[i]!)) return part[i];
    skip = 0;
  }
  return undefined;
}

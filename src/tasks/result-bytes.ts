/**
 * A task's result kept as the bytes it arrived as, and served as them (issue 33): a big result is neither
 * parsed into objects for the store nor re-serialised for tasks/result. Only the related-task `_meta` the
 * spec requires on tasks/result is written in, in front of the result's own members; a result that has a
 * `_meta` of its own (which the tag must join), or that is an error (isError: its statusMessage quotes it),
 * is kept as an object as before.
 */
import type { JsonRpcErrorObject } from '../protocol/errors.js';
import { RELATED_TASK_META, type JsonObject } from '../protocol/messages.js';
import { scanJson } from '../protocol/scan.js';
import type { Scanned, ScanFailure } from '../protocol/scanned.js';

/** What tasks/result answers: the result, or its bytes with the related-task tag written in, or the error. */
export type ResultAnswer =
  { result: JsonObject } | { resultBytes: Buffer | string } | { error: JsonRpcErrorObject };

const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const WHITESPACE = new Set([0x20, 0x09, 0x0a, 0x0d]);

/**
 * The bytes of a success response's result, to keep for its task; undefined when it is kept as an object.
 * A small result is copied out: a view would keep the whole chunk it was read in alive for the task's life.
 */
export function keptResultBytes(
  raw: Buffer,
  scanned: Scanned | ScanFailure = scanJson(raw),
): Buffer | undefined {
  if (typeof scanned === 'string') return undefined;
  const span = scanned.top.result;
  if (span === undefined || span.first !== OPEN_BRACE) return undefined;
  if (scanned.result._meta !== undefined || scanned.result.isError !== undefined) return undefined;
  const bytes = raw.subarray(span.start, span.end);
  return bytes.length * 2 < bytes.buffer.byteLength ? Buffer.from(bytes) : bytes;
}

/** The result kept as bytes, with `_meta: { related-task: { taskId } }` written in as its first member. */
export function taggedResult(bytes: Buffer | string, taskId: string): Buffer | string {
  const at = (i: number): number | undefined => (typeof bytes === 'string' ? bytes.charCodeAt(i) : bytes[i]);
  let next = 1;
  while (WHITESPACE.has(at(next)!)) next++;
  const head = `{"_meta":${JSON.stringify({ [RELATED_TASK_META]: { taskId } })}${at(next) === CLOSE_BRACE ? '' : ','}`;
  if (typeof bytes === 'string') return head + bytes.slice(1);
  return Buffer.concat([Buffer.from(head), bytes.subarray(1)]);
}

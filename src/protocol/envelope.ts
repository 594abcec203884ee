/**
 * The JSON-RPC envelope of a message read off its bytes by one scan (scan.ts), without parsing the
 * payload: what `classify(withExactId(JSON.parse(text), raw))` would say of its kind, id and method, and
 * where its `id` and `_meta` stand, so that a message taskgate does not change can go on as the bytes it
 * came as (issue 33).
 */
import { aliasOf } from './exact-ids.js';
import { checkRequestMeta, isId, type RequestId } from './messages.js';
import { Pieces, bytesIn, type Bytes } from './pieces.js';
import { scanJson, valueOf } from './scan.js';
import type { Members, Scanned, ScanFailure, ValueSpan } from './scanned.js';

export type EnvelopeKind = 'request' | 'notification' | 'response' | 'error';

export interface Envelope {
  /** `response`: a success response; `error`: an error response. */
  kind: EnvelopeKind;
  /** As taskgate uses it inside: exact, an alias for an integer beyond 2^53 (exact-ids.ts). */
  id?: RequestId | null;
  idSpan?: ValueSpan;
  /** The text has more than one `id`: `id` and `idSpan` are the last one's, which JSON.parse takes. */
  idRepeated?: true;
  method?: string;
  /** `params._meta` of a request or notification, `result._meta` of a response, when there. */
  meta?: ValueSpan;
  /** `result.task` and `result.isError` of a response, when there (what the task bookkeeping reads). */
  task?: ValueSpan;
  isError?: ValueSpan;
}

const OPEN_BRACE = 0x7b;
const QUOTE = 0x22;
const OPEN_BRACKET = 0x5b;
const MINUS = 0x2d;
const ZERO = 0x30;
const NINE = 0x39;
const JSONRPC_2 = Buffer.from('"2.0"');

/**
 * The envelope of one message, or undefined when it is not one taskgate can take as it is: not JSON,
 * nested deeper than MAX_NESTING, or a message classify() refuses. The bytes' reader then reads them the
 * usual way, which says why.
 */
export function envelopeOf(raw: Bytes, scanned: Scanned | ScanFailure = scanJson(raw)): Envelope | undefined {
  if (typeof scanned === 'string' || scanned.first !== OPEN_BRACE) return undefined;
  const { top } = scanned;
  if (!isJsonRpc2(raw, top.jsonrpc)) return undefined;
  const id = top.id === undefined ? undefined : idOf(raw, top.id);
  const has = (span: ValueSpan | undefined): span is ValueSpan => span !== undefined;
  const nullIdError = id === null && has(top.error) && !has(top.method) && !has(top.result);
  if (has(top.id) && !isId(id) && !nullIdError) return undefined;
  const ids = has(top.id)
    ? { id: id as RequestId | null, idSpan: top.id, ...(scanned.idRepeated && { idRepeated: true as const }) }
    : {};
  if (has(top.method)) {
    if (top.method.first !== QUOTE) return undefined;
    if (has(top.params) && top.params.first !== OPEN_BRACE) return undefined;
    const method = valueOf(raw, top.method) as string;
    const meta = scanned.params._meta;
    const found = { ...ids, method, ...(meta && { meta }) };
    if (!has(top.id)) return { kind: 'notification', ...found };
    if (scanned.otherMember || (meta && !metaIsValid(method, raw, meta))) return undefined;
    return { kind: 'request', ...found };
  }
  if (!has(top.id) || has(top.result) === has(top.error)) return undefined;
  if (has(top.result)) {
    if (top.result.first !== OPEN_BRACE) return undefined;
    const { _meta: meta, task, isError } = scanned.result;
    return {
      kind: 'response',
      ...ids,
      ...(meta && { meta }),
      ...(task && { task }),
      ...(isError && { isError }),
    };
  }
  const { code, message } = scanned.error;
  const isNumber = (span: ValueSpan | undefined): boolean =>
    span !== undefined && (span.first === MINUS || (span.first >= ZERO && span.first <= NINE));
  if (top.error!.first !== OPEN_BRACE || !isNumber(code) || message?.first !== QUOTE) return undefined;
  return { kind: 'error', ...ids };
}

function isJsonRpc2(raw: Bytes, span: ValueSpan | undefined): boolean {
  if (span?.first !== QUOTE) return false;
  if (span.end - span.start === JSONRPC_2.length && bytesIn(raw, span.start, span.end).equals(JSONRPC_2)) {
    return true;
  }
  return valueOf(raw, span) === '2.0';
}

/** The id as withExactId gives it: the alias of an integer JSON.parse rounds, else its value. */
export function idOf(raw: Bytes, span: ValueSpan): unknown {
  if (span.first === OPEN_BRACE || span.first === OPEN_BRACKET) return {};
  const value = valueOf(raw, span);
  if (typeof value !== 'number' || !Number.isInteger(value) || Number.isSafeInteger(value)) return value;
  return aliasOf(bytesIn(raw, span.start, span.end).toString('latin1')) ?? value;
}

function metaIsValid(method: string, raw: Bytes, meta: ValueSpan): boolean {
  try {
    checkRequestMeta(method, valueOf(raw, meta));
    return true;
  } catch {
    return false;
  }
}

const SPACE = 0x20;

/**
 * `raw` with `id` (the bytes of a JSON value) where `span` stood, the rest as it was: written over it in
 * place, padded with spaces (JSON whitespace) when shorter, so that nothing of the payload is copied; one
 * that is longer makes a new buffer, from the bytes before and after it. `raw` may be changed: it must be
 * the caller's to give away.
 */
export function withIdAt(raw: Buffer, span: ValueSpan, id: Buffer): Buffer {
  const room = span.end - span.start;
  if (id.length > room) return Buffer.concat([raw.subarray(0, span.start), id, raw.subarray(span.end)]);
  id.copy(raw, span.start);
  raw.fill(SPACE, span.start + id.length, span.end);
  return raw;
}

/**
 * The same for a message in pieces: written over in place when the id lies in one piece and `id` fits;
 * otherwise the piece or pieces it straddles are replaced by one copy, the others kept.
 */
export function piecesWithIdAt(raw: Pieces, span: ValueSpan, id: Buffer): Pieces {
  const { parts } = raw;
  let first = 0;
  let firstAt = 0;
  while (firstAt + parts[first]!.length <= span.start) firstAt += parts[first++]!.length;
  let last = first;
  for (let end = firstAt + parts[first]!.length; end < span.end; end += parts[last]!.length) last++;
  const touched = first === last ? parts[first]! : Buffer.concat(parts.slice(first, last + 1));
  const replaced = withIdAt(touched, { ...span, start: span.start - firstAt, end: span.end - firstAt }, id);
  return new Pieces(
    [...parts.slice(0, first), replaced, ...parts.slice(last + 1)],
    raw.length - touched.length + replaced.length,
  );
}

/**
 * The scan of the text `withIdAt` or `piecesWithIdAt` makes of a scanned one, without scanning it again:
 * `span` is the scan's `top.id`, and every span after it moves by what the longer id adds (a shorter one
 * is padded, which moves nothing). The id is a top-level member, so no other span holds it.
 */
export function scanWithIdAt(scanned: Scanned, span: ValueSpan, id: Buffer): Scanned {
  const shift = Math.max(0, id.length - (span.end - span.start));
  const moved = <K extends string>(members: Members<K>): Members<K> => {
    if (shift === 0) return members;
    const out: Members<K> = {};
    for (const [key, at] of Object.entries(members) as [K, ValueSpan][]) {
      out[key] = at.start < span.end ? at : { first: at.first, start: at.start + shift, end: at.end + shift };
    }
    return out;
  };
  return {
    ...scanned,
    top: { ...moved(scanned.top), id: { first: id[0]!, start: span.start, end: span.start + id.length } },
    params: moved(scanned.params),
    result: moved(scanned.result),
    error: moved(scanned.error),
  };
}

/**
 * What a scan of a message records (scan.ts): where the members it is routed on stand, and why a text
 * that is not one failed.
 */

/** Where one member's value stands: `first` is its first byte (`"`, `{`, `[`, `t`, `f`, `n` or a number's). */
export interface ValueSpan {
  first: number;
  start: number;
  end: number;
}

/** The members of a message the routing code reads; a duplicate key is as JSON.parse takes it: the last. */
export const TOP_KEYS = ['jsonrpc', 'id', 'method', 'params', 'result', 'error'] as const;
export const INNER_KEYS = {
  // progressToken and level: what a notification is routed on (upstream-side.ts, shared-upstream.ts).
  params: ['_meta', 'progressToken', 'level'],
  // resultType: a 2026-07-28 answer's, which the translator takes out of the bytes (legacy-bytes.ts).
  result: ['_meta', 'task', 'isError', 'resultType'],
  error: ['code', 'message'],
} as const;

export type TopKey = (typeof TOP_KEYS)[number];
export type Inner = keyof typeof INNER_KEYS;
export type Members<K extends string> = Partial<Record<K, ValueSpan>>;

export interface Scanned {
  /** The first byte of the text's value (`{` for anything that can be a message). */
  first: number;
  top: Members<TopKey>;
  /** A top-level key other than jsonrpc, id, method and params (one a request must not have). */
  otherMember: boolean;
  /** More than one top-level `id` (JSON.parse takes the last; `top.id` is that one). */
  idRepeated: boolean;
  /** A member kept of `params`, `result` or `error` stands more than once in it (the spans are the last's). */
  innerRepeated: boolean;
  params: Members<'_meta' | 'progressToken' | 'level'>;
  result: Members<'_meta' | 'task' | 'isError' | 'resultType'>;
  error: Members<'code' | 'message'>;
}

/** `invalid`: JSON.parse would throw. `too-deep`: valid up to where it nests deeper than MAX_NESTING. */
export type ScanFailure = 'invalid' | 'too-deep';

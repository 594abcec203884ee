/**
 * Sealed MRTR `requestState` (basic/patterns/mrtr.mdx "Server Requirements" 4 and 5, "Security
 * Considerations"): the state is attacker-controlled input, so it is HMAC-SHA256 signed with a process
 * secret, expires, is bounded in size, and is bound to the request it was issued for (method, a digest of
 * the salient params, the principal). It names the pending upstream request that the retry answers. A
 * token has one spelling, and another caller's reads as a forged one.
 *
 * Token: `v1.<base64url(JSON payload)>.<base64url(HMAC-SHA256(secret, "v1." + payload))>`.
 * Single use is not the token's job (mrtr.mdx warns it cannot be): whoever holds the pending request
 * consumes it once.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { isObject, type JsonObject } from '../messages.js';
import { RequestStateError, type RequestStateProblem } from './errors.js';

export interface RequestState {
  /** The pending upstream request this state resumes (taskgate's own key for it). */
  pending: string;
  /** The replica that holds the pending request, so another replica can tell it is not its own. */
  replica: string;
  method: string;
  /** requestDigest(method, params) of the request the state was issued for. */
  digest: string;
  /** The authenticated principal, when there is one. */
  principal?: string;
}

export interface SealerOptions {
  /** At least 32 bytes, random per process (or shared by the replicas that may receive the retry). */
  secret: Uint8Array;
  now: () => number;
  /** How long a state stays valid, in ms. */
  ttlMs: number;
  /** Longest token accepted, in characters. */
  maxLength?: number;
}

export interface RequestStateSealer {
  seal(state: RequestState): string;
  /** The state, when `token` is intact, unexpired and issued for `expected` (a retry of the same request). */
  open(
    token: string,
    expected: Pick<RequestState, 'method' | 'digest' | 'principal'>,
  ): { ok: true; value: RequestState } | { ok: false; error: RequestStateError };
}

const VERSION = 'v1';
export const DEFAULT_MAX_STATE_LENGTH = 2048;
const MIN_SECRET_BYTES = 32;

export function createRequestStateSealer(options: SealerOptions): RequestStateSealer {
  if (options.secret.byteLength < MIN_SECRET_BYTES) {
    throw new RangeError(`requestState secret must be at least ${MIN_SECRET_BYTES} bytes`);
  }
  const { secret, now, ttlMs } = options;
  const maxLength = options.maxLength ?? DEFAULT_MAX_STATE_LENGTH;
  const sign = (signed: string): Buffer => createHmac('sha256', secret).update(signed).digest();
  const refuse = (problem: RequestStateProblem) =>
    ({ ok: false, error: new RequestStateError(problem) }) as const;

  return {
    seal(state) {
      const payload: JsonObject = { ...state, expiresAt: now() + ttlMs };
      const signed = `${VERSION}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}`;
      const token = `${signed}.${sign(signed).toString('base64url')}`;
      if (token.length > maxLength)
        throw new RangeError(`requestState of ${token.length} chars exceeds ${maxLength}`);
      return token;
    },

    open(token, expected) {
      if (token.length > maxLength) return refuse('oversized');
      const parts = token.split('.');
      if (parts.length !== 3 || parts[0] !== VERSION) return refuse('malformed');
      const [, body = '', mac = ''] = parts;
      // The MAC as taskgate spells it, not as it decodes: padding, standard base64 or flipped unused bits
      // would make one token many.
      const given = Buffer.from(mac);
      const wanted = Buffer.from(sign(`${VERSION}.${body}`).toString('base64url'));
      if (given.length !== wanted.length || !timingSafeEqual(given, wanted)) return refuse('tampered');
      const state = parsePayload(body);
      if (state === undefined) return refuse('malformed');
      // Another caller's token reads as a forged one, before its expiry could tell it is genuine.
      if (state.principal !== expected.principal) return refuse('tampered');
      if (now() >= state.expiresAt) return refuse('expired');
      const { expiresAt: _expiresAt, ...value } = state;
      const same = value.method === expected.method && value.digest === expected.digest;
      return same ? { ok: true, value } : refuse('mismatch');
    },
  };
}

/**
 * The replica a token says holds its call, read without checking the token: only to know where to carry
 * the retry, whose holder checks it in full.
 */
export function replicaNamedBy(token: string): string | undefined {
  const parts = token.split('.');
  if (token.length > DEFAULT_MAX_STATE_LENGTH || parts.length !== 3 || parts[0] !== VERSION) return undefined;
  const state = parsePayload(parts[1]!);
  return typeof state?.replica === 'string' ? state.replica : undefined;
}

/**
 * Identifies the originating request: its method and a SHA-256 of its params in canonical JSON, without
 * what changes between the attempts of one request (`_meta`, `inputResponses`, `requestState`).
 */
export function requestDigest(method: string, params: JsonObject | undefined): string {
  const { _meta: _m, inputResponses: _i, requestState: _r, ...salient } = params ?? {};
  return createHash('sha256')
    .update(`${method}\n${canonicalJson(salient)}`)
    .digest('base64url');
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (isObject(value)) {
    const entries = Object.keys(value)
      .sort()
      .filter((key) => value[key] !== undefined)
      .map((key) => `${JSON.stringify(key)}:${canonicalJson(value[key])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

function parsePayload(body: string): (RequestState & { expiresAt: number }) | undefined {
  let payload: unknown;
  try {
    payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (!isObject(payload)) return undefined;
  const { pending, replica, method, digest, principal, expiresAt } = payload;
  const strings = [pending, replica, method, digest].every((field) => typeof field === 'string');
  if (
    !strings ||
    typeof expiresAt !== 'number' ||
    !(principal === undefined || typeof principal === 'string')
  ) {
    return undefined;
  }
  return payload as unknown as RequestState & { expiresAt: number };
}

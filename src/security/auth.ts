/**
 * Who is calling, on the HTTP front: a static bearer token, an identity header from a trusted auth
 * proxy, the caller's own bearer token (bound by a keyed hash of it), or an OAuth access token that
 * taskgate validates (oauth.ts). Tasks are bound to the identity.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Config } from '../config/schema.js';
import type { CallerAccess } from '../protocol/caller.js';
import { accessRules } from './access.js';
import { oauthAuthenticator } from './oauth.js';
import type { Grant } from './oauth-tokens.js';

export type Authentication =
  | {
      identity: string;
      subject: string;
      /** The Authorization to send an HTTP upstream on the caller's behalf (bearer pass-through). */
      upstreamAuthorization?: string;
      /** What a validated OAuth access token grants (its scopes and groups), for authorization rules. */
      grant?: Grant;
      /** The validated OAuth access token itself (src/security/caller-tokens.ts holds the latest). */
      token?: string;
      /** What the caller may do, by `auth.rules`; none when there are no rules. */
      access?: CallerAccess;
    }
  | {
      refused: string;
      /**
       * 401 unless set: 400 for a malformed authorization request, 403 for a token without the scope
       * needed, 503 when it cannot be judged now.
       */
      status?: 400 | 401 | 403 | 503;
      /** The WWW-Authenticate value, when it is not the plain bearer one. */
      challenge?: string;
    };

export type Authenticator = (req: IncomingMessage) => Authentication | Promise<Authentication>;

/** The authenticator the config asks for; undefined when callers are not identified (an open front). */
export function createAuthenticator(auth: Config['auth']): Authenticator | undefined {
  const identify = identifier(auth);
  const rights = accessRules(auth);
  if (identify === undefined || rights === undefined) return identify;
  return async (req) => {
    const caller = await identify(req);
    return 'refused' in caller ? caller : { ...caller, access: rights(caller) };
  };
}

function identifier(auth: Config['auth']): Authenticator | undefined {
  if (auth.oauth) return oauthAuthenticator(auth.oauth);
  if (auth.tokens.length > 0) return staticTokens(auth.tokens);
  if (auth.trustedHeader) return trustedHeader(auth.trustedHeader.name, auth.trustedHeader.trustedAddresses);
  if (auth.bearerPassthrough) return bearerHash(auth.bearerPassthrough.secret);
  return undefined;
}

function bearerOf(req: IncomingMessage): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
  return match?.[1];
}

/** Tokens are kept only as keyed digests, and every one is compared, in constant time. */
function staticTokens(tokens: readonly { token: string; subject: string }[]): Authenticator {
  const key = randomBytes(32);
  const digest = (token: string): Buffer => createHmac('sha256', key).update(token).digest();
  const known = tokens.map(({ token, subject }) => ({ digest: digest(token), subject }));
  return (req) => {
    const token = bearerOf(req);
    if (token === undefined) return { refused: 'a bearer token is required' };
    const presented = digest(token);
    let subject: string | undefined;
    for (const entry of known) if (timingSafeEqual(entry.digest, presented)) subject ??= entry.subject;
    return subject === undefined
      ? { refused: 'the bearer token is not valid' }
      : { identity: `token:${subject}`, subject };
  };
}

function trustedHeader(name: string, addresses: readonly string[]): Authenticator {
  const header = name.toLowerCase();
  const trusted = new Set(addresses.flatMap((address) => [address, `::ffff:${address}`]));
  return (req) => {
    if (!trusted.has(req.socket.remoteAddress ?? '')) {
      return { refused: `requests must come through the trusted proxy that sets ${name}` };
    }
    const value = req.headers[header];
    if (typeof value !== 'string' || value.trim() === '') return { refused: `the ${name} header is missing` };
    return { identity: `header:${value.trim()}`, subject: value.trim() };
  };
}

/**
 * The caller's own token identifies it by its keyed hash, and goes on to an HTTP upstream with the
 * session's requests. A session is bound to the identity that opened it, so to one token throughout.
 */
function bearerHash(secret: string): Authenticator {
  return (req) => {
    const token = bearerOf(req);
    if (token === undefined) return { refused: 'a bearer token is required' };
    const hash = createHmac('sha256', secret).update(token).digest('base64url');
    return {
      identity: `bearer:${hash}`,
      subject: `bearer:${hash.slice(0, 12)}`,
      upstreamAuthorization: `Bearer ${token}`,
    };
  };
}

/**
 * An access token judged as OAuth 2.1 section 5.2 and MCP basic/authorization ("Token Handling") ask: a
 * JWT signed by one of the issuer's keys, from that issuer, for taskgate's own resource (RFC 8707: its
 * `aud` names it), within its `exp` and `nbf` (with `clockSkew`), carrying the scopes required. With
 * `introspection`, a token that is not a JWT (or any, as configured) is judged by what the issuer's
 * introspection endpoint says of it (oauth-introspection.ts), against the same claims.
 */
import { decodeProtectedHeader, errors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import type { OAuthConfig } from '../config/schema.js';
import { authorizationServerKeys } from './oauth-keys.js';
import { introspectedClaims, Introspector, type Introspected } from './oauth-introspection.js';
import { AuthorizationServerUnavailable } from './oauth-metadata.js';
import { namesResource, NOT_FOR_THIS_RESOURCE } from './oauth-audience.js';

/** What a valid token says of its bearer. */
export interface Grant {
  issuer: string;
  subject: string;
  scopes: readonly string[];
  /** The `groups` and `roles` claims, for authorization rules. */
  groups: readonly string[];
  /** `exp`, in ms. */
  expiresAt: number;
}

export type TokenVerdict =
  | { ok: true; grant: Grant }
  /** 401: no token, or not one for taskgate (RFC 6750 section 3.1 `invalid_token`). */
  | { ok: false; status: 401; error?: 'invalid_token'; description: string }
  /** 403: a good token without the scopes this needs. */
  | { ok: false; status: 403; error: 'insufficient_scope'; description: string }
  /** 503: the authorization server's keys cannot be had, so no token can be judged now. */
  | { ok: false; status: 503; description: string };

type Refusal = Exclude<TokenVerdict, { ok: true }>;

export class TokenValidator {
  private readonly required: readonly string[];

  constructor(
    private readonly oauth: OAuthConfig,
    private readonly keys: JWTVerifyGetKey = authorizationServerKeys(oauth),
    private readonly introspector: Introspector | undefined = oauth.introspection &&
      new Introspector(oauth, oauth.introspection),
  ) {
    this.required = oauth.scopes;
  }

  async check(token: string | undefined): Promise<TokenVerdict> {
    if (token === undefined) return { ok: false, status: 401, description: 'a bearer token is required' };
    const introspected =
      this.introspector !== undefined && (this.oauth.introspection?.tokens === 'all' || !isJwt(token));
    const read = await (introspected ? this.introspected(token) : this.verified(token));
    return 'payload' in read ? this.granted(read.payload) : read;
  }

  private async verified(token: string): Promise<{ payload: JWTPayload } | Refusal> {
    try {
      const { payload } = await jwtVerify(token, this.keys, {
        issuer: this.oauth.issuer,
        clockTolerance: Math.floor(this.oauth.clockSkew / 1000),
        requiredClaims: ['sub', 'exp'],
      });
      if (!namesResource(payload.aud, this.oauth.resource)) {
        return { ok: false, status: 401, error: 'invalid_token', description: NOT_FOR_THIS_RESOURCE };
      }
      return { payload };
    } catch (error) {
      if (error instanceof AuthorizationServerUnavailable) return unavailable(error);
      return { ok: false, status: 401, error: 'invalid_token', description: whyInvalid(error) };
    }
  }

  private async introspected(token: string): Promise<{ payload: JWTPayload } | Refusal> {
    let answer: Introspected;
    try {
      answer = await this.introspector!.introspect(token);
    } catch (error) {
      if (error instanceof AuthorizationServerUnavailable) return unavailable(error);
      throw error;
    }
    const read = introspectedClaims(answer, this.oauth, Date.now());
    if ('invalid' in read) {
      return { ok: false, status: 401, error: 'invalid_token', description: read.invalid };
    }
    return read;
  }

  private granted(payload: JWTPayload): TokenVerdict {
    const scopes = withImplied(scopesOf(payload), this.oauth.impliedScopes);
    const missing = this.required.filter((scope) => !scopes.includes(scope));
    if (missing.length > 0) {
      return {
        ok: false,
        status: 403,
        error: 'insufficient_scope',
        description: `the token lacks the scope ${missing.join(' ')}`,
      };
    }
    return {
      ok: true,
      grant: {
        issuer: payload.iss!,
        subject: payload.sub!,
        scopes,
        groups: [...stringsOf(payload['groups']), ...stringsOf(payload['roles'])],
        expiresAt: payload.exp! * 1000,
      },
    };
  }
}

function unavailable(error: AuthorizationServerUnavailable): Refusal {
  return {
    ok: false,
    status: 503,
    description: `the authorization server could not be reached to check the token (${error.message})`,
  };
}

/** A JWS or JWE in compact form, as JWT access tokens are; anything else is opaque. */
function isJwt(token: string): boolean {
  try {
    decodeProtectedHeader(token);
    return true;
  } catch {
    return false;
  }
}

function whyInvalid(error: unknown): string {
  if (error instanceof errors.JWTExpired) return 'the token has expired';
  if (error instanceof errors.JWTClaimValidationFailed) {
    const claims: Record<string, string> = {
      iss: 'the token was not issued by the configured authorization server',
      nbf: 'the token is not valid yet',
    };
    return claims[error.claim] ?? `the token's ${error.claim} claim is not valid`;
  }
  if (error instanceof errors.JWKSNoMatchingKey)
    return 'the token is signed with a key the issuer does not list';
  if (error instanceof errors.JWSSignatureVerificationFailed) return "the token's signature does not verify";
  return 'the bearer token is not a valid access token';
}

/** `scope` (RFC 9068, space-separated) or `scp` (a list, as some servers issue). */
function scopesOf(payload: JWTPayload): string[] {
  if (typeof payload['scope'] === 'string') return payload['scope'].split(' ').filter(Boolean);
  const scp = payload['scp'];
  return typeof scp === 'string' ? scp.split(' ').filter(Boolean) : stringsOf(scp);
}

/** The scopes and every scope they imply (MCP 2026-07-28 "Scope Challenge Handling": scope hierarchies). */
function withImplied(scopes: string[], implied: Readonly<Record<string, readonly string[]>>): string[] {
  const all = new Set(scopes);
  for (const scope of all) for (const narrower of implied[scope] ?? []) all.add(narrower);
  return [...all];
}

function stringsOf(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];
}

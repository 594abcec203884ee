/**
 * Opaque access tokens, judged by the authorization server that issued them (RFC 7662 token
 * introspection), taskgate authenticating as its client. An active answer is kept until the token's `exp`
 * (never beyond, at most `cacheMaxAge`, the least recently used dropped first beyond `cacheMax`), keyed
 * by a digest of the token so that no token is held for it. Inactive answers are not kept: a client
 * refused 401 gets a new token rather than presenting the same one again, and a store of refusals would
 * be filled by whoever sends random strings, pushing out the callers' answers; concurrent requests with
 * one token share one introspection all the same. While the server cannot be reached, it is asked again
 * at most once per RETRY_AFTER_MS; tokens whose answers are kept still pass.
 */
import { createHash } from 'node:crypto';
import type { JWTPayload } from 'jose';
import type { IntrospectionConfig } from '../config/oauth-introspection.js';
import type { OAuthConfig } from '../config/schema.js';
import { namesResource, NOT_FOR_THIS_RESOURCE } from './oauth-audience.js';
import {
  AuthorizationServerUnavailable,
  authorizationServerMetadata,
  causeOf,
  RETRY_AFTER_MS,
} from './oauth-metadata.js';

/** What the authorization server said of a token (RFC 7662 section 2.2). */
export type Introspected =
  | { active: true; claims: Readonly<Record<string, unknown>> }
  /** `why`: the server refused to introspect it (a 400, RFC 6749 section 5.2), rather than calling it inactive. */
  | { active: false; why?: string };

type AuthMethod = NonNullable<IntrospectionConfig['authMethod']>;

interface Endpoint {
  url: URL;
  method: AuthMethod;
}

interface Kept {
  answer: Introspected;
  until: number;
}

export class Introspector {
  private readonly kept = new Map<string, Kept>();
  private readonly asking = new Map<string, Promise<Introspected>>();
  private endpoint: Promise<Endpoint> | undefined;
  private failedAt = -Infinity;

  constructor(
    private readonly oauth: OAuthConfig,
    private readonly settings: IntrospectionConfig,
    private readonly now: () => number = Date.now,
  ) {}

  /** The server's answer for this token, kept or asked for; AuthorizationServerUnavailable if it cannot be had. */
  introspect(token: string): Promise<Introspected> {
    const key = createHash('sha256').update(token).digest('base64url');
    const kept = this.recall(key);
    if (kept !== undefined) return Promise.resolve(kept);
    let asking = this.asking.get(key);
    if (asking === undefined) {
      asking = this.ask(token, key).finally(() => this.asking.delete(key));
      this.asking.set(key, asking);
    }
    return asking;
  }

  private recall(key: string): Introspected | undefined {
    const kept = this.kept.get(key);
    if (kept === undefined) return undefined;
    this.kept.delete(key);
    if (this.now() >= kept.until) return undefined;
    this.kept.set(key, kept);
    return kept.answer;
  }

  private keep(key: string, answer: Introspected): void {
    if (!answer.active || this.settings.cacheMax === 0) return;
    const exp = answer.claims['exp'];
    if (typeof exp !== 'number') return;
    const until = Math.min(exp * 1000, this.now() + (this.settings.cacheMaxAge ?? Infinity));
    if (until <= this.now()) return;
    while (this.kept.size >= this.settings.cacheMax) this.kept.delete(this.kept.keys().next().value!);
    this.kept.set(key, { answer, until });
  }

  private async ask(token: string, key: string): Promise<Introspected> {
    if (this.now() - this.failedAt < RETRY_AFTER_MS) {
      throw new AuthorizationServerUnavailable('it could not be reached a moment ago');
    }
    try {
      this.endpoint ??= this.discover().catch((error: unknown) => {
        this.endpoint = undefined;
        throw error;
      });
      const answer = await this.post(await this.endpoint, token);
      this.keep(key, answer);
      return answer;
    } catch (error) {
      this.failedAt = this.now();
      throw error;
    }
  }

  private async post({ url, method }: Endpoint, token: string): Promise<Introspected> {
    const { clientId, clientSecret } = this.settings;
    const body = new URLSearchParams({ token, token_type_hint: 'access_token' });
    const headers: Record<string, string> = {
      accept: 'application/json',
      'content-type': 'application/x-www-form-urlencoded',
    };
    if (method === 'client_secret_post') {
      body.set('client_id', clientId);
      body.set('client_secret', clientSecret);
    } else {
      // RFC 6749 section 2.3.1: each form-encoded, then joined and base64-encoded.
      const pair = `${formEncoded(clientId)}:${formEncoded(clientSecret)}`;
      headers['authorization'] = `Basic ${Buffer.from(pair).toString('base64')}`;
    }
    const unavailable = (why: string) =>
      new AuthorizationServerUnavailable(`introspection at ${url.href}: ${why}`);
    let response: Response;
    let answer: unknown;
    try {
      response = await fetch(url, {
        method: 'POST',
        headers,
        body,
        redirect: 'manual',
        signal: AbortSignal.timeout(this.oauth.timeout),
      });
      answer = await response.json().catch(() => undefined);
    } catch (error) {
      throw unavailable(causeOf(error));
    }
    const fields = typeof answer === 'object' && answer !== null ? (answer as Record<string, unknown>) : {};
    // A 400 other than invalid_client is about the token (say, a kind the server does not introspect).
    if (
      response.status === 400 &&
      typeof fields['error'] === 'string' &&
      fields['error'] !== 'invalid_client'
    ) {
      return {
        active: false,
        why: `the authorization server refused to introspect the token (${fields['error']})`,
      };
    }
    if (response.status !== 200) throw unavailable(`HTTP ${response.status}`);
    if (typeof fields['active'] !== 'boolean') throw unavailable('the answer has no boolean "active"');
    return fields['active'] ? { active: true, claims: fields } : { active: false };
  }

  private async discover(): Promise<Endpoint> {
    const { endpoint, authMethod } = this.settings;
    if (endpoint !== undefined && authMethod !== undefined)
      return { url: new URL(endpoint), method: authMethod };
    const metadata = await authorizationServerMetadata(this.oauth);
    const url = endpoint ?? metadata['introspection_endpoint'];
    if (typeof url !== 'string') {
      throw new AuthorizationServerUnavailable(
        `the metadata of ${this.oauth.issuer} names no introspection_endpoint (set auth.oauth.introspection.endpoint)`,
      );
    }
    return { url: new URL(url), method: authMethod ?? methodOf(metadata) };
  }
}

/**
 * How the metadata lets a client authenticate for introspection (RFC 8414 section 2: the introspection
 * endpoint's own list, else the token endpoint's, whose default is client_secret_basic).
 */
function methodOf(metadata: Record<string, unknown>): AuthMethod {
  const listed =
    metadata['introspection_endpoint_auth_methods_supported'] ??
    metadata['token_endpoint_auth_methods_supported'];
  if (!Array.isArray(listed)) return 'client_secret_basic';
  for (const method of ['client_secret_basic', 'client_secret_post'] as const) {
    if (listed.includes(method)) return method;
  }
  throw new AuthorizationServerUnavailable(
    `the metadata of its issuer allows neither client_secret_basic nor client_secret_post for introspection (it lists ${listed.join(', ')})`,
  );
}

const formEncoded = (text: string): string => new URLSearchParams({ _: text }).toString().slice(2);

/**
 * An active answer read as a JWT access token's claims are, with the same refusals (OAuth 2.1 section 5.2,
 * RFC 8707): `aud` must name the resource, `iss` (when given) be the issuer, `exp` (required) and `nbf`
 * hold within the clock skew. The subject is `sub`, else `client_id` (a client credentials token is its
 * client's, as RFC 9068 section 2.2 has it for JWTs); `iss` is the issuer when not given.
 */
export function introspectedClaims(
  answer: Introspected,
  oauth: OAuthConfig,
  now: number,
): { payload: JWTPayload } | { invalid: string } {
  if (!answer.active) return { invalid: answer.why ?? 'the token is not active' };
  const { claims } = answer;
  const iss = claims['iss'] ?? oauth.issuer;
  if (iss !== oauth.issuer) {
    return { invalid: 'the token was not issued by the configured authorization server' };
  }
  if (!namesResource(claims['aud'], oauth.resource)) {
    return { invalid: NOT_FOR_THIS_RESOURCE };
  }
  const { exp, nbf } = claims;
  if (typeof exp !== 'number') return { invalid: "the token's exp claim is not valid" };
  if (exp * 1000 <= now - oauth.clockSkew) return { invalid: 'the token has expired' };
  if (nbf !== undefined && (typeof nbf !== 'number' || nbf * 1000 > now + oauth.clockSkew)) {
    return { invalid: 'the token is not valid yet' };
  }
  const sub = [claims['sub'], claims['client_id']].find(
    (value): value is string => typeof value === 'string' && value !== '',
  );
  if (sub === undefined) return { invalid: "the token's sub claim is not valid" };
  return { payload: { ...claims, iss, sub, exp } };
}

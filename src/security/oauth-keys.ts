/**
 * The authorization server's signing keys: its JWKS, found through its metadata (RFC 8414, else OpenID
 * Connect discovery) unless configured, fetched by jose's remote key set (cached for `jwksMaxAge`, fetched
 * again on an unknown `kid` no sooner than `jwksCooldown` after the last fetch). While the server cannot be
 * reached, it is asked again at most once per RETRY_AFTER_MS, whatever the request rate.
 */
import { createRemoteJWKSet, errors, type JWTVerifyGetKey } from 'jose';
import type { OAuthConfig } from '../config/schema.js';

export const RETRY_AFTER_MS = 1_000;

/** The authorization server could not be asked (down, slow, or answering nonsense): no token can be judged. */
export class AuthorizationServerUnavailable extends Error {
  override readonly name = 'AuthorizationServerUnavailable';
}

/**
 * Where an issuer's metadata may be, in the order the MCP spec has clients try them (basic/authorization,
 * "Authorization Server Metadata Discovery"): RFC 8414's path insertion, then OpenID Connect's.
 */
export function metadataUrls(issuer: string): URL[] {
  const url = new URL(issuer);
  const path = url.pathname.replace(/\/$/, '');
  const at = (wellKnown: string) => new URL(`${url.origin}${wellKnown}`);
  if (path === '') {
    return [at('/.well-known/oauth-authorization-server'), at('/.well-known/openid-configuration')];
  }
  return [
    at(`/.well-known/oauth-authorization-server${path}`),
    at(`/.well-known/openid-configuration${path}`),
    at(`${path}/.well-known/openid-configuration`),
  ];
}

async function discoverJwksUri(oauth: OAuthConfig): Promise<URL> {
  const problems: string[] = [];
  for (const url of metadataUrls(oauth.issuer)) {
    let response: Response;
    try {
      response = await fetch(url, {
        headers: { accept: 'application/json' },
        redirect: 'manual',
        signal: AbortSignal.timeout(oauth.timeout),
      });
    } catch (error) {
      throw new AuthorizationServerUnavailable(`${url.href}: ${causeOf(error)}`);
    }
    if (response.status !== 200) {
      problems.push(`${url.href}: HTTP ${response.status}`);
      continue;
    }
    const metadata = (await response.json().catch(() => undefined)) as Record<string, unknown> | undefined;
    // RFC 8414 section 3.3: metadata naming another issuer must not be used.
    if (metadata?.issuer !== oauth.issuer) {
      throw new AuthorizationServerUnavailable(
        `${url.href} names issuer ${JSON.stringify(metadata?.issuer)}`,
      );
    }
    if (typeof metadata.jwks_uri !== 'string') {
      throw new AuthorizationServerUnavailable(`${url.href} has no jwks_uri`);
    }
    return new URL(metadata.jwks_uri);
  }
  throw new AuthorizationServerUnavailable(`no metadata: ${problems.join('; ')}`);
}

function causeOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
  return `${error.message}${cause}`;
}

/** The key lookup jose's jwtVerify takes, failing with AuthorizationServerUnavailable when it cannot fetch. */
export function authorizationServerKeys(oauth: OAuthConfig): JWTVerifyGetKey {
  let keys: Promise<JWTVerifyGetKey> | undefined;
  let failedAt = -Infinity;
  const remoteKeys = async (): Promise<JWTVerifyGetKey> => {
    const uri = oauth.jwksUri === undefined ? await discoverJwksUri(oauth) : new URL(oauth.jwksUri);
    return createRemoteJWKSet(uri, {
      timeoutDuration: oauth.timeout,
      cooldownDuration: oauth.jwksCooldown,
      cacheMaxAge: oauth.jwksMaxAge,
    });
  };
  return async (header, token) => {
    if (Date.now() - failedAt < RETRY_AFTER_MS) {
      throw new AuthorizationServerUnavailable('it could not be reached a moment ago');
    }
    try {
      keys ??= remoteKeys();
      return await (
        await keys
      )(header, token);
    } catch (error) {
      if (error instanceof AuthorizationServerUnavailable) {
        keys = undefined;
      } else if (!isFetchFailure(error)) throw error;
      failedAt = Date.now();
      throw error instanceof AuthorizationServerUnavailable
        ? error
        : new AuthorizationServerUnavailable(`its keys could not be fetched: ${causeOf(error)}`);
    }
  };
}

/** A failure to fetch the key set (network, timeout, an answer that is not one), not a verdict on the token. */
function isFetchFailure(error: unknown): boolean {
  return (
    error instanceof TypeError ||
    error instanceof errors.JWKSTimeout ||
    error instanceof errors.JWKSInvalid ||
    (error instanceof errors.JOSEError && error.code === errors.JOSEError.code)
  );
}

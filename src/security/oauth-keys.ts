/**
 * The authorization server's signing keys: its JWKS, found through its metadata (RFC 8414, else OpenID
 * Connect discovery) unless configured, fetched by jose's remote key set (cached for `jwksMaxAge`, fetched
 * again on an unknown `kid` no sooner than `jwksCooldown` after the last fetch). While the server cannot be
 * reached, it is asked again at most once per RETRY_AFTER_MS, whatever the request rate, and tokens are
 * judged by the key set last fetched: only a token of a key outside it waits for the server.
 */
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  errors,
  jwksCache,
  type JWKSCacheInput,
  type JWTVerifyGetKey,
} from 'jose';
import type { OAuthConfig } from '../config/schema.js';
import {
  AuthorizationServerUnavailable,
  authorizationServerMetadata,
  causeOf,
  RETRY_AFTER_MS,
} from './oauth-metadata.js';

async function discoverJwksUri(oauth: OAuthConfig): Promise<URL> {
  const metadata = await authorizationServerMetadata(oauth);
  if (typeof metadata['jwks_uri'] !== 'string') {
    throw new AuthorizationServerUnavailable(`the metadata of ${oauth.issuer} has no jwks_uri`);
  }
  return new URL(metadata['jwks_uri']);
}

/** The key lookup jose's jwtVerify takes, failing with AuthorizationServerUnavailable when it cannot fetch. */
export function authorizationServerKeys(oauth: OAuthConfig): JWTVerifyGetKey {
  let keys: Promise<JWTVerifyGetKey> | undefined;
  let failedAt = -Infinity;
  /** jose keeps the key set it last fetched here, across a rediscovery too. */
  const fetched: JWKSCacheInput = {};
  const lastFetched = lastFetchedKeys(fetched);
  const remoteKeys = async (): Promise<JWTVerifyGetKey> => {
    const uri = oauth.jwksUri === undefined ? await discoverJwksUri(oauth) : new URL(oauth.jwksUri);
    return createRemoteJWKSet(uri, {
      timeoutDuration: oauth.timeout,
      cooldownDuration: oauth.jwksCooldown,
      cacheMaxAge: oauth.jwksMaxAge,
      [jwksCache]: fetched,
    });
  };
  return async (header, token) => {
    if (Date.now() - failedAt < RETRY_AFTER_MS) {
      return lastFetched(
        header,
        token,
        new AuthorizationServerUnavailable('it could not be reached a moment ago'),
      );
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
      return lastFetched(
        header,
        token,
        error instanceof AuthorizationServerUnavailable
          ? error
          : new AuthorizationServerUnavailable(`its keys could not be fetched: ${causeOf(error)}`),
      );
    }
  };
}

/**
 * The key set last fetched, for while the authorization server cannot be reached (its cache may be past
 * `jwksMaxAge`, or a token's `kid` unknown): a token of one of its keys is judged by it, so callers the
 * server has already given keys for go on; any other fails with `unavailable`, as no verdict can be had.
 */
function lastFetchedKeys(
  fetched: JWKSCacheInput,
): (
  ...args: [...Parameters<JWTVerifyGetKey>, AuthorizationServerUnavailable]
) => ReturnType<JWTVerifyGetKey> {
  let local: { uat: number; keys: JWTVerifyGetKey } | undefined;
  return async (header, token, unavailable) => {
    if (fetched.uat === undefined) throw unavailable;
    if (local?.uat !== fetched.uat) local = { uat: fetched.uat, keys: createLocalJWKSet(fetched.jwks) };
    try {
      return await local.keys(header, token);
    } catch (error) {
      throw error instanceof errors.JWKSNoMatchingKey ? unavailable : error;
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

/**
 * The authorization server's signing keys: its JWKS, found through its metadata (RFC 8414, else OpenID
 * Connect discovery) unless configured, fetched by jose's remote key set (cached for `jwksMaxAge`, fetched
 * again on an unknown `kid` no sooner than `jwksCooldown` after the last fetch). While the server cannot be
 * reached, it is asked again at most once per RETRY_AFTER_MS, whatever the request rate.
 */
import { createRemoteJWKSet, errors, type JWTVerifyGetKey } from 'jose';
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

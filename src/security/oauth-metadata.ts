/**
 * The authorization server as taskgate reaches it: its metadata (RFC 8414, else OpenID Connect discovery),
 * and the one error every request to it fails with when it cannot answer.
 */
import type { OAuthConfig } from '../config/schema.js';

/** After a failure to reach the authorization server, it is asked again no sooner than this. */
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

/** The issuer's metadata document, from the first of its URLs that has one. */
export async function authorizationServerMetadata(oauth: OAuthConfig): Promise<Record<string, unknown>> {
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
    return metadata;
  }
  throw new AuthorizationServerUnavailable(`no metadata: ${problems.join('; ')}`);
}

/** An error's message with its cause's (fetch puts the reason there). */
export function causeOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
  return `${error.message}${cause}`;
}

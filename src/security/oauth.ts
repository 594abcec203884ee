/**
 * taskgate as an OAuth 2.1 resource server on the HTTP front (MCP basic/authorization, 2025-11-25 and
 * 2026-07-28): callers are known by the validated access token's issuer and subject, so a refreshed token
 * is the same caller; refusals are 401 or 403 with the `WWW-Authenticate` challenges of the spec's
 * examples, naming the Protected Resource Metadata (RFC 9728) served here.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { OAuthConfig } from '../config/schema.js';
import type { Grant, TokenValidator, TokenVerdict } from './oauth-tokens.js';

const WELL_KNOWN = '/.well-known/oauth-protected-resource';

/**
 * Where the metadata is served: RFC 9728 section 3.1's form, the well-known path inserted before the
 * resource's own path (the one named in challenges), and the root form the MCP spec lets clients fall back to.
 */
export function metadataPaths(resource: string): { suffixed: string; root: string } {
  const path = new URL(resource).pathname.replace(/\/$/, '');
  return { suffixed: `${WELL_KNOWN}${path}`, root: WELL_KNOWN };
}

export function metadataUrl(resource: string): string {
  return `${new URL(resource).origin}${metadataPaths(resource).suffixed}`;
}

/** The Protected Resource Metadata document (RFC 9728 section 2). */
export function protectedResourceMetadata(oauth: OAuthConfig): Record<string, unknown> {
  return {
    resource: oauth.resource,
    authorization_servers: [oauth.issuer],
    ...(oauth.scopes.length > 0 ? { scopes_supported: oauth.scopes } : {}),
    bearer_methods_supported: ['header'],
    ...(oauth.resourceName === undefined ? {} : { resource_name: oauth.resourceName }),
  };
}

/** A quoted-string of RFC 9110 that cannot be broken out of. */
const quoted = (text: string): string => `"${text.replace(/["\\]/g, "'")}"`;

/**
 * The challenge of a refusal: 401 without a token names only the metadata and the scopes (RFC 6750
 * section 3: no error code when no credential was sent), 401 with a bad token says `invalid_token`, 403
 * `insufficient_scope`, each with the scopes needed and the metadata's URL.
 */
export function challenge(
  oauth: OAuthConfig,
  verdict: Exclude<TokenVerdict, { ok: true }>,
): string | undefined {
  if (verdict.status === 503) return undefined;
  const parts: string[] = [];
  if (verdict.error !== undefined) {
    parts.push(`error=${quoted(verdict.error)}`, `error_description=${quoted(verdict.description)}`);
  }
  if (oauth.scopes.length > 0) parts.push(`scope=${quoted(oauth.scopes.join(' '))}`);
  parts.push(`resource_metadata=${quoted(metadataUrl(oauth.resource))}`);
  return `Bearer ${parts.join(', ')}`;
}

function bearerOf(req: IncomingMessage): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
  return match?.[1];
}

/**
 * A malformed authorization request (RFC 6750 section 3.1 `invalid_request`, HTTP 400; MCP basic/authorization
 * "Error Handling"): a Bearer header that is not one token, or a token in the URI, where MCP forbids it.
 */
function malformedRequest(req: IncomingMessage, token: string | undefined): string | undefined {
  const header = req.headers.authorization;
  if (token === undefined && header !== undefined && /^Bearer\b/i.test(header)) {
    return 'the Authorization header must be "Bearer" and one token';
  }
  const query = (req.url ?? '').split('?')[1];
  if (query !== undefined && new URLSearchParams(query).has('access_token')) {
    return 'an access token goes in the Authorization header, never in the URI';
  }
  return undefined;
}

/** An Authentication (auth.ts) of this mode. */
export type OAuthAuthentication =
  | { identity: string; subject: string; grant: Grant; token: string }
  | { refused: string; status: 400 | 401 | 403 | 503; challenge?: string };

/** Who is calling, by the access token; a refusal carries its status and challenge. */
export function oauthAuthenticator(
  oauth: OAuthConfig,
  validator?: Pick<TokenValidator, 'check'>,
): (req: IncomingMessage) => Promise<OAuthAuthentication> {
  // Loaded only for a front that validates tokens: jose is a fair part of a start's time.
  const validating =
    validator === undefined
      ? import('./oauth-tokens.js').then(({ TokenValidator }) => new TokenValidator(oauth))
      : Promise.resolve(validator);
  return async (req) => {
    const token = bearerOf(req);
    const malformed = malformedRequest(req, token);
    if (malformed !== undefined) {
      return {
        refused: malformed,
        status: 400,
        challenge: `Bearer error="invalid_request", error_description=${quoted(malformed)}, resource_metadata=${quoted(metadataUrl(oauth.resource))}`,
      };
    }
    const verdict = await (await validating).check(token);
    if (!verdict.ok) {
      const header = challenge(oauth, verdict);
      return {
        refused: verdict.description,
        status: verdict.status,
        ...(header === undefined ? {} : { challenge: header }),
      };
    }
    const { issuer, subject } = verdict.grant;
    return {
      // An issuer has no fragment (RFC 8414 section 2), so `#` cannot occur in it: the pair is unambiguous.
      identity: `oauth:${issuer}#${subject}`,
      subject,
      grant: verdict.grant,
      // What a token exchange starts from (or, with bearerPassthrough, what goes upstream): held in memory only.
      token: token!,
    };
  };
}

/** Serves the metadata at both its paths; false for any other path. */
export function protectedResourceRoutes(
  oauth: OAuthConfig,
): (req: IncomingMessage, res: ServerResponse, path: string) => boolean {
  const { suffixed, root } = metadataPaths(oauth.resource);
  const body = JSON.stringify(protectedResourceMetadata(oauth));
  return (req, res, path) => {
    if (path !== suffixed && path !== root) return false;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return true;
    }
    res.writeHead(200, {
      'content-type': 'application/json',
      'cache-control': 'max-age=300',
      // Public metadata: browser-based clients read it across origins.
      'access-control-allow-origin': '*',
    });
    res.end(req.method === 'HEAD' ? undefined : body);
    return true;
  };
}

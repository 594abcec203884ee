/**
 * Whether a token was issued for taskgate (RFC 8707; MCP basic/authorization "Token Audience Binding and
 * Validation"): its audience, one URI or a list, names taskgate's resource.
 */

/** Why a token whose audience is not taskgate is refused. */
export const NOT_FOR_THIS_RESOURCE = 'the token was not issued for this resource';

/**
 * True when `aud` (a JWT's or an introspection answer's) names `resource`. "Canonical Server URI" asks
 * implementations to accept upper case in the scheme and host, so those compare in any case; the rest of
 * the URI (port, path, query) must be exactly the resource's.
 */
export function namesResource(aud: unknown, resource: string): boolean {
  const wanted = lowerOrigin(resource);
  const audiences: unknown[] = Array.isArray(aud) ? aud : [aud];
  return audiences.some((one) => typeof one === 'string' && lowerOrigin(one) === wanted);
}

/** The URI with its scheme and authority in lower case (case-insensitive, RFC 3986 section 6.2.2.1). */
function lowerOrigin(uri: string): string {
  return uri.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i, (origin) => origin.toLowerCase());
}

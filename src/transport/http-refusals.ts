/**
 * The HTTP front's authorization refusals: a caller it does not admit (before any MCP processing), and an
 * HTTP upstream's 401 to the credential that stands for the caller (upstream-refusal.ts), answered as a
 * 401 of taskgate's own so that the client's OAuth flow runs and it tries again with a new token.
 */
import type { ServerResponse } from 'node:http';
import { ErrorCode } from '../protocol/errors.js';
import type { Authentication } from '../security/auth.js';
import { reply } from './http-io.js';

/**
 * The WWW-Authenticate of taskgate's 401 for an upstream's (`upstream`: its own challenge): taskgate's
 * own when it is the resource server (the client has no business with the upstream's authorization server).
 */
export type UpstreamChallenge = (upstream: string | undefined) => string;

/** The auth path's refusal: 401 with WWW-Authenticate unless the authenticator says otherwise (oauth). */
export function refuseCaller(
  res: ServerResponse,
  refusal: Extract<Authentication, { refused: string }>,
): void {
  const status = refusal.status ?? 401;
  if (status !== 503) {
    res.setHeader(
      'www-authenticate',
      refusal.challenge ??
        `Bearer realm="taskgate", error="invalid_token", error_description="${refusal.refused}"`,
    );
  } else res.setHeader('retry-after', '1');
  const words = {
    400: 'Bad Request',
    401: 'Unauthorized',
    403: 'Forbidden',
    503: 'Service Unavailable',
  } as const;
  reply(res, status, null, {
    code: status === 503 ? ErrorCode.UpstreamUnavailable : ErrorCode.InvalidRequest,
    message: `${words[status]}: ${refusal.refused}`,
  });
}

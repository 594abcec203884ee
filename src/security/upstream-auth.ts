/**
 * Which credential each upstream connection of the HTTP front sends (upstream-credentials.ts), by the
 * config: a token of taskgate's own for every connection (`upstream.auth.clientCredentials`), one exchanged
 * for each caller's (`upstream.auth.tokenExchange`), the caller's own where the operator asked for it
 * (`auth.oauth.bearerPassthrough`, `auth.bearerPassthrough`), or none beyond `upstream.headers`.
 */
import type { Config } from '../config/schema.js';
import type { Authentication, Authenticator } from './auth.js';
import { CallerTokens } from './caller-tokens.js';
import {
  TokenEndpoint,
  TokenExchange,
  clientCredentials,
  fixedCredential,
  passedThrough,
  type UpstreamCredential,
} from './upstream-credentials.js';

export interface UpstreamAuth {
  /** The authenticator, noting each caller's latest validated token as it goes. */
  watching(authenticate: Authenticator): Authenticator;
  /**
   * The credential of a connection opened for `identity` (a caller's; undefined for one shared by callers).
   * `ownAuthorization`: the caller's own, as auth.bearerPassthrough passes it on.
   */
  forCaller(identity: string | undefined, ownAuthorization?: string): UpstreamCredential | undefined;
  /** The upstream is sent each caller's credential: a request of no caller's would only be refused there. */
  readonly perCaller: boolean;
}

export function upstreamAuth(config: Config, now: () => number = Date.now): UpstreamAuth {
  const tokens = new CallerTokens(now);
  const credentials = config.upstream?.url === undefined ? undefined : config.upstream.auth;
  const resource = config.upstream?.url ?? '';
  const watching =
    (authenticate: Authenticator): Authenticator =>
    async (req) => {
      const caller = await authenticate(req);
      if (isValidated(caller)) tokens.note(caller.identity, caller.token, caller.grant.expiresAt);
      return caller;
    };
  if (credentials?.clientCredentials !== undefined) {
    const settings = credentials.clientCredentials;
    const shared = clientCredentials(
      new TokenEndpoint({ ...settings, resource: settings.resource ?? resource }, now),
      now,
    );
    return { watching: (authenticate) => authenticate, forCaller: () => shared, perCaller: false };
  }
  if (credentials?.tokenExchange !== undefined) {
    const settings = credentials.tokenExchange;
    const exchange = new TokenExchange(
      new TokenEndpoint({ ...settings, resource: settings.resource ?? resource }, now),
      tokens,
      now,
    );
    return {
      watching,
      forCaller: (identity) => (identity === undefined ? undefined : exchange.forCaller(identity)),
      perCaller: true,
    };
  }
  if (config.auth.oauth?.bearerPassthrough === true) {
    return {
      watching,
      forCaller: (identity) => (identity === undefined ? undefined : passedThrough(tokens, identity)),
      perCaller: true,
    };
  }
  return {
    watching: (authenticate) => authenticate,
    forCaller: (_identity, own) => (own === undefined ? undefined : fixedCredential(own, true)),
    perCaller: config.auth.bearerPassthrough !== undefined,
  };
}

function isValidated(caller: Authentication): caller is Extract<Authentication, { identity: string }> & {
  token: string;
  grant: { expiresAt: number };
} {
  return 'identity' in caller && caller.token !== undefined && caller.grant !== undefined;
}

/**
 * Which credential each upstream connection of the HTTP front sends (upstream-credentials.ts), by the
 * config: a token of taskgate's own for every connection (`upstream.auth.clientCredentials`), one exchanged
 * for each caller's (`upstream.auth.tokenExchange`), the caller's own where the operator asked for it
 * (`auth.oauth.bearerPassthrough`, `auth.bearerPassthrough`), or none beyond `upstream.headers`. Each server
 * of `upstreams` likewise, by its own `auth`.
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
  /** The same, for the connection to the server `name` of `upstreams` (its own `auth`, if it has one). */
  forServer(
    name: string,
    identity: string | undefined,
    ownAuthorization?: string,
  ): UpstreamCredential | undefined;
  /** The upstream is sent each caller's credential: a request of no caller's would only be refused there. */
  readonly perCaller: boolean;
}

/** What one upstream server is sent. */
interface ServerCredentials {
  forCaller: UpstreamAuth['forCaller'];
  perCaller: boolean;
  /** It needs each caller's latest validated token (token exchange, pass-through). */
  watches: boolean;
}

type ServerSettings = { url?: string | undefined; auth?: NonNullable<Config['upstream']>['auth'] };

export function upstreamAuth(config: Config, now: () => number = Date.now): UpstreamAuth {
  const tokens = new CallerTokens(now);
  const one = credentialsOf(config, config.upstream, tokens, now);
  const servers = new Map(
    Object.entries(config.upstreams ?? {}).map(([name, server]) => [
      name,
      credentialsOf(config, server, tokens, now),
    ]),
  );
  const watches = [one, ...servers.values()].some((server) => server.watches);
  return {
    watching: (authenticate) =>
      watches
        ? async (req) => {
            const caller = await authenticate(req);
            if (isValidated(caller)) tokens.note(caller.identity, caller.token, caller.grant.expiresAt);
            return caller;
          }
        : authenticate,
    forCaller: (identity, own) => one.forCaller(identity, own),
    forServer: (name, identity, own) => servers.get(name)?.forCaller(identity, own),
    perCaller: one.perCaller,
  };
}

function credentialsOf(
  config: Config,
  server: ServerSettings | undefined,
  tokens: CallerTokens,
  now: () => number,
): ServerCredentials {
  const credentials = server?.url === undefined ? undefined : server.auth;
  const resource = server?.url ?? '';
  if (credentials?.clientCredentials !== undefined) {
    const settings = credentials.clientCredentials;
    const shared = clientCredentials(
      new TokenEndpoint({ ...settings, resource: settings.resource ?? resource }, now),
      now,
    );
    return { forCaller: () => shared, perCaller: false, watches: false };
  }
  if (credentials?.tokenExchange !== undefined) {
    const settings = credentials.tokenExchange;
    const exchange = new TokenExchange(
      new TokenEndpoint({ ...settings, resource: settings.resource ?? resource }, now),
      tokens,
      now,
    );
    return {
      forCaller: (identity) => (identity === undefined ? undefined : exchange.forCaller(identity)),
      perCaller: true,
      watches: true,
    };
  }
  if (config.auth.oauth?.bearerPassthrough === true) {
    return {
      forCaller: (identity) => (identity === undefined ? undefined : passedThrough(tokens, identity)),
      perCaller: true,
      watches: true,
    };
  }
  return {
    forCaller: (_identity, own) => (own === undefined ? undefined : fixedCredential(own, true)),
    perCaller: config.auth.bearerPassthrough !== undefined,
    watches: false,
  };
}

function isValidated(caller: Authentication): caller is Extract<Authentication, { identity: string }> & {
  token: string;
  grant: { expiresAt: number };
} {
  return 'identity' in caller && caller.token !== undefined && caller.grant !== undefined;
}

/**
 * What an HTTP upstream is sent as its `Authorization` (`upstream.auth`; MCP basic/authorization: a server
 * MUST NOT pass the client's token through to an upstream, it is a client of its own there): a token of
 * taskgate's own by the OAuth client credentials grant, or one the caller's token is exchanged for (RFC
 * 8693) whose audience is the upstream, cached per caller. Each is cached until shortly before it expires.
 * The caller's own token goes on only where the operator said so (`bearerPassthrough`).
 */
import type { UpstreamTokenRequest } from '../config/schema.js';
import type { CallerTokens } from './caller-tokens.js';

/** The `Authorization` of the requests to one upstream connection. */
export interface UpstreamCredential {
  /** The value for the next request; rejects with UpstreamCredentialError when there is none to be had. */
  authorization(): Promise<string>;
  /** The upstream answered 401 to `authorization`: it is not sent again. */
  refused(authorization: string): void;
  /**
   * The credential stands for the caller (its own token, or one exchanged for it): a 401 of the upstream is
   * the caller's to mend with a new token, and reaches it as a 401 of taskgate's.
   */
  readonly forCaller: boolean;
}

/** No credential could be had for the upstream (its authorization server refused or could not be reached). */
export class UpstreamCredentialError extends Error {
  override readonly name = 'UpstreamCredentialError';
}

const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
/** A token response without `expires_in` (RFC 6749 section 5.1 makes it optional) is kept this long. */
const UNSTATED_LIFETIME_MS = 60_000;
const MAX_EXCHANGED = 10_000;

interface Issued {
  authorization: string;
  /** From then on the next request gets a new token (refreshBefore ahead of its expiry). */
  renewAt: number;
  expiresAt: number;
}

/** One token endpoint, asked with taskgate's own client credentials (client_secret_basic). */
export class TokenEndpoint {
  constructor(
    private readonly settings: UpstreamTokenRequest & { resource: string },
    private readonly now: () => number = Date.now,
  ) {}

  async issue(grant: Record<string, string>): Promise<Issued> {
    const { tokenEndpoint, clientId, clientSecret, scope, resource, audience, timeout } = this.settings;
    const body = new URLSearchParams({
      ...grant,
      resource,
      ...(audience === undefined ? {} : { audience }),
      ...(scope === undefined ? {} : { scope }),
    });
    const asked = this.now();
    let response: Response;
    try {
      response = await fetch(tokenEndpoint, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          accept: 'application/json',
          // RFC 6749 section 2.3.1: both parts form-encoded before they are joined.
          authorization: `Basic ${Buffer.from(`${formEncode(clientId)}:${formEncode(clientSecret)}`).toString('base64')}`,
        },
        body,
        signal: AbortSignal.timeout(timeout),
      });
    } catch (error) {
      const why = error instanceof Error && error.name === 'TimeoutError' ? 'timed out' : 'unreachable';
      throw new UpstreamCredentialError(`no token for the upstream server: its token endpoint is ${why}`);
    }
    const answer = (await response.json().catch(() => undefined)) as Record<string, unknown> | undefined;
    const token = answer?.['access_token'];
    if (response.status !== 200 || typeof token !== 'string') {
      const error = typeof answer?.['error'] === 'string' ? ` ${answer['error']}` : '';
      throw new UpstreamCredentialError(
        `no token for the upstream server: its token endpoint answered HTTP ${response.status}${error}`,
      );
    }
    const expiresIn = answer?.['expires_in'];
    const lifetime = typeof expiresIn === 'number' && expiresIn > 0 ? expiresIn * 1000 : UNSTATED_LIFETIME_MS;
    return {
      authorization: `Bearer ${token}`,
      renewAt: asked + lifetime - Math.min(this.settings.refreshBefore, lifetime / 2),
      expiresAt: asked + lifetime,
    };
  }
}

/** A token that is had once at a time: concurrent requests wait for the same fetch. */
class CachedToken {
  private issued: Issued | undefined;
  private fetching: Promise<Issued> | undefined;

  constructor(
    private readonly fetchToken: () => Promise<Issued>,
    private readonly now: () => number,
  ) {}

  async get(): Promise<string> {
    const issued = this.issued;
    if (issued !== undefined && this.now() < issued.renewAt) return issued.authorization;
    this.fetching ??= this.fetchToken().finally(() => (this.fetching = undefined));
    try {
      this.issued = await this.fetching;
    } catch (error) {
      // A renewal that fails leaves the old token in use while it lasts.
      if (issued !== undefined && this.issued === issued && this.now() < issued.expiresAt) {
        return issued.authorization;
      }
      throw error;
    }
    return this.issued.authorization;
  }

  drop(authorization: string): void {
    if (this.issued?.authorization === authorization) this.issued = undefined;
  }

  get expired(): boolean {
    return this.issued === undefined || this.now() >= this.issued.expiresAt;
  }
}

/** upstream.auth.clientCredentials: one token of taskgate's own, for every caller and connection. */
export function clientCredentials(endpoint: TokenEndpoint, now: () => number = Date.now): UpstreamCredential {
  const token = new CachedToken(() => endpoint.issue({ grant_type: 'client_credentials' }), now);
  return { authorization: () => token.get(), refused: (value) => token.drop(value), forCaller: false };
}

/**
 * upstream.auth.tokenExchange: for each caller (issuer and subject), a token exchanged for its latest
 * validated one, cached to its expiry, whoever of its sessions asks.
 */
export class TokenExchange {
  private readonly byCaller = new Map<string, CachedToken>();

  constructor(
    private readonly endpoint: TokenEndpoint,
    private readonly callers: CallerTokens,
    private readonly now: () => number = Date.now,
  ) {}

  forCaller(identity: string): UpstreamCredential {
    return {
      authorization: () => this.tokenOf(identity).get(),
      refused: (value) => this.byCaller.get(identity)?.drop(value),
      forCaller: true,
    };
  }

  private tokenOf(identity: string): CachedToken {
    let token = this.byCaller.get(identity);
    if (token === undefined) {
      if (this.byCaller.size >= MAX_EXCHANGED) this.forgetExpired();
      token = new CachedToken(() => this.exchange(identity), this.now);
      this.byCaller.set(identity, token);
    }
    return token;
  }

  private exchange(identity: string): Promise<Issued> {
    const subjectToken = this.callers.latest(identity);
    if (subjectToken === undefined) {
      return Promise.reject(
        new UpstreamCredentialError("no token for the upstream server: the caller's own token has expired"),
      );
    }
    return this.endpoint.issue({
      grant_type: TOKEN_EXCHANGE,
      subject_token: subjectToken,
      subject_token_type: ACCESS_TOKEN_TYPE,
      requested_token_type: ACCESS_TOKEN_TYPE,
    });
  }

  private forgetExpired(): void {
    for (const [identity, token] of this.byCaller) if (token.expired) this.byCaller.delete(identity);
    // Still full: the oldest goes (its caller's next request exchanges again).
    if (this.byCaller.size >= MAX_EXCHANGED) this.byCaller.delete(this.byCaller.keys().next().value!);
  }
}

/** The caller's own token, the latest it presented: only with `bearerPassthrough`. */
export function passedThrough(callers: CallerTokens, identity: string): UpstreamCredential {
  return {
    authorization: async () => {
      const token = callers.latest(identity);
      if (token === undefined) throw new UpstreamCredentialError("the caller's token has expired");
      return `Bearer ${token}`;
    },
    refused: () => undefined,
    forCaller: true,
  };
}

/** A credential that never changes (auth.bearerPassthrough: the token is the identity). */
export function fixedCredential(authorization: string, forCaller: boolean): UpstreamCredential {
  return { authorization: async () => authorization, refused: () => undefined, forCaller };
}

function formEncode(value: string): string {
  return encodeURIComponent(value).replace(/%20/g, '+');
}

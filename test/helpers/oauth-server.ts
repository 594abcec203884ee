/**
 * A real OAuth 2.1 authorization server for the tests: panva's oidc-provider, in this process, issuing JWT
 * access tokens (RFC 9068) for the resource a token request names (RFC 8707), by the client credentials
 * grant, each client's tokens carrying its `groups` claim (RFC 9068 section 2.2.3.1); or opaque ones
 * (`accessTokenFormat`), which taskgate (GATEWAY_CLIENT, the only client it answers) introspects (RFC
 * 7662) and a client can revoke (RFC 7009). Its keys can be rotated (a new signing key published, the old
 * one dropped at once, or kept beside it until `retire`), its introspection endpoint made to hold every request (`stallIntrospection`), and it can
 * be taken down and brought back on the same port. `sign` makes tokens no such server would issue (expired, not yet
 * valid), signed with its own key, for the checks a real server's tokens cannot reach.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { randomUUID } from 'node:crypto';
import {
  decodeProtectedHeader,
  exportJWK,
  generateKeyPair,
  jwtVerify,
  SignJWT,
  type CryptoKey,
  type JWK,
} from 'jose';
import Provider from 'oidc-provider';

export interface OAuthClient {
  readonly id: string;
  readonly secret: string;
  /** The `groups` claim of its access tokens. */
  readonly groups?: readonly string[];
}

export const CLIENT: OAuthClient = { id: 'svc-client', secret: 'svc-client-secret-0123456789' };
/** Clients standing for people, by the groups their tokens name: the token's `sub` is the client's id. */
export const STAFF_CLIENT: OAuthClient = {
  id: 'alice',
  secret: 'alice-secret-0123456789',
  groups: ['staff'],
};
export const OPERATOR_CLIENT: OAuthClient = {
  id: 'olga',
  secret: 'olga-secret-0123456789',
  groups: ['staff', 'operators'],
};
/**
 * taskgate itself as a client of the authorization server, for its upstreams: by client credentials, and
 * by token exchange (RFC 8693) of a caller's token for one whose audience is the upstream.
 */
export const GATEWAY_CLIENT: OAuthClient = { id: 'taskgate', secret: 'taskgate-secret-0123456789' };
const CLIENTS = [CLIENT, STAFF_CLIENT, OPERATOR_CLIENT, GATEWAY_CLIENT];

/**
 * A public client (no secret) of the authorization code grant with PKCE, as MCP clients are: a native
 * app whose redirect URI is on loopback (RFC 8252). Nothing listens there: the test reads the redirect.
 */
export const APP_CLIENT = { id: 'mcp-app', redirectUri: 'http://127.0.0.1:53682/callback' } as const;

export const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';

/** One token exchange the server granted. */
export interface Exchange {
  /** The exchanging client (taskgate). */
  client: string;
  /** The subject of the token exchanged. */
  subject: string;
  /** The audience of the token issued. */
  resource: string;
}

interface SigningKey {
  jwk: JWK;
  privateKey: CryptoKey;
  publicKey: CryptoKey;
}

async function signingKey(kid: string): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  return {
    jwk: { ...(await exportJWK(privateKey)), kid, alg: 'RS256', use: 'sig' },
    privateKey,
    publicKey,
  };
}

/** What oidc-provider hands a grant handler (it ships no types). */
interface GrantContext {
  oidc: { params: Record<string, string | undefined>; client: { clientId: string } };
  status: number;
  body: unknown;
}

export class AuthorizationServer {
  /** Requests for the key set, since it started. */
  jwksFetches = 0;
  /** Requests to the introspection endpoint, since it started. */
  introspections = 0;
  /** The format of the access tokens issued from now on: JWTs (RFC 9068), or opaque ones to introspect. */
  accessTokenFormat: 'jwt' | 'opaque' = 'jwt';
  /** While true, introspection requests are held unanswered (a slow server); false answers them. */
  private stalled: (() => void)[] | undefined;
  /** Access tokens issued by the client credentials grant, by client id. */
  readonly clientCredentialsGrants = new Map<string, number>();
  /** Token exchanges granted, in order. */
  readonly exchanges: Exchange[] = [];
  /** Lifetime of the access tokens issued from now on, in seconds. */
  accessTokenTTL = 300;
  /** Who logs in (and consents to what is asked) when the authorization endpoint asks for a person. */
  user = 'carol';
  private readonly sockets = new Set<Socket>();
  private key!: SigningKey;
  /** The keys of the key set, the signing one first; earlier ones only until `retire`. */
  private published: SigningKey[] = [];
  private generation = 0;

  private constructor(
    private readonly server: Server,
    readonly issuer: string,
    private readonly port: number,
    readonly scopes: readonly string[],
  ) {
    server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
  }

  static async start(scopes: readonly string[] = ['mcp:tools', 'mcp:admin']): Promise<AuthorizationServer> {
    const server = createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    const as = new AuthorizationServer(server, `http://127.0.0.1:${port}`, port, scopes);
    await as.rotate();
    return as;
  }

  /** The kid of the key tokens are signed with now. */
  get kid(): string {
    return this.key.jwk.kid!;
  }

  /**
   * A new signing key, published in place of the old one (which then verifies nothing), or with `keepOld`
   * beside it, as a real rotation does: the old key still verifies the tokens it signed until `retire`.
   */
  async rotate(options: { keepOld?: boolean } = {}): Promise<void> {
    this.key = await signingKey(`key-${++this.generation}`);
    this.published = [this.key, ...(options.keepOld === true ? this.published : [])];
    this.serve();
  }

  /** Drops every key but the signing one from the key set: tokens the others signed verify no more. */
  retire(): void {
    this.published = [this.key];
    this.serve();
  }

  /** Answers with a provider of the keys published now. */
  private serve(): void {
    const provider = this.provider();
    provider.on('grant.success', (ctx: GrantContext) => {
      if (ctx.oidc.params['grant_type'] !== 'client_credentials') return;
      const id = ctx.oidc.client.clientId;
      this.clientCredentialsGrants.set(id, (this.clientCredentialsGrants.get(id) ?? 0) + 1);
    });
    provider.registerGrantType(
      TOKEN_EXCHANGE,
      (ctx: GrantContext) => this.exchange(ctx),
      ['subject_token', 'subject_token_type', 'requested_token_type', 'resource', 'audience', 'scope'],
      ['resource', 'audience'],
    );
    this.server.removeAllListeners('request');
    const handle = provider.callback();
    this.server.on('request', (req, res) => {
      if (req.url === '/jwks') this.jwksFetches++;
      if (req.url === '/token/introspection') {
        this.introspections++;
        if (this.stalled !== undefined) {
          this.stalled.push(() => handle(req, res));
          return;
        }
      }
      if (req.url?.startsWith('/interaction/')) {
        this.interact(provider, req, res).catch((error: unknown) => res.writeHead(500).end(String(error)));
        return;
      }
      handle(req, res);
    });
  }

  /** An access token by the client credentials grant, for `resource` with `scope`, of `client`. */
  async token(resource: string, scope = this.scopes.join(' '), client = CLIENT): Promise<string> {
    const response = await fetch(`${this.issuer}/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${client.id}:${client.secret}`).toString('base64')}`,
      },
      body: new URLSearchParams({ grant_type: 'client_credentials', scope, resource }),
    });
    const body = (await response.json()) as { access_token?: string };
    if (response.status !== 200 || body.access_token === undefined) {
      throw new Error(`token request failed: ${response.status} ${JSON.stringify(body)}`);
    }
    return body.access_token;
  }

  /** Revokes a token (RFC 7009) as the client it was issued to. */
  async revoke(token: string, client = CLIENT): Promise<void> {
    const response = await fetch(`${this.issuer}/token/revocation`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${client.id}:${client.secret}`).toString('base64')}`,
      },
      body: new URLSearchParams({ token, token_type_hint: 'access_token' }),
    });
    if (response.status !== 200) throw new Error(`revocation failed: ${response.status}`);
  }

  /** Holds introspection requests unanswered (true) until called with false, which answers them. */
  stallIntrospection(stall: boolean): void {
    if (stall) {
      this.stalled ??= [];
      return;
    }
    const held = this.stalled ?? [];
    this.stalled = undefined;
    for (const answer of held) answer();
  }

  /** A JWT access token of these claims, signed with the server's current key (or the one given). */
  async sign(
    claims: Record<string, unknown>,
    options: { key?: SigningKey; expiresIn?: number; notBefore?: number } = {},
  ): Promise<string> {
    const key = options.key ?? this.key;
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ iss: this.issuer, sub: CLIENT.id, scope: this.scopes.join(' '), ...claims })
      .setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid: key.jwk.kid! })
      .setIssuedAt(now)
      .setExpirationTime(now + (options.expiresIn ?? 300))
      .setNotBefore(now + (options.notBefore ?? 0))
      .sign(key.privateKey);
  }

  /**
   * RFC 8693: a valid access token of this server (the subject token) for one whose audience is the
   * `resource` asked for, of the same subject, naming the exchanging client as its actor (`act`).
   */
  private async exchange(ctx: GrantContext): Promise<void> {
    const { params, client } = ctx.oidc;
    const refuse = (error: string, description: string): void => {
      ctx.status = 400;
      ctx.body = { error, error_description: description };
    };
    if (params['subject_token_type'] !== ACCESS_TOKEN_TYPE) {
      return refuse('invalid_request', 'subject_token_type must be an access token');
    }
    if (params['resource'] === undefined) return refuse('invalid_target', 'resource is required');
    let subject: string;
    try {
      const token = params['subject_token'] ?? '';
      const { kid } = decodeProtectedHeader(token);
      const key = this.published.find((published) => published.jwk.kid === kid) ?? this.key;
      const { payload } = await jwtVerify(token, key.publicKey, {
        issuer: this.issuer,
      });
      subject = payload.sub!;
    } catch {
      return refuse('invalid_grant', 'the subject token is not a valid access token of this server');
    }
    this.exchanges.push({ client: client.clientId, subject, resource: params['resource'] });
    const token = await this.sign(
      {
        sub: subject,
        aud: params['resource'],
        client_id: client.clientId,
        act: { sub: client.clientId },
        jti: randomUUID(),
        ...(params['scope'] === undefined ? {} : { scope: params['scope'] }),
      },
      { expiresIn: this.accessTokenTTL },
    );
    ctx.body = {
      access_token: token,
      issued_token_type: ACCESS_TOKEN_TYPE,
      token_type: 'Bearer',
      expires_in: this.accessTokenTTL,
    };
  }

  /**
   * The person at the authorization endpoint, without a page: `user` logs in, then consents to the scopes
   * and resources the client asked for (oidc-provider's own interaction example, done at once).
   */
  private async interact(provider: Provider, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const details = await provider.interactionDetails(req, res);
    if (details.prompt.name === 'login') {
      return provider.interactionFinished(
        req,
        res,
        { login: { accountId: this.user } },
        { mergeWithLastSubmission: false },
      );
    }
    const grant = new provider.Grant({
      accountId: details.session!.accountId,
      clientId: details.params['client_id'] as string,
    });
    const missing = details.prompt.details;
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
    for (const [resource, scopes] of Object.entries(missing.missingResourceScopes ?? {})) {
      grant.addResourceScope(resource, scopes.join(' '));
    }
    const grantId = await grant.save();
    return provider.interactionFinished(
      req,
      res,
      { consent: { grantId } },
      { mergeWithLastSubmission: true },
    );
  }

  /** A key this server has never published, as an attacker's would be. */
  static foreignKey(kid: string): Promise<SigningKey> {
    return signingKey(kid);
  }

  /** Stops answering: every connection dropped, the port closed. */
  async down(): Promise<void> {
    const closed = once(this.server, 'close');
    this.server.close();
    for (const socket of this.sockets) socket.destroy();
    await closed;
  }

  /** Answers again, on the same port. */
  async up(): Promise<void> {
    this.server.listen(this.port, '127.0.0.1');
    await once(this.server, 'listening');
  }

  async close(): Promise<void> {
    if (this.server.listening) await this.down();
  }

  private provider(): Provider {
    const scopes = this.scopes.join(' ');
    return new Provider(this.issuer, {
      // oidc-provider signs with the first key of the set: the newest.
      jwks: { keys: this.published.map((key) => key.jwk) },
      clients: [
        ...CLIENTS.map((client) => ({
          client_id: client.id,
          client_secret: client.secret,
          grant_types:
            client === GATEWAY_CLIENT ? ['client_credentials', TOKEN_EXCHANGE] : ['client_credentials'],
          redirect_uris: [],
          response_types: [],
        })),
        {
          client_id: APP_CLIENT.id,
          application_type: 'native',
          token_endpoint_auth_method: 'none',
          grant_types: ['authorization_code'],
          response_types: ['code'],
          redirect_uris: [APP_CLIENT.redirectUri],
        },
      ],
      findAccount: (_ctx, id) => ({ accountId: id, claims: () => ({ sub: id }) }),
      scopes: [...this.scopes],
      extraTokenClaims: (_ctx, token) => {
        const groups = CLIENTS.find((client) => client.id === token.clientId)?.groups;
        return groups === undefined ? undefined : { groups: [...groups] };
      },
      features: {
        devInteractions: { enabled: false },
        clientCredentials: { enabled: true },
        resourceIndicators: {
          enabled: true,
          useGrantedResource: () => true,
          getResourceServerInfo: (_ctx, resource) => ({
            scope: scopes,
            audience: resource,
            accessTokenTTL: this.accessTokenTTL,
            ...(this.accessTokenFormat === 'jwt'
              ? { accessTokenFormat: 'jwt', jwt: { sign: { alg: 'RS256' } } }
              : { accessTokenFormat: 'opaque' }),
          }),
        },
        introspection: {
          enabled: true,
          allowedPolicy: (_ctx: unknown, client: { clientId: string }) =>
            client.clientId === GATEWAY_CLIENT.id,
        },
        revocation: {
          enabled: true,
          allowedPolicy: (_ctx, client, token) => client.clientId === token.clientId,
        },
      },
    });
  }
}

/**
 * A real OAuth 2.1 authorization server for the tests: panva's oidc-provider, in this process, issuing JWT
 * access tokens (RFC 9068) for the resource a token request names (RFC 8707), by the client credentials
 * grant, each client's tokens carrying its `groups` claim (RFC 9068 section 2.2.3.1). Its keys can be rotated (a new signing key published, the old one dropped) and it can be taken
 * down and brought back on the same port. `sign` makes tokens no such server would issue (expired, not yet
 * valid), signed with its own key, for the checks a real server's tokens cannot reach.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
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
const CLIENTS = [CLIENT, STAFF_CLIENT, OPERATOR_CLIENT];

interface SigningKey {
  jwk: JWK;
  privateKey: CryptoKey;
}

async function signingKey(kid: string): Promise<SigningKey> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  return { jwk: { ...(await exportJWK(privateKey)), kid, alg: 'RS256', use: 'sig' }, privateKey };
}

export class AuthorizationServer {
  /** Requests for the key set, since it started. */
  jwksFetches = 0;
  private readonly sockets = new Set<Socket>();
  private key!: SigningKey;
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

  /** A new signing key, published in place of the old one (which then verifies nothing). */
  async rotate(): Promise<void> {
    this.key = await signingKey(`key-${++this.generation}`);
    const provider = this.provider();
    this.server.removeAllListeners('request');
    const handle = provider.callback();
    this.server.on('request', (req, res) => {
      if (req.url === '/jwks') this.jwksFetches++;
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
      jwks: { keys: [this.key.jwk] },
      clients: CLIENTS.map((client) => ({
        client_id: client.id,
        client_secret: client.secret,
        grant_types: ['client_credentials'],
        redirect_uris: [],
        response_types: [],
      })),
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
            accessTokenTTL: 300,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'RS256' } },
          }),
        },
      },
    });
  }
}

/**
 * The authorization code grant with PKCE, as MCP clients use it (basic/authorization "Authorization Flow"),
 * end to end with the SDK's own OAuth client (`auth()` of @modelcontextprotocol/sdk/client/auth.js, driven by
 * its Streamable HTTP transport) and a real authorization server (oidc-provider, in the test): taskgate's
 * 401 names its Protected Resource Metadata, which names the authorization server; its metadata gives the
 * endpoints and S256; the person logs in and consents (at once, without a page); the code is exchanged with
 * the verifier for a token whose audience is taskgate (RFC 8707); and the client calls through taskgate.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import { decodeJwt } from 'jose';
import { afterEach, describe, expect, it } from 'vitest';
import { httpTransport } from '../helpers/http-client.js';
import { APP_CLIENT, AuthorizationServer } from '../helpers/oauth-server.js';
import { freePort } from '../helpers/ports.js';
import { FIXTURES, Gateway } from '../helpers/taskgate.js';
import { thrownBy } from '../helpers/thrown.js';

let gateway: Gateway | undefined;
let as: AuthorizationServer | undefined;
const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
  await gateway?.stop();
  await as?.close();
  gateway = as = undefined;
});

/** A pre-registered public client (no secret), as the SDK's examples keep one: in memory. */
class AppProvider implements OAuthClientProvider {
  authorizationUrl: URL | undefined;
  saved: OAuthTokens | undefined;
  private verifier = '';

  get redirectUrl(): string {
    return APP_CLIENT.redirectUri;
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'taskgate test app',
      redirect_uris: [APP_CLIENT.redirectUri],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }

  clientInformation(): OAuthClientInformationMixed {
    return { client_id: APP_CLIENT.id };
  }

  tokens(): OAuthTokens | undefined {
    return this.saved;
  }

  saveTokens(tokens: OAuthTokens): void {
    this.saved = tokens;
  }

  redirectToAuthorization(url: URL): void {
    this.authorizationUrl = url;
  }

  saveCodeVerifier(verifier: string): void {
    this.verifier = verifier;
  }

  codeVerifier(): string {
    return this.verifier;
  }
}

/**
 * A user agent at the authorization server: follows its redirects with its cookies until one leads to
 * `until` (the client's redirect URI), which it returns instead of following.
 */
async function browse(start: URL, until: string): Promise<URL> {
  const jar = new Map<string, string>();
  let next = start;
  for (let hop = 0; hop < 12; hop++) {
    if (next.href.startsWith(until)) return next;
    const response = await fetch(next, {
      redirect: 'manual',
      headers: { cookie: [...jar].map(([name, value]) => `${name}=${value}`).join('; ') },
    });
    for (const cookie of response.headers.getSetCookie()) {
      const pair = cookie.split(';')[0]!;
      const at = pair.indexOf('=');
      const [name, value] = [pair.slice(0, at), pair.slice(at + 1)];
      if (value === '') jar.delete(name);
      else jar.set(name, value);
    }
    const location = response.headers.get('location');
    if (location === null) {
      throw new Error(
        `${next.href} answered ${response.status} without a redirect: ${await response.text()}`,
      );
    }
    next = new URL(location, next);
  }
  throw new Error('too many redirects');
}

describe('the authorization code grant with PKCE, from the SDK client', () => {
  it("discovers the authorization server from taskgate's 401, gets a code and a token for taskgate, and calls", async () => {
    as = await AuthorizationServer.start();
    const port = await freePort();
    const resource = `http://127.0.0.1:${port}/mcp`;
    const config = join(mkdtempSync(join(tmpdir(), 'taskgate-authcode-')), 'config.yaml');
    writeFileSync(
      config,
      `auth:\n  oauth:\n    issuer: ${as.issuer}\n    resource: ${resource}\n    scopes: [mcp:tools]\n`,
    );
    gateway = await Gateway.start(
      [process.execPath, FIXTURES.legacy],
      ['--config', config, '--listen', `127.0.0.1:${port}`],
    );
    const provider = new AppProvider();

    // No token: the transport meets taskgate's 401 and the SDK starts the authorization.
    const first = httpTransport(gateway.url, { authProvider: provider });
    const refused = await thrownBy(new Client({ name: 'app', version: '1' }).connect(first));
    expect(refused).toBeInstanceOf(UnauthorizedError);
    const asked = provider.authorizationUrl!;
    expect(`${asked.origin}${asked.pathname}`).toBe(`${as.issuer}/auth`);
    expect(Object.fromEntries(asked.searchParams)).toMatchObject({
      response_type: 'code',
      client_id: APP_CLIENT.id,
      redirect_uri: APP_CLIENT.redirectUri,
      code_challenge_method: 'S256',
      // From taskgate's challenge and its metadata: its scope and its canonical URI (RFC 8707).
      scope: 'mcp:tools',
      resource,
    });
    expect(asked.searchParams.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);

    // The person logs in and consents; the redirect back carries the code (and the issuer, RFC 9207).
    const callback = await browse(asked, APP_CLIENT.redirectUri);
    expect(callback.searchParams.get('iss')).toBe(as.issuer);
    await first.finishAuth(callback.searchParams.get('code')!);
    const claims = decodeJwt(provider.saved!.access_token);
    expect(claims).toMatchObject({ iss: as.issuer, sub: 'carol', aud: resource });

    // With the token, through taskgate.
    const client = new Client({ name: 'app', version: '1' });
    await client.connect(httpTransport(gateway.url, { authProvider: provider }));
    clients.push(client);
    expect((await client.callTool({ name: 'echo', arguments: { text: 'by code' } })).content).toEqual([
      { type: 'text', text: 'by code' },
    ]);
  });
});

/**
 * Access tokens judged against a real authorization server (oidc-provider, in this process): MCP
 * basic/authorization "Token Handling" (validate as OAuth 2.1 section 5.2; the audience is this server,
 * RFC 8707) and the key set's caching, rotation and bounded refetching.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { OAuthSchema, type OAuthConfig } from '../../src/config/schema.js';
import { TokenValidator } from '../../src/security/oauth-tokens.js';
import { metadataUrls, RETRY_AFTER_MS } from '../../src/security/oauth-metadata.js';
import { AuthorizationServer, CLIENT } from '../helpers/oauth-server.js';

const RESOURCE = 'http://127.0.0.1:8931/mcp';

let as: AuthorizationServer | undefined;
afterEach(async () => {
  await as?.close();
  as = undefined;
});

async function setUp(
  extra: Partial<OAuthConfig> = {},
): Promise<{ as: AuthorizationServer; validator: TokenValidator }> {
  as = await AuthorizationServer.start();
  const config = OAuthSchema.parse({
    issuer: as.issuer,
    resource: RESOURCE,
    scopes: ['mcp:tools'],
    ...extra,
  });
  return { as, validator: new TokenValidator(config) };
}

describe('TokenValidator', () => {
  it("accepts the issuer's token for this resource, and names its issuer, subject and scopes", async () => {
    const { as, validator } = await setUp();
    const verdict = await validator.check(await as.token(RESOURCE, 'mcp:tools mcp:admin'));
    expect(verdict).toEqual({
      ok: true,
      grant: {
        issuer: as.issuer,
        subject: CLIENT.id,
        scopes: ['mcp:tools', 'mcp:admin'],
        groups: [],
        expiresAt: expect.any(Number),
      },
    });
  });

  it('refuses a token the same server issued for another resource (RFC 8707 audience)', async () => {
    const { as, validator } = await setUp();
    const verdict = await validator.check(await as.token('http://127.0.0.1:8931/other'));
    expect(verdict).toEqual({
      ok: false,
      status: 401,
      error: 'invalid_token',
      description: 'the token was not issued for this resource',
    });
  });

  it('takes an audience naming the resource with its scheme and host in upper case, not a path in another case', async () => {
    const resource = 'https://mcp.example.com/mcp';
    const { as, validator } = await setUp({ resource });
    // A client may name the resource so (MCP "Canonical Server URI"), and the server copies it into aud.
    expect((await validator.check(await as.token('HTTPS://MCP.Example.COM/mcp'))).ok).toBe(true);
    expect((await validator.check(await as.sign({ aud: ['https://other.example', resource] }))).ok).toBe(
      true,
    );
    for (const aud of [
      'https://mcp.example.com/MCP',
      'https://mcp.example.com/mcp/',
      'https://mcp.example.com',
    ]) {
      expect(await validator.check(await as.sign({ aud }))).toMatchObject({
        status: 401,
        description: 'the token was not issued for this resource',
      });
    }
    expect(await validator.check(await as.sign({}))).toMatchObject({ status: 401 });
  });

  it('refuses an expired token and one not valid yet, beyond the clock skew, and allows within it', async () => {
    const { as, validator } = await setUp({ clockSkew: 30_000 });
    const expired = await validator.check(await as.sign({ aud: RESOURCE }, { expiresIn: -31 }));
    expect(expired).toMatchObject({ ok: false, status: 401, description: 'the token has expired' });
    const early = await validator.check(await as.sign({ aud: RESOURCE }, { notBefore: 60 }));
    expect(early).toMatchObject({ ok: false, status: 401, description: 'the token is not valid yet' });
    const withinSkew = await validator.check(
      await as.sign({ aud: RESOURCE }, { expiresIn: -10, notBefore: -20 }),
    );
    expect(withinSkew.ok).toBe(true);
  });

  it('refuses a token of another issuer, and one without a subject', async () => {
    const { as, validator } = await setUp();
    const other = await validator.check(await as.sign({ aud: RESOURCE, iss: 'http://127.0.0.1:1' }));
    expect(other).toMatchObject({
      status: 401,
      description: 'the token was not issued by the configured authorization server',
    });
    const anonymous = await validator.check(await as.sign({ aud: RESOURCE, sub: undefined }));
    expect(anonymous).toMatchObject({ status: 401, error: 'invalid_token' });
  });

  it('answers a token without a required scope 403 insufficient_scope, naming the scope', async () => {
    const { as, validator } = await setUp({ scopes: ['mcp:tools', 'mcp:admin'] });
    const verdict = await validator.check(await as.token(RESOURCE, 'mcp:tools'));
    expect(verdict).toEqual({
      ok: false,
      status: 403,
      error: 'insufficient_scope',
      description: 'the token lacks the scope mcp:admin',
    });
  });

  it('accounts for scope hierarchies: a broader scope implies the narrower ones impliedScopes names', async () => {
    const { as, validator } = await setUp({
      scopes: ['mcp:tools'],
      impliedScopes: { 'mcp:admin': ['mcp:operate'], 'mcp:operate': ['mcp:tools'] },
    });
    const verdict = await validator.check(await as.token(RESOURCE, 'mcp:admin'));
    expect(verdict).toMatchObject({ ok: true, grant: { scopes: ['mcp:admin', 'mcp:operate', 'mcp:tools'] } });
    const flat = new TokenValidator(
      OAuthSchema.parse({ issuer: as.issuer, resource: RESOURCE, scopes: ['mcp:tools'] }),
    );
    expect(await flat.check(await as.token(RESOURCE, 'mcp:admin'))).toMatchObject({ ok: false, status: 403 });
  });

  it('refuses a token signed by an unknown key, fetching the key set again at most once per cooldown', async () => {
    const { as, validator } = await setUp({ jwksCooldown: 60_000 });
    expect((await validator.check(await as.token(RESOURCE))).ok).toBe(true);
    expect(as.jwksFetches).toBe(1);
    const intruder = await AuthorizationServer.foreignKey('not-published');
    for (let attempt = 0; attempt < 20; attempt++) {
      const verdict = await validator.check(await as.sign({ aud: RESOURCE }, { key: intruder }));
      expect(verdict).toMatchObject({
        status: 401,
        description: 'the token is signed with a key the issuer does not list',
      });
    }
    expect(as.jwksFetches).toBe(1);
    // A forged signature under a published kid is refused too.
    const forged = await validator.check(
      await as.sign({ aud: RESOURCE }, { key: { ...intruder, jwk: { ...intruder.jwk, kid: as.kid } } }),
    );
    expect(forged).toMatchObject({ status: 401, description: "the token's signature does not verify" });
  });

  it('follows a key rotation: a token of the new key fetches the keys again once the cooldown is over', async () => {
    const cooldown = 200;
    const { as, validator } = await setUp({ jwksCooldown: cooldown });
    expect((await validator.check(await as.token(RESOURCE))).ok).toBe(true);
    await as.rotate();
    const rotated = await as.token(RESOURCE);
    await new Promise((resolve) => setTimeout(resolve, cooldown + 50));
    expect((await validator.check(rotated)).ok).toBe(true);
    expect(as.jwksFetches).toBe(2);
  });

  it('answers 503 while the authorization server is down, and recovers once it is back', async () => {
    const { as, validator } = await setUp();
    const token = await as.token(RESOURCE);
    await as.down();
    const verdict = await validator.check(token);
    expect(verdict).toMatchObject({ ok: false, status: 503 });
    expect(verdict.ok === false && verdict.description).toMatch(
      /^the authorization server could not be reached/,
    );
    expect(await validator.check(token)).toMatchObject({ ok: false, status: 503 });
    await as.up();
    await new Promise((resolve) => setTimeout(resolve, RETRY_AFTER_MS + 50));
    expect((await validator.check(token)).ok).toBe(true);
  });

  it('keeps judging tokens by the cached keys while the authorization server is down', async () => {
    const { as, validator } = await setUp();
    expect((await validator.check(await as.token(RESOURCE))).ok).toBe(true);
    const later = await as.token(RESOURCE);
    await as.down();
    expect((await validator.check(later)).ok).toBe(true);
  });

  it('judges by the keys last fetched while the server is down, past jwksMaxAge; an unknown key is 503', async () => {
    const { as, validator } = await setUp({ jwksMaxAge: 1, jwksCooldown: 0 });
    const token = await as.token(RESOURCE);
    expect((await validator.check(token)).ok).toBe(true);
    const intruder = await AuthorizationServer.foreignKey('not-published');
    const unknownKey = await as.sign({ aud: RESOURCE }, { key: intruder });
    await as.down();
    // The cached set is stale at once (1 ms): each check would fetch it, and cannot.
    for (let attempt = 0; attempt < 3; attempt++) {
      expect((await validator.check(token)).ok).toBe(true);
      expect(await validator.check(unknownKey)).toMatchObject({ ok: false, status: 503 });
    }
  });

  it('finds the key set by RFC 8414 metadata, with the path inserted for an issuer with a path', () => {
    expect(metadataUrls('https://as.example/').map(String)).toEqual([
      'https://as.example/.well-known/oauth-authorization-server',
      'https://as.example/.well-known/openid-configuration',
    ]);
    expect(metadataUrls('https://as.example/tenant1').map(String)).toEqual([
      'https://as.example/.well-known/oauth-authorization-server/tenant1',
      'https://as.example/.well-known/openid-configuration/tenant1',
      'https://as.example/tenant1/.well-known/openid-configuration',
    ]);
  });
});

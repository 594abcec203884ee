/**
 * Opaque tokens judged by RFC 7662 introspection at a real authorization server (oidc-provider, in this
 * process): the claims read as a JWT's, the cache (to `exp`, at most `cacheMaxAge`, `cacheMax` entries,
 * least recently used dropped) on an injected clock, and client authentication as configured.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { OAuthSchema } from '../../src/config/schema.js';
import { Introspector } from '../../src/security/oauth-introspection.js';
import { authorizationServerKeys } from '../../src/security/oauth-keys.js';
import { TokenValidator } from '../../src/security/oauth-tokens.js';
import { AuthorizationServer, GATEWAY_CLIENT, STAFF_CLIENT } from '../helpers/oauth-server.js';

const RESOURCE = 'http://127.0.0.1:8931/mcp';

let as: AuthorizationServer | undefined;
afterEach(async () => {
  await as?.close();
  as = undefined;
});

async function setUp(introspection: Record<string, unknown> = {}, clock = { now: Date.now() }) {
  as = await AuthorizationServer.start();
  as.accessTokenFormat = 'opaque';
  const oauth = OAuthSchema.parse({
    issuer: as.issuer,
    resource: RESOURCE,
    scopes: ['mcp:tools'],
    introspection: { clientId: GATEWAY_CLIENT.id, clientSecret: GATEWAY_CLIENT.secret, ...introspection },
  });
  const introspector = new Introspector(oauth, oauth.introspection!, () => clock.now);
  return { as, clock, validator: new TokenValidator(oauth, authorizationServerKeys(oauth), introspector) };
}

describe('TokenValidator with introspection', () => {
  it("names a client credentials token's client as its subject (no sub), with its groups and scopes", async () => {
    const { as, validator } = await setUp();
    const verdict = await validator.check(await as.token(RESOURCE, 'mcp:tools', STAFF_CLIENT));
    expect(verdict).toEqual({
      ok: true,
      grant: {
        issuer: as.issuer,
        subject: STAFF_CLIENT.id,
        scopes: ['mcp:tools'],
        groups: ['staff'],
        expiresAt: expect.any(Number),
      },
    });
  });

  it('keeps an answer until cacheMaxAge, never past exp, and the newest cacheMax answers only', async () => {
    const { as, clock, validator } = await setUp({ cacheMax: 2, cacheMaxAge: 60_000 });
    // A token that expires before cacheMaxAge is kept until its exp only.
    as.accessTokenTTL = 30;
    const short = await as.token(RESOURCE);
    // The server's clock gave its exp: the cache's starts no earlier than it issued the token (its start
    // can take seconds on a loaded machine, which left exp after the clock's 31 s below).
    clock.now = Date.now();
    await validator.check(short);
    await validator.check(short);
    expect(as.introspections).toBe(1);
    clock.now += 31_000;
    await validator.check(short);
    expect(as.introspections).toBe(2);

    clock.now = Date.now();
    as.accessTokenTTL = 120;
    const [a, b, c] = [await as.token(RESOURCE), await as.token(RESOURCE), await as.token(RESOURCE)];
    for (const token of [a, a, b, a]) expect((await validator.check(token)).ok).toBe(true);
    expect(as.introspections).toBe(4);
    await validator.check(c); // drops b, the least recently used
    await validator.check(a);
    expect(as.introspections).toBe(5);
    await validator.check(b);
    expect(as.introspections).toBe(6);
    await as.revoke(a);
    clock.now += 59_000;
    expect((await validator.check(a)).ok).toBe(true); // kept: a revocation is seen after cacheMaxAge at most
    clock.now += 2_000;
    expect(await validator.check(a)).toMatchObject({
      ok: false,
      status: 401,
      description: 'the token is not active',
    });
  });

  it('asks at the endpoint configured, and with tokens: all introspects JWTs too', async () => {
    const { as: first, validator } = await setUp({
      endpoint: 'http://127.0.0.1:1/unused',
      authMethod: 'client_secret_basic',
    });
    expect(await validator.check(await first.token(RESOURCE))).toMatchObject({ ok: false, status: 503 });
    expect(first.introspections).toBe(0);
    await first.close();
    const { as: second, validator: all } = await setUp({ tokens: 'all' });
    second.accessTokenFormat = 'jwt';
    // oidc-provider does not introspect JWTs (400 unsupported_token_type): a refusal, not an outage.
    expect(await all.check(await second.token(RESOURCE))).toMatchObject({
      ok: false,
      status: 401,
      description: expect.stringMatching(/^the authorization server refused to introspect the token/),
    });
    expect(second.introspections).toBe(1);
  });

  it('refuses a token introspected with a wrong client secret as an outage (503), not as a bad token', async () => {
    const { as, validator } = await setUp({ clientSecret: 'wrong-secret-0123456789' });
    expect(await validator.check(await as.token(RESOURCE))).toMatchObject({
      ok: false,
      status: 503,
      description: expect.stringMatching(/introspection at .*: HTTP 401/),
    });
  });
});

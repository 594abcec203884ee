/**
 * The tokens taskgate gets for an HTTP upstream (src/security/upstream-credentials.ts), from a real
 * authorization server (oidc-provider, in process) with an injected clock: cached until `refreshBefore`
 * ahead of their expiry, had once for concurrent requests, dropped when the upstream refuses them, kept
 * while a renewal cannot be had and they last; exchanged per caller (RFC 8693). And the config's rules.
 */
import { decodeJwt } from 'jose';
import { afterEach, describe, expect, it } from 'vitest';
import { EffectiveConfigSchema } from '../../src/config/schema.js';
import { CallerTokens } from '../../src/security/caller-tokens.js';
import {
  TokenEndpoint,
  TokenExchange,
  UpstreamCredentialError,
  clientCredentials,
} from '../../src/security/upstream-credentials.js';
import { thrownBy } from '../helpers/thrown.js';
import { AuthorizationServer, GATEWAY_CLIENT, STAFF_CLIENT } from '../helpers/oauth-server.js';

const UPSTREAM = 'http://127.0.0.1:1/mcp';

let as: AuthorizationServer | undefined;
afterEach(async () => {
  await as?.close();
  as = undefined;
});

async function endpoint(now: () => number, refreshBefore = 30_000) {
  as = await AuthorizationServer.start();
  as.accessTokenTTL = 100;
  const token = new TokenEndpoint(
    {
      tokenEndpoint: `${as.issuer}/token`,
      clientId: GATEWAY_CLIENT.id,
      clientSecret: GATEWAY_CLIENT.secret,
      resource: UPSTREAM,
      refreshBefore,
      timeout: 5_000,
    },
    now,
  );
  return { as, token };
}

const bearer = (authorization: string) => authorization.replace(/^Bearer /, '');

describe('client credentials', () => {
  it('keeps one token for the upstream until refreshBefore ahead of its expiry, then gets a new one', async () => {
    let now = 1_000_000;
    const { as, token } = await endpoint(() => now);
    const credential = clientCredentials(token, () => now);
    const first = await credential.authorization();
    expect(decodeJwt(bearer(first))).toMatchObject({ aud: UPSTREAM, client_id: GATEWAY_CLIENT.id });
    now += 69_000; // 100 s tokens, renewed 30 s ahead: still the first at 69 s
    expect(await credential.authorization()).toBe(first);
    now += 2_000;
    const second = await credential.authorization();
    expect(second).not.toBe(first);
    expect(as.clientCredentialsGrants.get(GATEWAY_CLIENT.id)).toBe(2);
  });

  it('asks once for requests that come together, and again once the upstream refused the token', async () => {
    const now = 1_000_000;
    const { as, token } = await endpoint(() => now);
    const credential = clientCredentials(token, () => now);
    const together = await Promise.all([1, 2, 3, 4, 5].map(() => credential.authorization()));
    expect(new Set(together).size).toBe(1);
    expect(as.clientCredentialsGrants.get(GATEWAY_CLIENT.id)).toBe(1);
    credential.refused('Bearer some-other-token');
    expect(await credential.authorization()).toBe(together[0]);
    credential.refused(together[0]!);
    expect(await credential.authorization()).not.toBe(together[0]);
    expect(as.clientCredentialsGrants.get(GATEWAY_CLIENT.id)).toBe(2);
  });

  it('uses the old token while a renewal cannot be had and it lasts; then says why there is none', async () => {
    let now = 1_000_000;
    const { as, token } = await endpoint(() => now);
    const credential = clientCredentials(token, () => now);
    const first = await credential.authorization();
    await as.down();
    now += 80_000;
    expect(await credential.authorization()).toBe(first);
    now += 30_000;
    const error = await thrownBy(credential.authorization());
    expect(error).toBeInstanceOf(UpstreamCredentialError);
    expect((error as Error).message).toBe(
      'no token for the upstream server: its token endpoint is unreachable',
    );
  });

  it('names the refusal of the token endpoint (a wrong secret)', async () => {
    as = await AuthorizationServer.start();
    const wrong = clientCredentials(
      new TokenEndpoint({
        tokenEndpoint: `${as.issuer}/token`,
        clientId: GATEWAY_CLIENT.id,
        clientSecret: 'not-the-secret',
        resource: UPSTREAM,
        refreshBefore: 0,
        timeout: 5_000,
      }),
    );
    expect(((await thrownBy(wrong.authorization())) as Error).message).toBe(
      'no token for the upstream server: its token endpoint answered HTTP 401 invalid_client',
    );
  });
});

describe('token exchange (RFC 8693)', () => {
  it("exchanges each caller's latest token for one of the same subject for the upstream, cached per caller", async () => {
    let now = Date.now();
    const { as, token } = await endpoint(() => now);
    const callers = new CallerTokens(() => now);
    const exchange = new TokenExchange(token, callers, () => now);
    const alice = 'oauth:issuer#alice';
    const own = await as.token('http://127.0.0.1:2/taskgate', 'mcp:tools', STAFF_CLIENT);
    callers.note(alice, own, now + 300_000);
    const first = await exchange.forCaller(alice).authorization();
    expect(decodeJwt(bearer(first))).toMatchObject({
      sub: 'alice',
      aud: UPSTREAM,
      act: { sub: GATEWAY_CLIENT.id },
    });
    // Another connection of the same caller: the same token.
    expect(await exchange.forCaller(alice).authorization()).toBe(first);
    expect(as.exchanges).toHaveLength(1);
    expect(exchange.forCaller(alice).forCaller).toBe(true);

    // Refused upstream: exchanged anew, from the caller's latest token.
    exchange.forCaller(alice).refused(first);
    const refreshed = await as.token('http://127.0.0.1:2/taskgate', 'mcp:tools', STAFF_CLIENT);
    callers.note(alice, refreshed, now + 300_000);
    expect(await exchange.forCaller(alice).authorization()).not.toBe(first);
    expect(as.exchanges).toHaveLength(2);

    // Once the caller's own token has expired, there is nothing to exchange.
    now += 400_000;
    const error = await thrownBy(exchange.forCaller('oauth:issuer#nobody').authorization());
    expect((error as Error).message).toBe(
      "no token for the upstream server: the caller's own token has expired",
    );
  });

  it('keeps the newest token of a caller, whatever order its requests were validated in', () => {
    const callers = new CallerTokens(() => 0);
    callers.note('c', 'newer', 2_000);
    callers.note('c', 'older', 1_000);
    expect(callers.latest('c')).toBe('newer');
  });
});

describe('the config of upstream.auth', () => {
  const base = {
    http: { listen: '127.0.0.1:0' },
    upstream: { url: 'http://127.0.0.1:9/mcp' },
  };
  const request = { tokenEndpoint: 'http://as.example/token', clientId: 'taskgate', clientSecret: 's' };
  const problems = (config: object) => {
    const parsed = EffectiveConfigSchema.safeParse(config);
    return parsed.success ? [] : parsed.error.issues.map((issue) => issue.message);
  };

  it('takes client credentials for an HTTP upstream, not for a stdio one nor beside an Authorization header', () => {
    expect(
      problems({ ...base, upstream: { ...base.upstream, auth: { clientCredentials: request } } }),
    ).toEqual([]);
    expect(problems({ ...base, upstream: { command: 'x', auth: { clientCredentials: request } } })).toEqual([
      'auth is for an HTTP upstream (url); a stdio server gets its credential in env',
    ]);
    expect(
      problems({
        ...base,
        upstream: { ...base.upstream, headers: { Authorization: 'x' }, auth: { clientCredentials: request } },
      }),
    ).toEqual(['auth sets the Authorization header: leave it out of headers']);
  });

  it('takes a token exchange only with auth.oauth, without pass-through, on connections of their own', () => {
    const exchange = { ...base.upstream, auth: { tokenExchange: request } };
    const oauth = { issuer: 'http://as.example', resource: 'http://127.0.0.1:8/mcp' };
    expect(problems({ ...base, upstream: exchange })).toEqual([
      "needs auth.oauth: the caller's validated access token is what is exchanged",
    ]);
    expect(problems({ ...base, upstream: exchange, auth: { oauth } })).toEqual([]);
    expect(
      problems({ ...base, upstream: exchange, auth: { oauth: { ...oauth, bearerPassthrough: true } } }),
    ).toEqual(["choose one: bearer pass-through (the caller's own token upstream) or upstream.auth"]);
    expect(problems({ ...base, upstream: { ...exchange, sharing: 'shared' }, auth: { oauth } })).toEqual([
      'needs upstream.sharing: session (a shared upstream serves several callers on one connection)',
    ]);
  });
});

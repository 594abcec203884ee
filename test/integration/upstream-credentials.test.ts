/**
 * Upstream credentials without passthrough (issue 31; MCP basic/authorization "Token Passthrough": a server
 * MUST NOT pass the client's token through to an upstream): an HTTP upstream that is a resource server of
 * its own (the fixture checks each request's JWT: signed by the authorization server, audience = the
 * upstream) gets a token of taskgate's own (client credentials) or one the caller's token is exchanged for
 * (RFC 8693), from a real authorization server (oidc-provider, in the test). And the upstream's 401 turning
 * into the client's own refresh: the SDK client, told 401 by taskgate, gets a new token and goes on.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  Client as ModernClient,
  ClientCredentialsProvider as ModernClientCredentials,
  StreamableHTTPClientTransport as ModernTransport,
} from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it } from 'vitest';
import { httpTransport } from '../helpers/http-client.js';
import { startHttpFixture, type HttpFixture } from '../helpers/http-fixture.js';
import { MODERN_VERSION } from '../helpers/modern-client.js';
import { modernRequest } from '../helpers/modern-raw.js';
import {
  AuthorizationServer,
  GATEWAY_CLIENT,
  OPERATOR_CLIENT,
  STAFF_CLIENT,
  type OAuthClient,
} from '../helpers/oauth-server.js';
import { freePort } from '../helpers/ports.js';
import { connect, Gateway } from '../helpers/taskgate.js';

let gateway: Gateway | undefined;
let upstream: HttpFixture | undefined;
let as: AuthorizationServer | undefined;
const clients: Client[] = [];
const modernClients: ModernClient[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
  await Promise.all(modernClients.splice(0).map((client) => client.close()));
  await gateway?.stop();
  await upstream?.stop();
  await as?.close();
  gateway = upstream = as = undefined;
});

interface Setup {
  as: AuthorizationServer;
  gateway: Gateway;
  upstream: HttpFixture;
  /** taskgate's own resource (the audience of the callers' tokens). */
  resource: string;
}

/** The authorization server, the upstream checking its tokens' audience, and taskgate in front of it. */
async function start(
  upstreamAuth: string[],
  front: string[] = [],
  /** The audience the upstream takes: its own unless set. */
  audience?: (resource: string) => string,
): Promise<Setup> {
  as = await AuthorizationServer.start();
  const upstreamPort = await freePort();
  const port = await freePort();
  const resource = `http://127.0.0.1:${port}/mcp`;
  upstream = await startHttpFixture('legacy', {
    port: upstreamPort,
    env: {
      FIXTURE_REQUIRE_JWT: `${as.issuer}/jwks`,
      FIXTURE_JWT_AUDIENCE: audience?.(resource) ?? `http://127.0.0.1:${upstreamPort}/mcp`,
    },
  });
  const config = join(mkdtempSync(join(tmpdir(), 'taskgate-upcred-')), 'config.yaml');
  writeFileSync(
    config,
    [
      'upstream:',
      `  url: ${upstream.url}`,
      ...(upstreamAuth.length === 0 ? [] : ['  auth:', ...upstreamAuth.map((line) => `    ${line}`)]),
      ...front,
    ]
      .join('\n')
      .replaceAll('ISSUER', as.issuer)
      .replaceAll('RESOURCE', resource),
  );
  gateway = await Gateway.start([], ['--config', config, '--listen', `127.0.0.1:${port}`]);
  return { as, gateway, upstream, resource };
}

const GATEWAY_SECRET = [`clientId: ${GATEWAY_CLIENT.id}`, `clientSecret: ${GATEWAY_CLIENT.secret}`];
const FRONT_OAUTH = ['auth:', '  oauth:', '    issuer: ISSUER', '    resource: RESOURCE'];

/** An SDK client whose requests carry `token` (a caller's access token for taskgate). */
async function clientWithToken(url: URL, token: () => string): Promise<Client> {
  const client = new Client({ name: 'upcred-test', version: '1' });
  await client.connect(
    httpTransport(url, {
      fetch: (input, init) => {
        const headers = new Headers(init?.headers);
        headers.set('authorization', `Bearer ${token()}`);
        return fetch(input, { ...init, headers, ...(init?.method === 'POST' ? { signal: null } : {}) });
      },
    }),
  );
  clients.push(client);
  return client;
}

const echo = async (client: Client, text: string) =>
  (await client.callTool({ name: 'echo', arguments: { text } })).content;

describe('upstream.auth.clientCredentials: a token of taskgate’s own for the upstream', () => {
  it('gets one token for the upstream’s audience and sends it on every connection until it is due', async () => {
    const { as, gateway, upstream } = await start([
      'clientCredentials:',
      '  tokenEndpoint: ISSUER/token',
      ...GATEWAY_SECRET.map((line) => `  ${line}`),
    ]);
    const first = new Client({ name: 'upcred-test', version: '1' });
    await first.connect(httpTransport(gateway.url));
    clients.push(first);
    const second = new Client({ name: 'upcred-test', version: '1' });
    await second.connect(httpTransport(gateway.url));
    clients.push(second);
    expect(await echo(first, 'one')).toEqual([{ type: 'text', text: 'one' }]);
    expect(await echo(second, 'two')).toEqual([{ type: 'text', text: 'two' }]);
    await upstream.logged(`token accepted sub=${GATEWAY_CLIENT.id} aud=${upstream.url}`);
    // Two sessions (each its own upstream session), the era probe and every request: one token.
    expect(as.clientCredentialsGrants.get(GATEWAY_CLIENT.id)).toBe(1);
    expect(upstream.stderr()).not.toContain('token refused');
  });
  it('gets a new token when the upstream refuses its own before it expires, and the request goes through', async () => {
    const { as, gateway, upstream } = await start([
      'clientCredentials:',
      '  tokenEndpoint: ISSUER/token',
      ...GATEWAY_SECRET.map((line) => `  ${line}`),
    ]);
    const client = new Client({ name: 'upcred-test', version: '1' });
    await client.connect(httpTransport(gateway.url));
    clients.push(client);
    expect(await echo(client, 'one')).toEqual([{ type: 'text', text: 'one' }]);
    await fetch(new URL('/revoke-tokens', upstream.url), { method: 'POST' });
    expect(await echo(client, 'two')).toEqual([{ type: 'text', text: 'two' }]);
    expect(as.clientCredentialsGrants.get(GATEWAY_CLIENT.id)).toBe(2);
    // A 2026-07-28 request, through its own connection upstream: the same.
    await fetch(new URL('/revoke-tokens', upstream.url), { method: 'POST' });
    const modern = await modernRequest(
      gateway.url,
      'tools/call',
      { name: 'echo', arguments: { text: 'three' } },
      {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientCapabilities': {},
        'io.modelcontextprotocol/clientInfo': { name: 'raw-2026', version: '1' },
      },
    );
    expect(modern.result).toMatchObject({ content: [{ type: 'text', text: 'three' }] });
    expect(as.clientCredentialsGrants.get(GATEWAY_CLIENT.id)).toBe(3);
    await gateway.logged(
      "the upstream server refused taskgate's token (HTTP 401): tools/call again with a new one",
    );
  });

  it('serves sessions that share one upstream connection, and a stdio front, with the same one token', async () => {
    const { as, gateway, upstream } = await start(
      ['clientCredentials:', '  tokenEndpoint: ISSUER/token', ...GATEWAY_SECRET.map((line) => `  ${line}`)],
      ['  sharing: shared'],
    );
    for (const text of ['one', 'two']) {
      const client = new Client({ name: 'upcred-test', version: '1' });
      await client.connect(httpTransport(gateway.url));
      clients.push(client);
      expect(await echo(client, text)).toEqual([{ type: 'text', text }]);
    }
    expect(as.clientCredentialsGrants.get(GATEWAY_CLIENT.id)).toBe(1);

    // taskgate on stdio, its upstream the same server: a token of its own too.
    const config = join(mkdtempSync(join(tmpdir(), 'taskgate-upcred-')), 'stdio.yaml');
    writeFileSync(
      config,
      [
        'upstream:',
        `  url: ${upstream.url}`,
        '  auth:',
        '    clientCredentials:',
        `      tokenEndpoint: ${as.issuer}/token`,
        ...GATEWAY_SECRET.map((line) => `      ${line}`),
      ].join('\n'),
    );
    const stdio = await connect('legacy', { upstream: [], flags: ['--config', config] });
    try {
      expect(await echo(stdio.client, 'stdio')).toEqual([{ type: 'text', text: 'stdio' }]);
    } finally {
      await stdio.close();
    }
    expect(as.clientCredentialsGrants.get(GATEWAY_CLIENT.id)).toBe(2);
    expect(upstream.stderr()).not.toContain('token refused');
  });
});

describe('upstream.auth.tokenExchange: the caller’s token exchanged for one whose audience is the upstream', () => {
  const setup = () =>
    start(
      ['tokenExchange:', '  tokenEndpoint: ISSUER/token', ...GATEWAY_SECRET.map((line) => `  ${line}`)],
      [...FRONT_OAUTH, 'logLevel: debug'],
    );
  const tokenOf = (s: Setup, client: OAuthClient) => s.as.token(s.resource, 'mcp:tools', client);

  it('sends each caller’s exchanged token, never its own, cached per subject across sessions and eras', async () => {
    const s = await setup();
    const aliceToken = await tokenOf(s, STAFF_CLIENT);
    const alice = await clientWithToken(s.gateway.url, () => aliceToken);
    const olgaToken = await tokenOf(s, OPERATOR_CLIENT);
    const olga = await clientWithToken(s.gateway.url, () => olgaToken);
    expect(await echo(alice, 'a')).toEqual([{ type: 'text', text: 'a' }]);
    expect(await echo(olga, 'o')).toEqual([{ type: 'text', text: 'o' }]);
    await s.upstream.logged(`token accepted sub=alice aud=${s.upstream.url} act=${GATEWAY_CLIENT.id}`);
    await s.upstream.logged(`token accepted sub=olga aud=${s.upstream.url} act=${GATEWAY_CLIENT.id}`);

    // Alice again: a second session, then a 2026-07-28 request (its own connection upstream).
    const again = await clientWithToken(s.gateway.url, () => aliceToken);
    expect(await echo(again, 'b')).toEqual([{ type: 'text', text: 'b' }]);
    const modern = await modernRequest(
      s.gateway.url,
      'tools/call',
      { name: 'echo', arguments: { text: 'c' } },
      {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientCapabilities': {},
        'io.modelcontextprotocol/clientInfo': { name: 'raw-2026', version: '1' },
      },
      { authorization: `Bearer ${aliceToken}` },
    );
    expect(modern.result).toMatchObject({ content: [{ type: 'text', text: 'c' }] });

    const bySubject = (subject: string) => s.as.exchanges.filter((e) => e.subject === subject);
    expect(bySubject('alice')).toEqual([
      { client: GATEWAY_CLIENT.id, subject: 'alice', resource: s.upstream.url },
    ]);
    expect(bySubject('olga')).toHaveLength(1);
    // The callers' own tokens (audience: taskgate) never reached the upstream.
    expect(s.upstream.stderr()).not.toContain('token refused');
    // Nor is any token in taskgate's log, at debug level (a JWT starts with a base64url `{"`).
    expect(s.gateway.stderr).not.toMatch(/eyJ[\w-]+\.eyJ/);
  });

  it("turns the upstream's 401 into the client's refresh: HTTP 401 naming taskgate's metadata, then a new token", async () => {
    const s = await setup();
    const statuses: { status: number; challenge: string | null }[] = [];
    const client = new Client({ name: 'upcred-test', version: '1' });
    await client.connect(
      httpTransport(s.gateway.url, {
        authProvider: new ClientCredentialsProvider({
          clientId: STAFF_CLIENT.id,
          clientSecret: STAFF_CLIENT.secret,
          expectedIssuer: s.as.issuer,
          scope: 'mcp:tools',
        }),
        fetch: async (input, init) => {
          const response = await fetch(input, init?.method === 'POST' ? { ...init, signal: null } : init);
          if (String(input) === s.gateway.url.href && init?.method === 'POST') {
            statuses.push({ status: response.status, challenge: response.headers.get('www-authenticate') });
          }
          return response;
        },
      }),
    );
    clients.push(client);
    const sessionId = (client.transport as StreamableHTTPClientTransport).sessionId;
    expect(await echo(client, 'before')).toEqual([{ type: 'text', text: 'before' }]);
    const tokensBefore = s.as.clientCredentialsGrants.get(STAFF_CLIENT.id);
    expect(s.as.exchanges).toHaveLength(1);

    // The upstream stops taking every token it has seen: the exchanged one is refused from now on.
    expect((await fetch(new URL('/revoke-tokens', s.upstream.url), { method: 'POST' })).status).toBe(200);
    statuses.length = 0;
    expect(await echo(client, 'after')).toEqual([{ type: 'text', text: 'after' }]);

    const metadata = `${new URL(s.resource).origin}/.well-known/oauth-protected-resource/mcp`;
    expect(statuses).toEqual([
      {
        status: 401,
        challenge: `Bearer error="invalid_token", error_description="the upstream server refused the token sent for this caller", resource_metadata="${metadata}"`,
      },
      { status: 200, challenge: null },
    ]);
    // The client got a new token for taskgate, which exchanged it anew; the session is the same.
    expect(s.as.clientCredentialsGrants.get(STAFF_CLIENT.id)).toBe(tokensBefore! + 1);
    expect(s.as.exchanges).toHaveLength(2);
    expect((client.transport as StreamableHTTPClientTransport).sessionId).toBe(sessionId);
    await s.upstream.logged('token refused: revoked');
  });

  it('turns it into the refresh of a 2026-07-28 client too: the SDK v2 client gets a new token and goes on', async () => {
    const s = await setup();
    const statuses: number[] = [];
    const client = new ModernClient(
      { name: 'upcred-v2', version: '1' },
      { versionNegotiation: { mode: { pin: MODERN_VERSION } } },
    );
    await client.connect(
      new ModernTransport(s.gateway.url, {
        authProvider: new ModernClientCredentials({
          clientId: STAFF_CLIENT.id,
          clientSecret: STAFF_CLIENT.secret,
          expectedIssuer: s.as.issuer,
          scope: 'mcp:tools',
        }),
        fetch: async (input, init) => {
          const response = await fetch(input, init);
          if (String(input) === s.gateway.url.href) statuses.push(response.status);
          return response;
        },
      }),
    );
    modernClients.push(client);
    expect((await client.callTool({ name: 'echo', arguments: { text: 'before' } })).content).toEqual([
      { type: 'text', text: 'before' },
    ]);
    const tokensBefore = s.as.clientCredentialsGrants.get(STAFF_CLIENT.id)!;
    await fetch(new URL('/revoke-tokens', s.upstream.url), { method: 'POST' });
    statuses.length = 0;
    expect((await client.callTool({ name: 'echo', arguments: { text: 'after' } })).content).toEqual([
      { type: 'text', text: 'after' },
    ]);
    expect(statuses).toEqual([401, 200]);
    expect(s.as.clientCredentialsGrants.get(STAFF_CLIENT.id)).toBe(tokensBefore + 1);
    expect(s.as.exchanges).toHaveLength(2);
  });

  it("answers a 2026-07-28 request HTTP 401 with taskgate's challenge when the upstream refuses its token", async () => {
    const s = await setup();
    const token = await tokenOf(s, STAFF_CLIENT);
    const meta = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': {},
      'io.modelcontextprotocol/clientInfo': { name: 'raw-2026', version: '1' },
    };
    const call = (text: string) =>
      fetch(s.gateway.url, {
        method: 'POST',
        headers: {
          accept: 'application/json, text/event-stream',
          'content-type': 'application/json',
          'mcp-protocol-version': '2026-07-28',
          'mcp-method': 'tools/call',
          'mcp-name': 'echo',
          authorization: `Bearer ${token}`,
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 7,
          method: 'tools/call',
          params: { name: 'echo', arguments: { text }, _meta: meta },
        }),
      });
    expect((await call('first')).status).toBe(200);
    await fetch(new URL('/revoke-tokens', s.upstream.url), { method: 'POST' });
    const refused = await call('second');
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toMatch(
      /^Bearer error="invalid_token", error_description="the upstream server refused the token sent for this caller", resource_metadata="http:\/\/127\.0\.0\.1:\d+\/\.well-known\/oauth-protected-resource\/mcp"$/,
    );
    expect(((await refused.json()) as { error: { code: number } }).error.code).toBe(-31004);
    // The refused token was dropped: the next request (the same caller token, still valid) is exchanged anew.
    expect((await call('third')).status).toBe(200);
    expect(s.as.exchanges).toHaveLength(2);
  });
});

describe('bearer pass-through, where the operator asks for it', () => {
  it("sends the caller's latest token with auth.oauth.bearerPassthrough, so a refresh reaches the upstream", async () => {
    const s = await start([], [...FRONT_OAUTH, '    bearerPassthrough: true'], (resource) => resource);
    let token = await s.as.token(s.resource, 'mcp:tools', STAFF_CLIENT);
    const client = await clientWithToken(s.gateway.url, () => token);
    expect(await echo(client, 'one')).toEqual([{ type: 'text', text: 'one' }]);
    await s.upstream.logged(`token accepted sub=alice aud=${s.resource} act=-`);
    const before = s.upstream.stderr().split('token accepted').length;
    token = await s.as.token(s.resource, 'mcp:tools', STAFF_CLIENT);
    expect(await echo(client, 'two')).toEqual([{ type: 'text', text: 'two' }]);
    // The refreshed token, not the one that opened the session, went on.
    expect(s.upstream.stderr().split('token accepted').length).toBe(before + 1);
    expect(s.upstream.stderr()).not.toContain('token refused');
  });

  it("answers the upstream's 401 to a passed-through token with a 401 carrying the upstream's challenge", async () => {
    upstream = await startHttpFixture('legacy', {
      env: { FIXTURE_REQUIRE_BEARER: 'the-upstream-token-0123456789' },
    });
    const config = join(mkdtempSync(join(tmpdir(), 'taskgate-upcred-')), 'config.yaml');
    writeFileSync(
      config,
      `auth:\n  bearerPassthrough: { secret: a-secret-of-at-least-16 }\nupstream:\n  url: ${upstream.url}\n`,
    );
    gateway = await Gateway.start([], ['--config', config]);
    const initialize = (token: string) =>
      fetch(gateway!.url, {
        method: 'POST',
        headers: {
          accept: 'application/json, text/event-stream',
          'content-type': 'application/json',
          authorization: `Bearer ${token}`,
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: {
            protocolVersion: '2025-11-25',
            capabilities: {},
            clientInfo: { name: 'raw', version: '1' },
          },
        }),
      });
    const refused = await initialize('not-the-upstream-token-0123');
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toBe('Bearer realm="fixture"');
    expect(refused.headers.get('mcp-session-id')).toBeNull();
    expect((await initialize('the-upstream-token-0123456789')).status).toBe(200);
  });
});

describe('the worked example', () => {
  it('config/oauth-upstream.yaml runs as written, its URLs those of the test', async () => {
    as = await AuthorizationServer.start();
    const upstreamPort = await freePort();
    upstream = await startHttpFixture('legacy', {
      port: upstreamPort,
      env: {
        FIXTURE_REQUIRE_JWT: `${as.issuer}/jwks`,
        FIXTURE_JWT_AUDIENCE: `http://127.0.0.1:${upstreamPort}/mcp`,
      },
    });
    const port = await freePort();
    const resource = `http://127.0.0.1:${port}/mcp`;
    const example = readFileSync(
      fileURLToPath(new URL('../../config/oauth-upstream.yaml', import.meta.url)),
      'utf8',
    );
    const config = join(mkdtempSync(join(tmpdir(), 'taskgate-upcred-')), 'oauth-upstream.yaml');
    writeFileSync(
      config,
      example
        .replaceAll('https://tools.internal.example.com/mcp', upstream.url)
        .replaceAll('https://auth.example.com', as.issuer)
        .replaceAll('https://mcp.example.com/mcp', resource)
        .replaceAll('127.0.0.1:8080', `127.0.0.1:${port}`),
    );
    gateway = await Gateway.start([], ['--config', config], {
      UPSTREAM_CLIENT_SECRET: GATEWAY_CLIENT.secret,
    });
    const token = await as.token(resource, 'mcp:tools', STAFF_CLIENT);
    const client = await clientWithToken(gateway.url, () => token);
    expect(await echo(client, 'example')).toEqual([{ type: 'text', text: 'example' }]);
    await upstream.logged(`token accepted sub=alice aud=${upstream.url} act=${GATEWAY_CLIENT.id}`);
  });
});

/**
 * Upstream credentials without passthrough (issue 31; MCP basic/authorization "Token Passthrough": a server
 * MUST NOT pass the client's token through to an upstream): an HTTP upstream that is a resource server of
 * its own (the fixture checks each request's JWT: signed by the authorization server, audience = the
 * upstream) gets a token of taskgate's own (client credentials) or one the caller's token is exchanged for
 * (RFC 8693), from a real authorization server (oidc-provider, in the test).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterEach, describe, expect, it } from 'vitest';
import { httpTransport } from '../helpers/http-client.js';
import { startHttpFixture, type HttpFixture } from '../helpers/http-fixture.js';
import { modernRequest } from '../helpers/modern-raw.js';
import {
  AuthorizationServer,
  GATEWAY_CLIENT,
  OPERATOR_CLIENT,
  STAFF_CLIENT,
  type OAuthClient,
} from '../helpers/oauth-server.js';
import { freePort } from '../helpers/ports.js';
import { Gateway } from '../helpers/taskgate.js';

let gateway: Gateway | undefined;
let upstream: HttpFixture | undefined;
let as: AuthorizationServer | undefined;
const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
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
async function start(upstreamAuth: string[], front: string[] = []): Promise<Setup> {
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
  const config = join(mkdtempSync(join(tmpdir(), 'taskgate-upcred-')), 'config.yaml');
  writeFileSync(
    config,
    ['upstream:', `  url: ${upstream.url}`, '  auth:', ...upstreamAuth.map((line) => `    ${line}`), ...front]
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
});

describe('upstream.auth.tokenExchange: the caller’s token exchanged for one whose audience is the upstream', () => {
  const setup = () =>
    start(
      ['tokenExchange:', '  tokenEndpoint: ISSUER/token', ...GATEWAY_SECRET.map((line) => `  ${line}`)],
      FRONT_OAUTH,
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
  });
});

/**
 * What a server of `upstreams` has of its own, through the built taskgate (issue 32). `auth`: each HTTP
 * server is sent a token got for it, as `upstream.auth` gets one for the one server, and a server without
 * `auth` none. The servers are resource servers of their own (the fixture checks each request's JWT: signed
 * by the authorization server, audience its own URL), the authorization server a real one (oidc-provider,
 * in the test); the HTTP front and stdio. `limits`: a caller at one server's limit is refused by it alone.
 * `auth.bearerPassthrough` and `auth.oauth.bearerPassthrough`: each caller's own token goes to the servers
 * its calls go to, a refreshed validated one with the next call. Its era: an SDK v2 server and a v2
 * tasks-extension server among an SDK 1.x task server, each spoken to as it answers the era probe.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema, CreateTaskResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { httpTransport } from '../helpers/http-client.js';
import { startHttpFixture, type HttpFixture } from '../helpers/http-fixture.js';
import {
  AuthorizationServer,
  GATEWAY_CLIENT,
  OPERATOR_CLIENT,
  STAFF_CLIENT,
} from '../helpers/oauth-server.js';
import { MODERN_VERSION } from '../helpers/modern-client.js';
import { modernRequest } from '../helpers/modern-raw.js';
import { freePort } from '../helpers/ports.js';
import { connect, FIXTURES, Gateway } from '../helpers/taskgate.js';
import { thrownBy } from '../helpers/thrown.js';
import { textOf } from '../helpers/tool-results.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A legacy HTTP server that takes only JWTs of `as` whose audience is its own URL; none given: any request. */
async function server(as?: AuthorizationServer): Promise<HttpFixture> {
  const port = await freePort();
  const started = await startHttpFixture('legacy', {
    port,
    env:
      as === undefined
        ? {}
        : { FIXTURE_REQUIRE_JWT: `${as.issuer}/jwks`, FIXTURE_JWT_AUDIENCE: `http://127.0.0.1:${port}/mcp` },
  });
  cleanups.push(() => started.stop());
  return started;
}

async function authorizationServer(): Promise<AuthorizationServer> {
  const as = await AuthorizationServer.start();
  cleanups.push(() => as.close());
  return as;
}

const grant = (as: AuthorizationServer) => ({
  tokenEndpoint: `${as.issuer}/token`,
  clientId: GATEWAY_CLIENT.id,
  clientSecret: GATEWAY_CLIENT.secret,
});

const configFile = (config: object): string => {
  const file = join(mkdtempSync(join(tmpdir(), 'taskgate-agg-auth-')), 'config.json');
  writeFileSync(file, JSON.stringify(config));
  return file;
};

/** A 2026-07-28 request's `_meta` without the tasks extension: a call is answered with its result. */
const PLAIN_META = {
  'io.modelcontextprotocol/protocolVersion': MODERN_VERSION,
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'agg-passthrough-test', version: '1' },
};

const echo = async (client: Client, name: string, text: string) =>
  textOf(await client.callTool({ name, arguments: { text } }));

describe('auth per server of upstreams (issue 32)', () => {
  it('HTTP front: a token of taskgate’s own for one server, the caller’s exchanged for another’s, none for a third', async () => {
    const as = await authorizationServer();
    const [own, exchanged, open] = await Promise.all([server(as), server(as), server()]);
    const port = await freePort();
    const resource = `http://127.0.0.1:${port}/mcp`;
    const config = configFile({
      upstreams: {
        own: { url: own.url, auth: { clientCredentials: grant(as) } },
        exchanged: { url: exchanged.url, auth: { tokenExchange: grant(as) } },
        open: { url: open.url },
      },
      auth: { oauth: { issuer: as.issuer, resource } },
    });
    const gateway = await Gateway.start([], ['--config', config, '--listen', `127.0.0.1:${port}`]);
    cleanups.push(() => gateway.stop());
    const token = await as.token(resource, 'mcp:tools', STAFF_CLIENT);
    const client = new Client({ name: 'agg-auth-test', version: '1' });
    await client.connect(
      httpTransport(gateway.url, {
        fetch: (input, init) => {
          const headers = new Headers(init?.headers);
          headers.set('authorization', `Bearer ${token}`);
          return fetch(input, { ...init, headers });
        },
      }),
    );
    cleanups.push(() => client.close());
    expect(await echo(client, 'own__echo', 'a')).toBe('a');
    expect(await echo(client, 'exchanged__echo', 'b')).toBe('b');
    expect(await echo(client, 'open__echo', 'c')).toBe('c');
    await own.logged(`token accepted sub=${GATEWAY_CLIENT.id} aud=${own.url}`);
    await exchanged.logged(`token accepted sub=alice aud=${exchanged.url} act=${GATEWAY_CLIENT.id}`);
    expect(as.clientCredentialsGrants.get(GATEWAY_CLIENT.id)).toBe(1);
    expect(as.exchanges).toEqual([{ client: GATEWAY_CLIENT.id, subject: 'alice', resource: exchanged.url }]);
    for (const secured of [own, exchanged]) expect(secured.stderr()).not.toContain('token refused');
  });

  it("HTTP front: a server's 401 to the exchanged token becomes the client's refresh, then the call goes through", async () => {
    const as = await authorizationServer();
    const exchanged = await server(as);
    const port = await freePort();
    const resource = `http://127.0.0.1:${port}/mcp`;
    const config = configFile({
      upstreams: { exchanged: { url: exchanged.url, auth: { tokenExchange: grant(as) } } },
      auth: { oauth: { issuer: as.issuer, resource } },
    });
    const gateway = await Gateway.start([], ['--config', config, '--listen', `127.0.0.1:${port}`]);
    cleanups.push(() => gateway.stop());
    const statuses: number[] = [];
    const client = new Client({ name: 'agg-auth-test', version: '1' });
    await client.connect(
      httpTransport(gateway.url, {
        authProvider: new ClientCredentialsProvider({
          clientId: STAFF_CLIENT.id,
          clientSecret: STAFF_CLIENT.secret,
          expectedIssuer: as.issuer,
          scope: 'mcp:tools',
        }),
        fetch: async (input, init) => {
          const response = await fetch(input, init?.method === 'POST' ? { ...init, signal: null } : init);
          if (String(input) === gateway.url.href && init?.method === 'POST') statuses.push(response.status);
          return response;
        },
      }),
    );
    cleanups.push(() => client.close());
    expect(await echo(client, 'exchanged__echo', 'before')).toBe('before');
    expect((await fetch(new URL('/revoke-tokens', exchanged.url), { method: 'POST' })).status).toBe(200);
    statuses.length = 0;
    expect(await echo(client, 'exchanged__echo', 'after')).toBe('after');
    expect(statuses).toEqual([401, 200]);
    expect(as.exchanges).toHaveLength(2);
  });

  it('stdio: a token of taskgate’s own for the server that has auth, the other one served as it is', async () => {
    const as = await authorizationServer();
    const [own, open] = await Promise.all([server(as), server()]);
    const config = configFile({
      upstreams: { own: { url: own.url, auth: { clientCredentials: grant(as) } }, open: { url: open.url } },
    });
    const { client } = await connect('legacy', { upstream: [], flags: ['--config', config] });
    cleanups.push(() => client.close());
    expect(await echo(client, 'own__echo', 'a')).toBe('a');
    expect(await echo(client, 'open__echo', 'b')).toBe('b');
    await own.logged(`token accepted sub=${GATEWAY_CLIENT.id} aud=${own.url}`);
    expect(as.clientCredentialsGrants.get(GATEWAY_CLIENT.id)).toBe(1);
  });
});

describe("the callers' own tokens passed through to the servers of upstreams (issue 32)", () => {
  /** Two servers taking JWTs of `as` for taskgate's own resource, the one audience a passed-through token has. */
  async function twoServers(as: AuthorizationServer, resource: string): Promise<HttpFixture[]> {
    return Promise.all(
      [0, 1].map(async () => {
        const started = await startHttpFixture('legacy', {
          env: { FIXTURE_REQUIRE_JWT: `${as.issuer}/jwks`, FIXTURE_JWT_AUDIENCE: resource },
        });
        cleanups.push(() => started.stop());
        return started;
      }),
    );
  }

  const accepted = (server: HttpFixture, subject: string): number =>
    server.stderr().split(`token accepted sub=${subject} `).length - 1;

  it.each([
    [
      'auth.oauth.bearerPassthrough',
      (issuer: string, resource: string) => ({ oauth: { issuer, resource, bearerPassthrough: true } }),
      true,
    ],
    ['auth.bearerPassthrough', () => ({ bearerPassthrough: { secret: 'a-secret-of-at-least-16' } }), false],
  ])(
    "%s: each caller's token reaches the servers it calls; a refreshed one (if validated) goes with the next call, to that server only",
    async (_mode, auth, refreshes) => {
      const as = await authorizationServer();
      const port = await freePort();
      const resource = `http://127.0.0.1:${port}/mcp`;
      const [x, y] = await twoServers(as, resource);
      const config = configFile({
        upstreams: { x: { url: x!.url }, y: { url: y!.url } },
        auth: auth(as.issuer, resource),
      });
      const gateway = await Gateway.start([], ['--config', config, '--listen', `127.0.0.1:${port}`]);
      cleanups.push(() => gateway.stop());
      const tokens = new Map<string, string>();
      const caller = async (client: typeof STAFF_CLIENT): Promise<Client> => {
        tokens.set(client.id, await as.token(resource, 'mcp:tools', client));
        const connected = new Client({ name: 'agg-passthrough-test', version: '1' });
        await connected.connect(
          httpTransport(gateway.url, {
            fetch: (input, init) => {
              const headers = new Headers(init?.headers);
              headers.set('authorization', `Bearer ${tokens.get(client.id)!}`);
              return fetch(input, { ...init, headers });
            },
          }),
        );
        cleanups.push(() => connected.close());
        return connected;
      };
      const alice = await caller(STAFF_CLIENT);
      expect(await echo(alice, 'x__echo', 'to x')).toBe('to x');
      expect(await echo(alice, 'y__echo', 'to y')).toBe('to y');
      await x!.logged(`token accepted sub=alice aud=${resource}`);
      await y!.logged(`token accepted sub=alice aud=${resource}`);
      const [atX, atY] = [accepted(x!, 'alice'), accepted(y!, 'alice')];
      if (refreshes) {
        tokens.set(STAFF_CLIENT.id, await as.token(resource, 'mcp:tools', STAFF_CLIENT));
        expect(await echo(alice, 'x__echo', 'refreshed')).toBe('refreshed');
        expect(accepted(x!, 'alice')).toBe(atX + 1);
        expect(accepted(y!, 'alice')).toBe(atY);
      }

      const olga = await caller(OPERATOR_CLIENT);
      expect(await echo(olga, 'y__echo', 'olga to y')).toBe('olga to y');
      await y!.logged(`token accepted sub=olga aud=${resource}`);
      for (const server of [x!, y!]) expect(server.stderr()).not.toContain('token refused');
    },
  );
  it.each([
    [
      'behind an aggregator',
      (x: HttpFixture, y: HttpFixture) => ({ upstreams: { x: { url: x.url }, y: { url: y.url } } }),
      'x__echo',
    ],
    ['in front of one server', (x: HttpFixture) => ({ upstream: { url: x.url } }), 'echo'],
  ])(
    "auth.bearerPassthrough: a 2026-07-28 caller's token reaches the server its call goes to, %s",
    async (_where, upstreams, tool) => {
      const as = await authorizationServer();
      const port = await freePort();
      const resource = `http://127.0.0.1:${port}/mcp`;
      const [x, y] = await twoServers(as, resource);
      const config = configFile({
        ...upstreams(x!, y!),
        auth: { bearerPassthrough: { secret: 'a-secret-of-at-least-16' } },
      });
      const gateway = await Gateway.start([], ['--config', config, '--listen', `127.0.0.1:${port}`]);
      cleanups.push(() => gateway.stop());
      const token = await as.token(resource, 'mcp:tools', STAFF_CLIENT);
      const answer = await modernRequest(
        gateway.url,
        'tools/call',
        { name: tool, arguments: { text: 'modern' } },
        PLAIN_META,
        { authorization: `Bearer ${token}` },
      );
      expect(answer.error).toBeUndefined();
      expect(answer.result).toMatchObject({ content: [{ text: 'modern' }] });
      await x!.logged(`token accepted sub=alice aud=${resource}`);
      expect(x!.stderr()).not.toContain('token refused');
    },
  );
});

describe('limits per server of upstreams (issue 32)', () => {
  it('stdio: a caller at one server’s maxLiveTasks is refused a task there, and not on the other server', async () => {
    const legacy = { command: process.execPath, args: [FIXTURES.legacy] };
    const config = configFile({
      upstreams: { tight: { ...legacy, limits: { maxLiveTasks: 1 } }, loose: legacy },
    });
    const { client } = await connect('legacy', { upstream: [], flags: ['--config', config] });
    cleanups.push(() => client.close());
    const sleep = (name: string) =>
      client.request(
        { method: 'tools/call', params: { name, arguments: { ms: 60_000 }, task: {} } },
        CreateTaskResultSchema,
      );
    await sleep('tight__sleep');
    const refused = await thrownBy(sleep('tight__sleep'));
    expect(refused).toBeInstanceOf(McpError);
    expect((refused as McpError).message).toMatch(/upstreams\.tight\.limits\.maxLiveTasks/);
    await sleep('loose__sleep');
    await sleep('loose__sleep');
  });
});

describe('2026-07-28 servers among the servers of upstreams (issue 32)', () => {
  it('stdio: an SDK v2 server, a v2 task server and a v1 task server: a call and a task on each, listed together', async () => {
    const node = (fixture: string) => ({ command: process.execPath, args: [fixture] });
    const config = configFile({
      upstreams: {
        sdk2: node(FIXTURES.modern),
        v2tasks: node(FIXTURES.v2Tasks),
        v1tasks: node(FIXTURES.native),
      },
    });
    const { client } = await connect('legacy', { upstream: [], flags: ['--config', config] });
    cleanups.push(() => client.close());
    for (const server of ['sdk2', 'v2tasks', 'v1tasks']) {
      expect(await echo(client, `${server}__echo`, server)).toBe(server);
    }
    const task = async (name: string, args: Record<string, unknown>) =>
      (
        await client.request(
          { method: 'tools/call', params: { name, arguments: args, task: {} } },
          CreateTaskResultSchema,
        )
      ).task.taskId;
    const ids = [
      await task('sdk2__sleep', { ms: 10 }),
      await task('v2tasks__slow', { ms: 10, text: 'v2' }),
      await task('v1tasks__sleep', { ms: 10 }),
    ];
    const listed = (await client.experimental.tasks.listTasks()).tasks.map((listedTask) => listedTask.taskId);
    expect(listed.sort()).toEqual([...ids].sort());
    const results = await Promise.all(
      ids.map(async (taskId) =>
        textOf(await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema)),
      ),
    );
    expect(results).toEqual(['slept 10 ms', 'v2', 'slept 10 ms']);
  });
});

/**
 * taskgate as an OAuth 2.1 resource server (MCP basic/authorization, 2025-11-25 and 2026-07-28): a real
 * authorization server (oidc-provider, in the test) issuing tokens for taskgate's resource, the SDK's own
 * OAuth client finding it from taskgate's 401 through the Protected Resource Metadata (RFC 9728), and the
 * SDK client through the built gateway.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  Client as ModernClient,
  ClientCredentialsProvider as ModernClientCredentials,
  ProtocolError as ModernError,
  StreamableHTTPClientTransport as ModernTransport,
} from '@modelcontextprotocol/client';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { decodeProtectedHeader } from 'jose';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { httpTransport } from '../helpers/http-client.js';
import { MODERN_VERSION } from '../helpers/modern-client.js';
import { modernRequest } from '../helpers/modern-raw.js';
import {
  AuthorizationServer,
  CLIENT,
  GATEWAY_CLIENT,
  OPERATOR_CLIENT,
  STAFF_CLIENT,
  type OAuthClient,
} from '../helpers/oauth-server.js';
import { freePort } from '../helpers/ports.js';
import { FIXTURES, Gateway, TASK_AWARE } from '../helpers/taskgate.js';
import { thrownBy } from '../helpers/thrown.js';

let gateway: Gateway | undefined;
let as: AuthorizationServer | undefined;
const clients: Client[] = [];
const modernClients: ModernClient[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
  await Promise.all(modernClients.splice(0).map((client) => client.close()));
  await gateway?.stop();
  await as?.close();
  gateway = undefined;
  as = undefined;
});

interface Setup {
  as: AuthorizationServer;
  gateway: Gateway;
  resource: string;
  metadata: string;
}

interface Options {
  scopes?: string[];
  extra?: string;
}

async function open(options: Options): Promise<Setup> {
  const as = await AuthorizationServer.start();
  const port = await freePort();
  const resource = `http://127.0.0.1:${port}/mcp`;
  const dir = mkdtempSync(join(tmpdir(), 'taskgate-oauth-'));
  const config = join(dir, 'config.yaml');
  writeFileSync(
    config,
    [
      'auth:',
      '  oauth:',
      `    issuer: ${as.issuer}`,
      `    resource: ${resource}`,
      `    scopes: [${(options.scopes ?? ['mcp:tools']).join(', ')}]`,
      options.extra ?? '',
    ].join('\n'),
  );
  try {
    const gateway = await Gateway.start(
      [process.execPath, FIXTURES.legacy],
      ['--config', config, '--listen', `127.0.0.1:${port}`, '--log-level', 'info'],
    );
    return {
      as,
      gateway,
      resource,
      metadata: `http://127.0.0.1:${port}/.well-known/oauth-protected-resource/mcp`,
    };
  } catch (error) {
    await as.close();
    throw error;
  }
}

/** A set-up of this test's own, for a test that changes the authorization server (keys, down). */
async function start(options: Options = {}): Promise<Setup> {
  const setup = await open(options);
  ({ as, gateway } = setup);
  return setup;
}

/**
 * A set-up shared by the tests of the same options that leave the authorization server as it is: starting
 * taskgate and the server is most of such a test's cost. Their clients still close after each test.
 */
const sharedSetups = new Map<string, Promise<Setup>>();
const shared = (options: Options = {}): Promise<Setup> => {
  const key = JSON.stringify({ scopes: ['mcp:tools'], ...options });
  let setup = sharedSetups.get(key);
  if (setup === undefined) sharedSetups.set(key, (setup = open(options)));
  return setup;
};
afterAll(async () => {
  const setups = await Promise.allSettled(sharedSetups.values());
  sharedSetups.clear();
  for (const setup of setups) {
    if (setup.status !== 'fulfilled') continue;
    await setup.value.gateway.stop();
    await setup.value.as.close();
  }
});

/**
 * Resolves once `gateway` has logged `text` once more than when this was called: a shared gateway's log
 * holds the earlier tests' lines too.
 */
function loggedFromNow(gateway: Gateway): (text: string) => Promise<void> {
  const before = gateway.stderr;
  return (text) => gateway.logged(text, undefined, before.split(text).length);
}

const post = (url: URL | string, headers: Record<string, string> = {}, body: unknown = INITIALIZE) =>
  fetch(url, {
    method: 'POST',
    headers: {
      accept: 'application/json, text/event-stream',
      'content-type': 'application/json',
      ...headers,
    },
    body: JSON.stringify(body),
  });

const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};

/** A client whose bearer token can be replaced between requests, as a client that refreshes it. */
async function clientWithToken(url: URL, token: { current: string }): Promise<Client> {
  const client = new Client({ name: 'oauth-test', version: '1' }, { capabilities: TASK_AWARE });
  await client.connect(
    httpTransport(url, {
      fetch: (input, init) => {
        const headers = new Headers(init?.headers);
        headers.set('authorization', `Bearer ${token.current}`);
        return fetch(input, { ...init, headers, ...(init?.method === 'POST' ? { signal: null } : {}) });
      },
    }),
  );
  clients.push(client);
  return client;
}

describe('Protected Resource Metadata and challenges', () => {
  it('serves the metadata at the path-suffixed and the root well-known URI, naming the issuer', async () => {
    const { as, gateway, resource, metadata } = await shared({ scopes: ['mcp:tools', 'mcp:admin'] });
    for (const url of [metadata, new URL('/.well-known/oauth-protected-resource', gateway.url).href]) {
      const response = await fetch(url);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('application/json');
      expect(await response.json()).toEqual({
        resource,
        authorization_servers: [as.issuer],
        scopes_supported: ['mcp:tools', 'mcp:admin'],
        bearer_methods_supported: ['header'],
      });
    }
  });

  it('answers a request without a token 401 with resource_metadata and scope, as the spec example', async () => {
    const { gateway, metadata } = await shared();
    const response = await post(gateway.url);
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe(
      `Bearer scope="mcp:tools", resource_metadata="${metadata}"`,
    );
    expect(((await response.json()) as { error: { message: string } }).error.message).toBe(
      'Unauthorized: a bearer token is required',
    );
  });

  it('answers a token for another resource, an expired one and one not valid yet 401 invalid_token', async () => {
    const { as, gateway, resource, metadata } = await shared();
    const cases = [
      [await as.token('http://127.0.0.1:1/other-server'), 'the token was not issued for this resource'],
      [await as.sign({ aud: resource }, { expiresIn: -120 }), 'the token has expired'],
      [await as.sign({ aud: resource }, { notBefore: 120 }), 'the token is not valid yet'],
      [
        await as.sign({ aud: resource }, { key: await AuthorizationServer.foreignKey('unknown') }),
        'the token is signed with a key the issuer does not list',
      ],
    ] as const;
    for (const [token, why] of cases) {
      const response = await post(gateway.url, { authorization: `Bearer ${token}` });
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe(
        `Bearer error="invalid_token", error_description="${why}", scope="mcp:tools", resource_metadata="${metadata}"`,
      );
    }
  });

  it('answers a 2026-07-28 request as a 2025 one: 401 without a token or with a foreign one', async () => {
    const { as, gateway, resource, metadata } = await shared();
    const discover = {
      jsonrpc: '2.0',
      id: 1,
      method: 'server/discover',
      params: {
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': {},
          'io.modelcontextprotocol/clientInfo': { name: 'raw-2026', version: '1' },
        },
      },
    };
    const modern = { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'server/discover' };
    const none = await post(gateway.url, modern, discover);
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe(
      `Bearer scope="mcp:tools", resource_metadata="${metadata}"`,
    );
    const foreign = await post(
      gateway.url,
      { ...modern, authorization: `Bearer ${await as.token('http://127.0.0.1:1/other-server')}` },
      discover,
    );
    expect(foreign.status).toBe(401);
    expect(foreign.headers.get('www-authenticate')).toContain('error="invalid_token"');
    const good = await post(
      gateway.url,
      { ...modern, authorization: `Bearer ${await as.token(resource)}` },
      discover,
    );
    expect(good.status).toBe(200);
  });

  it('answers a malformed authorization request 400 invalid_request: a bad Bearer header, a token in the URI', async () => {
    const { as, gateway, resource, metadata } = await shared();
    const token = await as.token(resource);
    const twoTokens = await post(gateway.url, { authorization: `Bearer ${token} ${token}` });
    expect(twoTokens.status).toBe(400);
    expect(twoTokens.headers.get('www-authenticate')).toBe(
      `Bearer error="invalid_request", error_description="the Authorization header must be 'Bearer' and one token", resource_metadata="${metadata}"`,
    );
    // Tokens go in the Authorization header only (bearer_methods_supported: header), never in the URI.
    const inQuery = new URL(gateway.url);
    inQuery.searchParams.set('access_token', token);
    const queried = await post(inQuery, { authorization: `Bearer ${token}` });
    expect(queried.status).toBe(400);
    expect(((await queried.json()) as { error: { message: string } }).error.message).toBe(
      'Bad Request: an access token goes in the Authorization header, never in the URI',
    );
    expect((await post(gateway.url, { authorization: `Bearer ${token}` })).status).toBe(200);
  });

  it('answers a token without the scope required 403 insufficient_scope, naming the scope', async () => {
    const { as, gateway, resource, metadata } = await shared({ scopes: ['mcp:tools', 'mcp:admin'] });
    const response = await post(gateway.url, {
      authorization: `Bearer ${await as.token(resource, 'mcp:tools')}`,
    });
    expect(response.status).toBe(403);
    expect(response.headers.get('www-authenticate')).toBe(
      `Bearer error="insufficient_scope", error_description="the token lacks the scope mcp:admin", scope="mcp:tools mcp:admin", resource_metadata="${metadata}"`,
    );
  });
});

describe('the SDK client with tokens of the authorization server', () => {
  it("finds the authorization server from taskgate's 401 and gets a token for taskgate by itself", async () => {
    const { as, gateway } = await shared();
    const client = new Client({ name: 'oauth-test', version: '1' });
    await client.connect(
      httpTransport(gateway.url, {
        authProvider: new ClientCredentialsProvider({
          clientId: CLIENT.id,
          clientSecret: CLIENT.secret,
          expectedIssuer: as.issuer,
          // The SDK's client credentials request carries the provider's own scope, not the challenge's.
          scope: 'mcp:tools',
        }),
      }),
    );
    clients.push(client);
    const result = await client.callTool({ name: 'echo', arguments: { text: 'through oauth' } });
    expect(result.content).toEqual([{ type: 'text', text: 'through oauth' }]);
  });

  it('keeps the session and its tasks across a token refresh: the caller is the issuer and subject', async () => {
    const { as, gateway, resource } = await shared();
    const token = { current: await as.token(resource) };
    const client = await clientWithToken(gateway.url, token);
    const sessionId = (client.transport as StreamableHTTPClientTransport).sessionId;
    const { task } = await client.request(
      { method: 'tools/call', params: { name: 'sleep', arguments: { ms: 200 }, task: {} } },
      CreateTaskResultSchema,
    );
    const refreshed = await as.token(resource);
    expect(refreshed).not.toBe(token.current);
    token.current = refreshed;
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.content).toEqual([{ type: 'text', text: 'slept 200 ms' }]);
    expect((client.transport as StreamableHTTPClientTransport).sessionId).toBe(sessionId);
    // A new session of the same caller, with yet another token, sees the task as its own.
    const again = await clientWithToken(gateway.url, { current: await as.token(resource) });
    expect((await again.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)).toEqual([task.taskId]);
  });

  it('refuses a token for another resource before any MCP processing, in an open session too', async () => {
    const { as, gateway, resource } = await shared();
    const token = { current: await as.token(resource) };
    const client = await clientWithToken(gateway.url, token);
    token.current = await as.token('http://127.0.0.1:1/other-server');
    await expect(client.listTools()).rejects.toThrow(/401|Unauthorized/);
  });
});

describe("the authorization server's key rotation", () => {
  it('accepts tokens of the old and the new key while both are published, and refuses the old key once retired', async () => {
    const { as, gateway, resource, metadata } = await start({
      extra: '    jwksCooldown: 0\n    jwksMaxAge: 500',
    });
    const status = async (token: string) =>
      (await post(gateway.url, { authorization: `Bearer ${token}` })).status;
    const oldToken = await as.token(resource);
    expect(await status(oldToken)).toBe(200);
    const fetchesBefore = as.jwksFetches;

    await as.rotate({ keepOld: true });
    const newToken = await as.token(resource);
    expect(decodeProtectedHeader(newToken).kid).not.toBe(decodeProtectedHeader(oldToken).kid);
    // The new key's kid is not in taskgate's cached set: one fetch finds it.
    expect(await status(newToken)).toBe(200);
    expect(await status(oldToken)).toBe(200);
    expect(as.jwksFetches).toBeGreaterThan(fetchesBefore);

    as.retire();
    // The old key stays trusted only until the cached set is older than jwksMaxAge.
    const deadline = Date.now() + 10_000;
    let refused: Response | undefined;
    while (refused === undefined && Date.now() < deadline) {
      const response = await post(gateway.url, { authorization: `Bearer ${oldToken}` });
      if (response.status === 401) refused = response;
      else await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(refused?.headers.get('www-authenticate')).toBe(
      `Bearer error="invalid_token", error_description="the token is signed with a key the issuer does not list", scope="mcp:tools", resource_metadata="${metadata}"`,
    );
    expect(await status(newToken)).toBe(200);
    expect(await status(await as.token(resource))).toBe(200);
  });
});

describe('an authorization server that is down', () => {
  it('gives a clear 503 to callers it cannot judge, and nothing else is affected', async () => {
    const { as, gateway, resource } = await start();
    const token = await as.token(resource);
    await as.down();
    const response = await post(gateway.url, { authorization: `Bearer ${token}` });
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('1');
    expect(((await response.json()) as { error: { message: string } }).error.message).toMatch(
      /^Service Unavailable: the authorization server could not be reached to check the token/,
    );
    expect((await fetch(new URL('/healthz', gateway.url))).status).toBe(200);
    expect((await post(gateway.url)).status).toBe(401);
    await as.up();
    const started = Date.now();
    let status = 503;
    while (status === 503 && Date.now() - started < 5_000) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      status = (await post(gateway.url, { authorization: `Bearer ${token}` })).status;
    }
    expect(status).toBe(200);
  });

  it('serves callers whose tokens its cached keys judge, in open sessions and new ones, while a new key gets 503', async () => {
    const { as, gateway, resource } = await start({ extra: '    jwksCooldown: 0' });
    const open = await clientWithToken(gateway.url, { current: await as.token(resource) });
    expect((await open.callTool({ name: 'echo', arguments: { text: 'before' } })).content).toEqual([
      { type: 'text', text: 'before' },
    ]);
    const cachedKeyToken = await as.token(resource, 'mcp:tools', STAFF_CLIENT);
    // Tokens of a key taskgate has not seen, and the server that could tell it of the key is down.
    await as.rotate();
    const newKeyToken = await as.token(resource);
    await as.down();
    const refused = await post(gateway.url, { authorization: `Bearer ${newKeyToken}` });
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect((await open.callTool({ name: 'echo', arguments: { text: 'during' } })).content).toEqual([
      { type: 'text', text: 'during' },
    ]);
    const staff = await clientWithToken(gateway.url, { current: cachedKeyToken });
    expect((await staff.callTool({ name: 'echo', arguments: { text: 'new session' } })).content).toEqual([
      { type: 'text', text: 'new session' },
    ]);
  });
});

describe('authorization rules (auth.rules) with the groups and scopes of real tokens', () => {
  const RULES = [
    '  rules:',
    "    - { subjects: ['*'], tools: { allow: ['*'], deny: [large] } }",
    '    - groups: [operators]',
    '      tools: { allow: [large] }',
    '      tasks: all',
    '      taskList: true',
    '      metrics: true',
    '      dashboard: true',
    "    - { scopes: ['mcp:admin'], dashboard: true }",
  ].join('\n');

  const tokenOf = (setup: Setup, client: OAuthClient, scope = 'mcp:tools') =>
    setup.as.token(setup.resource, scope, client);

  it('hides and refuses a tool to a caller without the right, lets an operator call it, and audits the refusal', async () => {
    const setup = await shared({ extra: RULES });
    const logged = loggedFromNow(setup.gateway);
    const alice = await clientWithToken(setup.gateway.url, { current: await tokenOf(setup, STAFF_CLIENT) });
    const olga = await clientWithToken(setup.gateway.url, { current: await tokenOf(setup, OPERATOR_CLIENT) });
    const listed = async (client: Client) => (await client.listTools()).tools.map((tool) => tool.name);
    expect(await listed(alice)).not.toContain('large');
    expect(await listed(alice)).toContain('echo');
    expect(await listed(olga)).toContain('large');

    const refused = (await thrownBy(alice.callTool({ name: 'large', arguments: { bytes: 3 } }))) as McpError;
    expect(refused).toBeInstanceOf(McpError);
    expect(refused.code).toBe(-32602);
    expect(refused.message).toBe('MCP error -32602: Unknown tool: large');
    expect((await olga.callTool({ name: 'large', arguments: { bytes: 3 } })).content).toEqual([
      { type: 'text', text: 'xxx' },
    ]);
    await logged('"event":"access.denied","right":"tool","tool":"large","subject":"alice"');

    // A 2026-07-28 client, stateless POSTs with the same tokens: the same outcomes.
    const bearer = async (client: OAuthClient) => ({
      authorization: `Bearer ${await tokenOf(setup, client)}`,
    });
    const modernMeta = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': {},
      'io.modelcontextprotocol/clientInfo': { name: 'raw-2026', version: '1' },
    };
    const modernList = await modernRequest(
      setup.gateway.url,
      'tools/list',
      {},
      modernMeta,
      await bearer(STAFF_CLIENT),
    );
    expect((modernList.result!.tools as { name: string }[]).map((tool) => tool.name)).not.toContain('large');
    const modernRefused = await modernRequest(
      setup.gateway.url,
      'tools/call',
      { name: 'large', arguments: { bytes: 3 } },
      modernMeta,
      await bearer(STAFF_CLIENT),
    );
    expect(modernRefused.error).toMatchObject({ code: -32602, message: 'Unknown tool: large' });
    const modernAllowed = await modernRequest(
      setup.gateway.url,
      'tools/call',
      { name: 'large', arguments: { bytes: 2 } },
      modernMeta,
      await bearer(OPERATOR_CLIENT),
    );
    expect(modernAllowed.result).toMatchObject({ content: [{ type: 'text', text: 'xx' }] });
  });

  it("hides and refuses it to a 2026-07-28 SDK v2 client too, whose own OAuth client finds the server from taskgate's 401", async () => {
    const setup = await shared({ extra: RULES });
    const logged = loggedFromNow(setup.gateway);
    const modernClientOf = async (client: OAuthClient) => {
      const modern = new ModernClient(
        { name: 'oauth-v2', version: '1' },
        { versionNegotiation: { mode: { pin: MODERN_VERSION } } },
      );
      await modern.connect(
        new ModernTransport(setup.gateway.url, {
          authProvider: new ModernClientCredentials({
            clientId: client.id,
            clientSecret: client.secret,
            expectedIssuer: setup.as.issuer,
            scope: 'mcp:tools',
          }),
        }),
      );
      modernClients.push(modern);
      return modern;
    };
    const alice = await modernClientOf(STAFF_CLIENT);
    const olga = await modernClientOf(OPERATOR_CLIENT);
    const listed = async (client: ModernClient) => (await client.listTools()).tools.map((tool) => tool.name);
    expect(await listed(alice)).toContain('echo');
    expect(await listed(alice)).not.toContain('large');
    expect(await listed(olga)).toContain('large');
    const refused = await thrownBy(alice.callTool({ name: 'large', arguments: { bytes: 3 } }));
    expect(refused).toBeInstanceOf(ModernError);
    expect(refused).toMatchObject({ code: -32602, message: expect.stringContaining('Unknown tool: large') });
    expect((await olga.callTool({ name: 'large', arguments: { bytes: 3 } })).content).toEqual([
      { type: 'text', text: 'xxx' },
    ]);
    await logged('"event":"access.denied","right":"tool","tool":"large","subject":"alice"');
  });

  it("lets an operator read another caller's task; others get the unknown-task answer, and no tasks/list", async () => {
    const setup = await shared({ extra: RULES });
    const logged = loggedFromNow(setup.gateway);
    const alice = await clientWithToken(setup.gateway.url, { current: await tokenOf(setup, STAFF_CLIENT) });
    const { task } = await alice.request(
      { method: 'tools/call', params: { name: 'sleep', arguments: { ms: 200 }, task: {} } },
      CreateTaskResultSchema,
    );
    const other = await clientWithToken(setup.gateway.url, { current: await tokenOf(setup, CLIENT) });
    const unknownId = '00000000-0000-4000-8000-000000000000';
    const unknown = (await thrownBy(other.experimental.tasks.getTask(unknownId))) as McpError;
    const hidden = (await thrownBy(other.experimental.tasks.getTask(task.taskId))) as McpError;
    expect(hidden.code).toBe(-32602);
    expect(hidden.message.replace(task.taskId, 'ID')).toBe(unknown.message.replace(unknownId, 'ID'));
    const listRefused = (await thrownBy(alice.experimental.tasks.listTasks())) as McpError;
    expect(listRefused.code).toBe(-32601);

    const olga = await clientWithToken(setup.gateway.url, { current: await tokenOf(setup, OPERATOR_CLIENT) });
    const result = await olga.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.content).toEqual([{ type: 'text', text: 'slept 200 ms' }]);
    expect((await olga.experimental.tasks.listTasks()).tasks).toEqual([]);
    await logged('"event":"task.others"');
    await logged('"event":"access.denied","right":"tasks/list"');
  });

  it('answers /metrics and /dashboard 403 to a caller without the right, each by its own right', async () => {
    const setup = await shared({ extra: RULES, scopes: ['mcp:tools'] });
    const logged = loggedFromNow(setup.gateway);
    const page = async (path: string, token: string) =>
      (await fetch(new URL(path, setup.gateway.url), { headers: { authorization: `Bearer ${token}` } }))
        .status;
    const staff = await tokenOf(setup, STAFF_CLIENT);
    const operator = await tokenOf(setup, OPERATOR_CLIENT);
    const admin = await tokenOf(setup, CLIENT, 'mcp:tools mcp:admin');
    expect([await page('/metrics', staff), await page('/dashboard', staff)]).toEqual([403, 403]);
    expect([await page('/metrics', operator), await page('/dashboard', operator)]).toEqual([200, 200]);
    expect([await page('/metrics', admin), await page('/dashboard', admin)]).toEqual([403, 200]);
    await logged('"event":"access.denied","right":"metrics","subject":"alice"');
  });
});

describe('the worked example', () => {
  const EVERYTHING = fileURLToPath(
    new URL('../../node_modules/@modelcontextprotocol/server-everything/dist/index.js', import.meta.url),
  );

  it('config/oauth.yaml runs as written in front of server-everything, its rules doing what it says', async () => {
    as = await AuthorizationServer.start(['mcp:tools', 'mcp:admin', 'mcp:metrics']);
    const port = await freePort();
    const resource = `http://127.0.0.1:${port}/mcp`;
    const example = readFileSync(fileURLToPath(new URL('../../config/oauth.yaml', import.meta.url)), 'utf8');
    const upstream = "  command: npx\n  args: ['-y', '@modelcontextprotocol/server-everything']\n";
    expect(example).toContain(upstream);
    const config = join(mkdtempSync(join(tmpdir(), 'taskgate-oauth-')), 'oauth.yaml');
    writeFileSync(
      config,
      example
        // The server the example names, as installed here rather than fetched by npx.
        .replace(upstream, `  command: ${process.execPath}\n  args: [${JSON.stringify(EVERYTHING)}, stdio]\n`)
        .replaceAll('https://auth.example.com', as.issuer)
        .replaceAll('https://mcp.example.com/mcp', resource)
        .replaceAll('127.0.0.1:8080', `127.0.0.1:${port}`),
    );
    gateway = await Gateway.start([], ['--config', config], {
      INTROSPECTION_CLIENT_SECRET: GATEWAY_CLIENT.secret,
    });
    const tokenOf = (client: OAuthClient, scope = 'mcp:tools') => as!.token(resource, scope, client);
    const alice = await clientWithToken(gateway.url, { current: await tokenOf(STAFF_CLIENT) });
    const olga = await clientWithToken(gateway.url, { current: await tokenOf(OPERATOR_CLIENT) });
    const listed = async (client: Client) => (await client.listTools()).tools.map((tool) => tool.name);

    // Everyone: every tool but get-env, and tasks/list of their own tasks.
    expect(await listed(alice)).toContain('echo');
    expect(await listed(alice)).not.toContain('get-env');
    expect(((await thrownBy(alice.callTool({ name: 'get-env', arguments: {} }))) as McpError).code).toBe(
      -32602,
    );
    expect((await alice.experimental.tasks.listTasks()).tasks).toEqual([]);
    // Operators: get-env too.
    expect(await listed(olga)).toContain('get-env');
    expect((await olga.callTool({ name: 'get-env', arguments: {} })).isError).toBeFalsy();
    await gateway.logged('"event":"access.denied","right":"tool","tool":"get-env","subject":"alice"');

    // The pages: operators both; a token with mcp:metrics /metrics only; anyone else neither.
    const page = async (path: string, token: string) =>
      (await fetch(new URL(path, gateway!.url), { headers: { authorization: `Bearer ${token}` } })).status;
    const pages = async (token: string) => [await page('/metrics', token), await page('/dashboard', token)];
    expect(await pages(await tokenOf(OPERATOR_CLIENT))).toEqual([200, 200]);
    expect(await pages(await tokenOf(CLIENT, 'mcp:tools mcp:metrics'))).toEqual([200, 403]);
    expect(await pages(await tokenOf(STAFF_CLIENT))).toEqual([403, 403]);
    // impliedScopes: mcp:admin carries mcp:tools, which every request needs.
    expect(
      (await post(gateway.url, { authorization: `Bearer ${await tokenOf(CLIENT, 'mcp:admin')}` })).status,
    ).toBe(200);
    expect(
      (await post(gateway.url, { authorization: `Bearer ${await tokenOf(CLIENT, 'mcp:metrics')}` })).status,
    ).toBe(403);
  });
});

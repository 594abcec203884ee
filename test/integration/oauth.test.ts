/**
 * taskgate as an OAuth 2.1 resource server (MCP basic/authorization, 2025-11-25 and 2026-07-28): a real
 * authorization server (oidc-provider, in the test) issuing tokens for taskgate's resource, the SDK's own
 * OAuth client finding it from taskgate's 401 through the Protected Resource Metadata (RFC 9728), and the
 * SDK client through the built gateway.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { httpTransport } from '../helpers/http-client.js';
import { AuthorizationServer, CLIENT } from '../helpers/oauth-server.js';
import { freePort } from '../helpers/ports.js';
import { FIXTURES, Gateway, TASK_AWARE } from '../helpers/taskgate.js';

let gateway: Gateway | undefined;
let as: AuthorizationServer | undefined;
const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
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

async function start(options: { scopes?: string[]; extra?: string } = {}): Promise<Setup> {
  as = await AuthorizationServer.start();
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
  gateway = await Gateway.start(
    [process.execPath, FIXTURES.legacy],
    ['--config', config, '--listen', `127.0.0.1:${port}`, '--log-level', 'info'],
  );
  return {
    as,
    gateway,
    resource,
    metadata: `http://127.0.0.1:${port}/.well-known/oauth-protected-resource/mcp`,
  };
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
    const { as, gateway, resource, metadata } = await start({ scopes: ['mcp:tools', 'mcp:admin'] });
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
    const { gateway, metadata } = await start();
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
    const { as, gateway, resource, metadata } = await start();
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

  it('answers a token without the scope required 403 insufficient_scope, naming the scope', async () => {
    const { as, gateway, resource, metadata } = await start({ scopes: ['mcp:tools', 'mcp:admin'] });
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
    const { as, gateway } = await start();
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
    const { as, gateway, resource } = await start();
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
    const { as, gateway, resource } = await start();
    const token = { current: await as.token(resource) };
    const client = await clientWithToken(gateway.url, token);
    token.current = await as.token('http://127.0.0.1:1/other-server');
    await expect(client.listTools()).rejects.toThrow(/401|Unauthorized/);
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
});

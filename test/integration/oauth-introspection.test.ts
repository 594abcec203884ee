/**
 * Opaque access tokens through RFC 7662 introspection (issue 31): a real authorization server
 * (oidc-provider, in the test) issuing opaque tokens for taskgate's resource and answering taskgate's
 * introspection requests, and the SDK client with a bearer header through the built gateway.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { httpTransport } from '../helpers/http-client.js';
import { AuthorizationServer, GATEWAY_CLIENT, STAFF_CLIENT } from '../helpers/oauth-server.js';
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

async function start(options: { scopes?: string[]; introspection?: string } = {}) {
  as = await AuthorizationServer.start();
  as.accessTokenFormat = 'opaque';
  const port = await freePort();
  const resource = `http://127.0.0.1:${port}/mcp`;
  const config = join(mkdtempSync(join(tmpdir(), 'taskgate-introspection-')), 'config.yaml');
  writeFileSync(
    config,
    [
      'auth:',
      '  oauth:',
      `    issuer: ${as.issuer}`,
      `    resource: ${resource}`,
      `    scopes: [${(options.scopes ?? ['mcp:tools']).join(', ')}]`,
      '    timeout: 1000',
      '    introspection:',
      `      clientId: ${GATEWAY_CLIENT.id}`,
      `      clientSecret: ${GATEWAY_CLIENT.secret}`,
      options.introspection ?? '',
    ].join('\n'),
  );
  gateway = await Gateway.start(
    [process.execPath, FIXTURES.legacy],
    ['--config', config, '--listen', `127.0.0.1:${port}`],
  );
  return { as, gateway, resource };
}

/** A client whose bearer token can be replaced between requests, as a client that refreshes it. */
async function clientWithToken(url: URL, token: { current: string }): Promise<Client> {
  const client = new Client({ name: 'introspection-test', version: '1' }, { capabilities: TASK_AWARE });
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

const initialize = (url: URL, token: string) =>
  fetch(url, {
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
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    }),
  });

describe('opaque access tokens, introspected', () => {
  it('accepts one, introspecting it once for all its requests, and keeps session and tasks across a refresh', async () => {
    const { as, gateway, resource } = await start();
    const token = { current: await as.token(resource, 'mcp:tools', STAFF_CLIENT) };
    expect(token.current.split('.')).toHaveLength(1);
    const client = await clientWithToken(gateway.url, token);
    expect((await client.callTool({ name: 'echo', arguments: { text: 'opaque' } })).content).toEqual([
      { type: 'text', text: 'opaque' },
    ]);
    await client.listTools();
    expect(as.introspections).toBe(1);

    const sessionId = (client.transport as StreamableHTTPClientTransport).sessionId;
    const { task } = await client.request(
      { method: 'tools/call', params: { name: 'sleep', arguments: { ms: 200 }, task: {} } },
      CreateTaskResultSchema,
    );
    token.current = await as.token(resource, 'mcp:tools', STAFF_CLIENT);
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.content).toEqual([{ type: 'text', text: 'slept 200 ms' }]);
    expect((client.transport as StreamableHTTPClientTransport).sessionId).toBe(sessionId);
    expect(as.introspections).toBe(2);
    // Another session of the same caller (issuer and subject) sees the task as its own.
    const again = await clientWithToken(gateway.url, {
      current: await as.token(resource, 'mcp:tools', STAFF_CLIENT),
    });
    expect((await again.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)).toEqual([task.taskId]);
  });

  it('introspects a new token once for concurrent requests', async () => {
    const { as, gateway, resource } = await start();
    const token = await as.token(resource);
    const statuses = await Promise.all(Array.from({ length: 8 }, () => initialize(gateway.url, token)));
    expect(statuses.map((response) => response.status)).toEqual(Array(8).fill(200));
    expect(as.introspections).toBe(1);
  });

  it('refuses a revoked token 401 invalid_token (without a cache), as an invalid JWT', async () => {
    const { as, gateway, resource } = await start({ introspection: '      cacheMax: 0' });
    const token = { current: await as.token(resource) };
    const client = await clientWithToken(gateway.url, token);
    await client.listTools();
    await as.revoke(token.current);
    const refused = await initialize(gateway.url, token.current);
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toBe(
      `Bearer error="invalid_token", error_description="the token is not active", scope="mcp:tools", resource_metadata="http://${gateway.url.host}/.well-known/oauth-protected-resource/mcp"`,
    );
    await expect(client.listTools()).rejects.toThrow(/401|Unauthorized/);
  });

  it('refuses a token for another resource 401, and one without the scope 403 naming it', async () => {
    const { as, gateway, resource } = await start({ scopes: ['mcp:tools', 'mcp:admin'] });
    const foreign = await initialize(gateway.url, await as.token('http://127.0.0.1:1/other-server'));
    expect(foreign.status).toBe(401);
    expect(foreign.headers.get('www-authenticate')).toContain(
      'error="invalid_token", error_description="the token was not issued for this resource"',
    );
    const narrow = await initialize(gateway.url, await as.token(resource, 'mcp:tools'));
    expect(narrow.status).toBe(403);
    expect(narrow.headers.get('www-authenticate')).toContain(
      'error="insufficient_scope", error_description="the token lacks the scope mcp:admin", scope="mcp:tools mcp:admin"',
    );
  });

  it('gives a clear 503 while introspection is down or slow, keeps cached tokens working, and recovers', async () => {
    const { as, gateway, resource } = await start();
    const known = { current: await as.token(resource) };
    const client = await clientWithToken(gateway.url, known);
    const fresh = await as.token(resource);

    as.stallIntrospection(true);
    const started = Date.now();
    const slow = await initialize(gateway.url, fresh);
    expect(slow.status).toBe(503);
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(slow.headers.get('retry-after')).toBe('1');
    const body = (await slow.json()) as { jsonrpc: string; error: { code: number; message: string } };
    expect(body.jsonrpc).toBe('2.0');
    expect(body.error.message).toMatch(
      /^Service Unavailable: the authorization server could not be reached to check the token \(introspection at .*timeout/,
    );
    // The session whose token's answer is kept is not affected, nor the health check.
    await client.listTools();
    expect((await fetch(new URL('/healthz', gateway.url))).status).toBe(200);

    as.stallIntrospection(false);
    await as.down();
    expect((await initialize(gateway.url, fresh)).status).toBe(503);
    await as.up();
    const deadline = Date.now() + 5_000;
    let status = 503;
    while (status === 503 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      status = (await initialize(gateway.url, fresh)).status;
    }
    expect(status).toBe(200);
  });
});

/**
 * The HTTP gateway asks its HTTP upstream's era as it starts, before any client (issue 34: the first
 * session of a sidecar paid for the probe), in the test's own process: startHttpGateway in front of a
 * 2026-07-28 server written here on node:http, an SDK 1.x client on the front. A probe at start-up that
 * decides nothing (a 503) is not kept: the first session asks again. One still unanswered (a server still
 * starting) neither holds the first session, which asks too, nor makes the server 2025 for good.
 */
import { once } from 'node:events';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/config/load.js';
import type { RunningGateway } from '../../src/http-proxy.js';
import { memoryGateway } from '../helpers/memory-gateway.js';
import { textOf } from '../helpers/tool-results.js';

/** What the server does with a server/discover: answer it, answer 503, or hold it unanswered. */
type DiscoverAnswer = 'answer' | 'unavailable' | 'silent';

interface ModernServer {
  url: string;
  /** The methods of the requests it got, in order. */
  methods: string[];
  /** How many of the server/discover requests it holds unanswered are still open (not given up). */
  heldOpen(): number;
  /** Resolves once every request it held has been given up (its connection closed); fails after 5 s. */
  heldGivenUp(): Promise<void>;
  /** Resolves when it has got `count` requests of `method`; fails after 5 s. */
  seen(method: string, count?: number): Promise<void>;
  close(): Promise<void>;
}

async function modernServer(answers: DiscoverAnswer[]): Promise<ModernServer> {
  const methods: string[] = [];
  const held: ServerResponse[] = [];
  let heldClosed = 0;
  const answer = (res: ServerResponse, id: unknown, result: object): void => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ jsonrpc: '2.0', id, result: { resultType: 'complete', ...result } }));
  };
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      if (req.method !== 'POST') return void res.writeHead(405).end();
      const request = JSON.parse(body) as { id: unknown; method: string };
      methods.push(request.method);
      server.emit('request-seen');
      switch (request.method) {
        case 'server/discover': {
          const how = answers[methods.filter((method) => method === 'server/discover').length - 1];
          if (how === 'unavailable') return void res.writeHead(503).end();
          if (how === 'silent') {
            res.on('close', () => {
              heldClosed++;
              server.emit('held-closed');
            });
            return void held.push(res);
          }
          return answer(res, request.id, {
            supportedVersions: ['2026-07-28'],
            capabilities: { tools: {} },
            _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'modern-at-start-up', version: '1' } },
          });
        }
        case 'tools/list':
          return answer(res, request.id, { tools: [{ name: 'hello', inputSchema: { type: 'object' } }] });
        case 'tools/call':
          return answer(res, request.id, { content: [{ type: 'text', text: 'hello' }] });
        default:
          res.writeHead(404, { 'content-type': 'application/json' });
          return void res.end(
            JSON.stringify({ jsonrpc: '2.0', id: request.id, error: { code: -32601, message: 'not found' } }),
          );
      }
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const countOf = (wanted: string) => methods.filter((method) => method === wanted).length;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    methods,
    heldOpen: () => held.length - heldClosed,
    heldGivenUp: () =>
      new Promise<void>((resolve, reject) => {
        if (heldClosed === held.length) return resolve();
        const timer = setTimeout(() => reject(new Error('a held request still open after 5 s')), 5_000);
        server.on('held-closed', () => {
          if (heldClosed < held.length) return;
          clearTimeout(timer);
          resolve();
        });
      }),
    seen: (wanted, count = 1) =>
      new Promise<void>((resolve, reject) => {
        if (countOf(wanted) >= count) return resolve();
        const timer = setTimeout(() => {
          server.off('request-seen', seen);
          reject(new Error(`${countOf(wanted)} ${wanted} within 5 s, not ${count}: ${methods.join(', ')}`));
        }, 5_000);
        const seen = (): void => {
          if (countOf(wanted) < count) return;
          clearTimeout(timer);
          server.off('request-seen', seen);
          resolve();
        };
        server.on('request-seen', seen);
      }),
    close: async () => {
      for (const res of held) res.destroy();
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

const closing: (() => Promise<unknown>)[] = [];

afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

async function gatewayInFrontOf(url: string, requestTimeout?: number): Promise<RunningGateway> {
  const config = resolveConfig({
    http: { listen: '127.0.0.1:0' },
    upstream: { url, ...(requestTimeout === undefined ? {} : { requestTimeout }) },
  });
  const gateway = await memoryGateway(config);
  closing.push(() => gateway.close());
  return gateway;
}

async function clientOf(gateway: RunningGateway): Promise<Client> {
  const client = new Client({ name: 'first-client', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(gateway.url));
  closing.push(() => client.close());
  return client;
}

describe('the HTTP gateway asks its HTTP upstream its era at start-up', () => {
  it('before any client, so that the first session finds the verdict made and does not ask again', async () => {
    const server = await modernServer(['answer']);
    closing.push(() => server.close());
    const gateway = await gatewayInFrontOf(server.url);
    // The probe: server/discover, then an initialize for the 2025 face (this server has none).
    await server.seen('initialize');
    expect(server.methods).toEqual(['server/discover', 'initialize']);
    const client = await clientOf(gateway);
    expect(client.getServerVersion()).toMatchObject({ name: 'modern-at-start-up' });
    expect(textOf(await client.callTool({ name: 'hello', arguments: {} }))).toBe('hello');
    expect(server.methods.filter((method) => method === 'server/discover')).toHaveLength(1);
  });

  it('a probe answered 503 at start-up decides nothing: the first session asks again and meets the 2026 server', async () => {
    const server = await modernServer(['unavailable', 'answer']);
    closing.push(() => server.close());
    const gateway = await gatewayInFrontOf(server.url);
    await server.seen('server/discover');
    const client = await clientOf(gateway);
    expect(client.getServerVersion()).toMatchObject({ name: 'modern-at-start-up' });
    expect(server.methods.filter((method) => method === 'server/discover')).toHaveLength(2);
  });

  it('a probe still unanswered holds neither the start nor the first session, which asks too', async () => {
    const server = await modernServer(['silent', 'answer']);
    closing.push(() => server.close());
    // The probe's bound is 10 s (its most); the start does not wait for it.
    const gateway = await gatewayInFrontOf(server.url, 60_000);
    await server.seen('server/discover');
    const client = await clientOf(gateway);
    // The session did not wait for the start-up probe to be given up: it is still open.
    expect(server.heldOpen()).toBe(1);
    expect(client.getServerVersion()).toMatchObject({ name: 'modern-at-start-up' });
    expect(textOf(await client.callTool({ name: 'hello', arguments: {} }))).toBe('hello');
    expect(server.methods.filter((method) => method === 'server/discover')).toHaveLength(2);
  });

  it('a probe left unanswered at start-up does not make the server 2025 for good', async () => {
    const server = await modernServer(['silent', 'answer']);
    closing.push(() => server.close());
    // The probe's bound is the upstream's requestTimeout here (1 s).
    const gateway = await gatewayInFrontOf(server.url, 1_000);
    await server.seen('server/discover');
    await server.heldGivenUp();
    const client = await clientOf(gateway);
    expect(client.getServerVersion()).toMatchObject({ name: 'modern-at-start-up' });
    expect(server.methods.filter((method) => method === 'server/discover')).toHaveLength(2);
  });
});

/**
 * taskgate's 2026-07-28 hop to an HTTP server, against a server written in this test on node:http so that
 * it can answer what a real one seldom does: the routing headers taskgate sends (Mcp-Name, and Mcp-Param-*
 * for a tool's x-mcp-header parameter, learnt from tools/list), a 503 with no JSON-RPC body, an event
 * stream that ends without the answer, and no session at all. An SDK 1.x client on taskgate's stdio front.
 */
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type Connection } from '../helpers/taskgate.js';
import { textOf } from '../helpers/tool-results.js';
import { thrownBy } from '../helpers/thrown.js';

const TOOLS = [
  {
    name: 'query',
    inputSchema: {
      type: 'object',
      properties: { region: { type: 'string', 'x-mcp-header': 'Region' }, sql: { type: 'string' } },
    },
  },
  {
    name: 'badly-annotated',
    inputSchema: { type: 'object', properties: { n: { type: 'number', 'x-mcp-header': 'N' } } },
  },
  { name: 'unavailable', inputSchema: { type: 'object' } },
  { name: 'cut-short', inputSchema: { type: 'object' } },
];

const seen: { method: string; headers: IncomingHttpHeaders }[] = [];
let server: Server;
let connection: Connection;

function answer(res: ServerResponse, id: unknown, result: object): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', id, result: { resultType: 'complete', ...result } }));
}

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const request = JSON.parse(body) as {
        id: unknown;
        method: string;
        params?: { name?: string; arguments?: { region?: string } };
      };
      seen.push({ method: request.method, headers: req.headers });
      if (req.headers['mcp-session-id'] !== undefined) return void res.writeHead(400).end();
      switch (request.method) {
        case 'server/discover':
          return answer(res, request.id, {
            supportedVersions: ['2026-07-28'],
            capabilities: { tools: {} },
            _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'hand-written-modern', version: '1' } },
          });
        case 'tools/list':
          return answer(res, request.id, { tools: TOOLS });
        case 'tools/call': {
          const name = request.params?.name;
          if (name === 'unavailable')
            return void res.writeHead(503, { 'content-type': 'text/plain' }).end('busy');
          if (name === 'cut-short') {
            res.writeHead(200, { 'content-type': 'text/event-stream' });
            return void res.end(
              'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}\n\n',
            );
          }
          const region = String(request.params?.arguments?.region);
          return answer(res, request.id, { content: [{ type: 'text', text: `ran in ${region}` }] });
        }
        default:
          res.writeHead(404, { 'content-type': 'application/json' });
          return void res.end(
            JSON.stringify({
              jsonrpc: '2.0',
              id: request.id,
              error: { code: -32601, message: 'Method not found' },
            }),
          );
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  connection = await connect('modern', {
    upstream: [],
    flags: ['--upstream-url', `http://127.0.0.1:${port}/mcp`],
  });
});

afterAll(async () => {
  await connection?.close();
  await new Promise((resolve) => server?.close(resolve));
});

describe('the 2026-07-28 hop to an HTTP server', () => {
  it('meets it through server/discover: initialize is answered from it, with no session upstream', () => {
    expect(connection.client.getServerVersion()).toMatchObject({ name: 'hand-written-modern' });
    expect(seen[0]).toMatchObject({
      method: 'server/discover',
      headers: { 'mcp-method': 'server/discover' },
    });
    expect(seen.every(({ headers }) => headers['mcp-session-id'] === undefined)).toBe(true);
  });

  it('leaves out of tools/list a tool whose x-mcp-header breaks the rules (a number parameter), and says so', async () => {
    const { tools } = await connection.client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(['query', 'unavailable', 'cut-short']);
    expect(connection.stderr()).toMatch(/"tool":"badly-annotated".*left out of tools\/list/);
  });

  it("sends Mcp-Name and, once tools/list taught it, the x-mcp-header parameter's Mcp-Param header (base64 when not header-safe)", async () => {
    await connection.client.listTools();
    const result = await connection.client.callTool({
      name: 'query',
      arguments: { region: 'Zürich', sql: 's' },
    });
    expect(textOf(result)).toBe('ran in Zürich');
    const call = seen.findLast(({ method }) => method === 'tools/call')!;
    expect(call.headers).toMatchObject({
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/call',
      'mcp-name': 'query',
      'mcp-param-region': `=?base64?${Buffer.from('Zürich').toString('base64')}?=`,
    });
  });

  it('a 503 without a JSON-RPC answer fails that call with -32000 naming the status', async () => {
    const error = (await thrownBy(connection.client.callTool({ name: 'unavailable', arguments: {} }))) as {
      code: number;
      message: string;
    };
    expect(error.code).toBe(-32000);
    expect(error.message).toContain('HTTP 503');
  });

  it('a stream that ends without the answer fails that call at once, saying so', async () => {
    const error = (await thrownBy(connection.client.callTool({ name: 'cut-short', arguments: {} }))) as {
      code: number;
      message: string;
    };
    expect(error.code).toBe(-32000);
    expect(error.message).toContain('ended the stream before answering');
  });
});

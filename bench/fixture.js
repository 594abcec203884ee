// @ts-check
/**
 * The bench's own minimal MCP server (stdio, SDK low-level `Server`, no tasks), for the one workload the
 * shared fixture cannot serve: `sleep_until` ends at an absolute time (epoch ms), so that 10 000 calls end
 * together however long each took to reach the server. Also `echo`.
 *
 *   node bench/fixture.js
 */
import { Server } from '../node_modules/@modelcontextprotocol/sdk/dist/esm/server/index.js';
import { StdioServerTransport } from '../node_modules/@modelcontextprotocol/sdk/dist/esm/server/stdio.js';
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
} from '../node_modules/@modelcontextprotocol/sdk/dist/esm/types.js';

const server = new Server({ name: 'bench-fixture', version: '1.0.0' }, { capabilities: { tools: {} } });
const object = /** @type {const} */ ('object');
server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [
    { name: 'echo', inputSchema: { type: object, properties: { text: { type: 'string' } } } },
    { name: 'sleep_until', inputSchema: { type: object, properties: { at: { type: 'number' } } } },
  ],
}));
server.setRequestHandler(CallToolRequestSchema, async ({ params }) => {
  const args = /** @type {Record<string, unknown>} */ (params.arguments ?? {});
  if (params.name === 'sleep_until') {
    const at = Number(args['at']);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, at - Date.now())));
    return { content: [{ type: 'text', text: 'woke' }] };
  }
  return { content: [{ type: 'text', text: String(args['text'] ?? '') }] };
});
await server.connect(new StdioServerTransport());

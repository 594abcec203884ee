// @ts-check
/**
 * The bench's own minimal MCP server (stdio, SDK low-level `Server`, no tasks): a 2025 server for the
 * workloads the shared fixture cannot serve.
 *
 * - `echo`: returns `text`; with `sleep_ms`, after that many ms (the zero-work tool without it).
 * - `sleep_until`: ends at an absolute time (epoch ms), so that 10 000 calls end together however long
 *   each took to reach the server.
 * - `elicit`: asks the client once (elicitation/create, form mode, related to the call) and returns the
 *   answer's `content.answer`.
 *
 *   node bench/fixture.js
 */
import { Server } from '../node_modules/@modelcontextprotocol/sdk/dist/esm/server/index.js';
import { StdioServerTransport } from '../node_modules/@modelcontextprotocol/sdk/dist/esm/server/stdio.js';
import {
  CallToolRequestSchema,
  ElicitResultSchema,
  ListToolsRequestSchema,
} from '../node_modules/@modelcontextprotocol/sdk/dist/esm/types.js';

const server = new Server({ name: 'bench-fixture', version: '1.0.0' }, { capabilities: { tools: {} } });
const object = /** @type {const} */ ('object');
server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [
    {
      name: 'echo',
      inputSchema: { type: object, properties: { text: { type: 'string' }, sleep_ms: { type: 'number' } } },
    },
    { name: 'sleep_until', inputSchema: { type: object, properties: { at: { type: 'number' } } } },
    { name: 'elicit', inputSchema: { type: object, properties: { message: { type: 'string' } } } },
  ],
}));
const sleep = (/** @type {number} */ ms) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
server.setRequestHandler(CallToolRequestSchema, async ({ params }, extra) => {
  const args = /** @type {Record<string, unknown>} */ (params.arguments ?? {});
  if (params.name === 'sleep_until') {
    await sleep(Number(args['at']) - Date.now());
    return { content: [{ type: 'text', text: 'woke' }] };
  }
  if (params.name === 'elicit') {
    const answer = await extra.sendRequest(
      {
        method: 'elicitation/create',
        params: {
          mode: 'form',
          message: String(args['message'] ?? 'answer?'),
          requestedSchema: {
            type: object,
            properties: { answer: { type: 'string' } },
            required: ['answer'],
          },
        },
      },
      ElicitResultSchema,
    );
    return { content: [{ type: 'text', text: String(answer.content?.['answer'] ?? answer.action) }] };
  }
  if (args['sleep_ms'] !== undefined) await sleep(Number(args['sleep_ms']));
  return { content: [{ type: 'text', text: String(args['text'] ?? '') }] };
});
await server.connect(new StdioServerTransport());

// @ts-check
/**
 * example-slow-server: a small "legacy" MCP server (no tasks support) to put behind taskgate.
 *
 * It knows nothing about MCP tasks. Its `slow-report` tool simply takes a few seconds, reports
 * progress and stops when the call is cancelled. Put taskgate in front of it and clients can
 * call that tool as a task anyway: `tasks/get`, `tasks/result` and `tasks/cancel` all work.
 *
 * Run it on its own with: node examples/legacy-server.js (it speaks MCP over stdin/stdout,
 * so it only prints to stderr).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
} from '@modelcontextprotocol/sdk/types.js';

const server = new Server(
  { name: 'example-slow-server', version: '1.0.0' },
  { capabilities: { tools: {} } }, // just tools: no `tasks` capability here
);

// The tools this server offers, described with JSON Schema.
server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [
    {
      name: 'slow-report',
      description: 'Writes a short report about a topic. Takes a few seconds; reports progress.',
      inputSchema: {
        type: 'object',
        properties: {
          topic: { type: 'string', description: 'What the report is about' },
          seconds: { type: 'number', description: 'How long to work (default 3)' },
        },
        required: ['topic'],
      },
    },
    {
      name: 'weather',
      description: 'Tells the weather in a city (canned answer, instant).',
      inputSchema: {
        type: 'object',
        properties: { city: { type: 'string' } },
        required: ['city'],
      },
    },
    {
      name: 'flaky',
      description: 'Always fails, to show what a tool error looks like.',
      inputSchema: { type: 'object', properties: {} },
    },
  ],
}));

server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
  const args = request.params.arguments ?? {};

  switch (request.params.name) {
    case 'slow-report': {
      const topic = String(args['topic'] ?? 'nothing in particular');
      const seconds = typeof args['seconds'] === 'number' ? args['seconds'] : 3;
      const steps = Math.max(1, Math.round(seconds * 2)); // one step every 500 ms
      // The client asks for progress by sending a progressToken in _meta.
      const progressToken = extra._meta?.progressToken;

      for (let step = 1; step <= steps; step++) {
        // extra.signal aborts when the client cancels: sleep() then throws and we stop working.
        // (The SDK sends no answer for a cancelled request.)
        await sleep(500, undefined, { signal: extra.signal });
        if (progressToken !== undefined) {
          await extra.sendNotification({
            method: 'notifications/progress',
            params: { progressToken, progress: step, total: steps, message: `step ${step}/${steps}` },
          });
        }
      }

      const report = [
        `Report on: ${topic}`,
        `- Worked on it for ${seconds} s in ${steps} steps.`,
        `- Finding: ${topic} is more interesting than it looks.`,
        `- Next step: read more about ${topic}.`,
      ].join('\n');
      return { content: [{ type: 'text', text: report }] };
    }

    case 'weather': {
      const city = String(args['city'] ?? 'somewhere');
      return { content: [{ type: 'text', text: `${city}: 21 °C, light breeze, no rain.` }] };
    }

    case 'flaky':
      // A tool-level failure: a normal result with isError, not a protocol error.
      return {
        isError: true,
        content: [{ type: 'text', text: 'The flaky tool failed, as it always does.' }],
      };

    default:
      throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`);
  }
});

await server.connect(new StdioServerTransport());
console.error('example-slow-server is running on stdio');

/**
 * Client-side tasks: server-everything task-augments sampling and elicitation towards clients that
 * declare client-side tasks. taskgate declares them for a client that lacks them, holds the answers as
 * tasks, and serves the server's tasks/get and tasks/result.
 */
import { fileURLToPath } from 'node:url';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  type ClientCapabilities,
} from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { connect, type Connection } from '../helpers/taskgate.js';

const EVERYTHING = fileURLToPath(
  new URL('../../node_modules/@modelcontextprotocol/server-everything/dist/index.js', import.meta.url),
);

let connection: Connection | undefined;
afterEach(async () => {
  expect(connection?.transport.violations ?? []).toEqual([]);
  await connection?.close();
  connection = undefined;
});

const clients: { name: string; capabilities: ClientCapabilities }[] = [
  { name: 'a client without tasks', capabilities: { sampling: {}, elicitation: { form: {} } } },
  {
    name: 'a task-aware client without client-side tasks',
    capabilities: { sampling: {}, elicitation: { form: {} }, tasks: { cancel: {}, requests: {} } },
  },
];

describe.each(clients)('$name, through taskgate, in front of server-everything', ({ capabilities }) => {
  const open = async (flags: string[] = []): Promise<Connection> => {
    const c = (connection = await connect('legacy', {
      capabilities,
      flags,
      upstream: [process.execPath, EVERYTHING, 'stdio'],
    }));
    c.client.setRequestHandler(CreateMessageRequestSchema, (request) => {
      expect(request.params.task).toBeUndefined();
      return {
        model: 'test-model',
        role: 'assistant',
        content: { type: 'text', text: `sampled: ${JSON.stringify(request.params.messages[0]?.content)}` },
      };
    });
    c.client.setRequestHandler(ElicitRequestSchema, (request) => {
      expect(request.params.task).toBeUndefined();
      return { action: 'accept', content: { name: 'Ada', color: 'green', agree: true } };
    });
    return c;
  };

  const text = (result: Record<string, unknown>): string =>
    (result.content as { text?: string }[]).map((item) => item.text ?? '').join('\n');

  it('completes trigger-sampling-request-async through a client-side task held by taskgate', async () => {
    const c = await open();
    const { tools } = await c.client.listTools();
    expect(tools.map((tool) => tool.name)).toContain('trigger-sampling-request-async');
    const result = await c.client.callTool(
      { name: 'trigger-sampling-request-async', arguments: { prompt: 'hello tasks' } },
      undefined,
      { timeout: 30_000 },
    );
    expect(text(result)).toMatch(/\[COMPLETED\]/);
    expect(text(result)).toContain('sampled:');
  });

  it('completes trigger-elicitation-request-async through a client-side task held by taskgate', async () => {
    const c = await open();
    await c.client.listTools();
    const result = await c.client.callTool(
      { name: 'trigger-elicitation-request-async', arguments: {} },
      undefined,
      {
        timeout: 30_000,
      },
    );
    expect(text(result)).toMatch(/\[COMPLETED\]/);
    expect(text(result)).toContain('Ada');
  });
});

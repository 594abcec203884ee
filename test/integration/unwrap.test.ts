/**
 * Unwrap: a client without tasks uses tools that the upstream runs only as tasks. taskgate follows the
 * upstream task and answers the plain call with exactly its result or error. Here against real servers
 * (server-everything, the plain-answer fixture); the plain call, its keep-alive progress and a client
 * without tasks in front of a legacy server are in process (test/unit/in-process-unwrap.test.ts), and so
 * is the native fixture's server: its exact errors, cancellation and the polling failures it plays
 * (test/unit/in-process-unwrap-native.test.ts).
 */
import { fileURLToPath } from 'node:url';
import {
  ElicitRequestSchema,
  type ClientCapabilities,
  type ElicitRequest,
} from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { FIXTURES, connect, type Connection, type ConnectOptions } from '../helpers/taskgate.js';

const EVERYTHING = fileURLToPath(
  new URL('../../node_modules/@modelcontextprotocol/server-everything/dist/index.js', import.meta.url),
);
const RELATED = 'io.modelcontextprotocol/related-task';
const LEGACY_CLIENT: ClientCapabilities = { elicitation: { form: {} }, sampling: {} };

let connection: Connection | undefined;
afterEach(async () => {
  expect(connection?.transport.violations ?? []).toEqual([]);
  await connection?.close();
  connection = undefined;
});

const legacyClient = async (
  server: 'native' | 'legacy' | 'everything',
  options: ConnectOptions = {},
): Promise<Connection> =>
  (connection = await connect(server === 'everything' ? 'legacy' : server, {
    capabilities: LEGACY_CLIENT,
    ...(server === 'everything' ? { upstream: [process.execPath, EVERYTHING, 'stdio'] } : {}),
    ...options,
  }));

const text = (result: Record<string, unknown>): string =>
  (result.content as { type: string; text: string }[]).map((item) => item.text).join('\n');

describe('unwrap against server-everything', () => {
  it('issue 14.5: lists the tools as the server does, hiding only the taskSupport it requires', async () => {
    const direct = await legacyClient('everything', { direct: true });
    const { tools: served } = await direct.client.listTools();
    await direct.close();
    const c = await legacyClient('everything');
    const { tools } = await c.client.listTools();
    const hidden = served.map((tool) =>
      tool.execution?.taskSupport === 'required' ? { ...tool, execution: {} } : tool,
    );
    // Client-side tasks that taskgate declares for the client make the server list a few more tools.
    const alsoServed = tools.filter((tool) => served.some((other) => other.name === tool.name));
    expect(alsoServed.map(({ execution, ...tool }) => ({ ...tool, execution: execution ?? {} }))).toEqual(
      hidden,
    );
    expect(tools.find((tool) => tool.name === 'echo')?.execution).toEqual({ taskSupport: 'forbidden' });
  });

  it('shows its task-required tool as a normal tool and answers a plain call with the final report', async () => {
    const c = await legacyClient('everything');
    const { tools } = await c.client.listTools();
    const research = tools.find((tool) => tool.name === 'simulate-research-query');
    expect(research).toBeDefined();
    expect(research?.execution?.taskSupport).toBeUndefined();
    const result = await c.client.callTool(
      { name: 'simulate-research-query', arguments: { topic: 'otters' } },
      undefined,
      {
        timeout: 30_000,
      },
    );
    expect(result.isError).toBeFalsy();
    expect(text(result)).toMatch(/otters/);
    expect(result._meta?.[RELATED]).toBeUndefined();
  });

  it('relays the clarification it asks for as an ordinary elicitation, and the report reflects the answer', async () => {
    const c = await legacyClient('everything');
    const asked: ElicitRequest[] = [];
    c.client.setRequestHandler(ElicitRequestSchema, (request) => {
      asked.push(request);
      return { action: 'accept', content: { interpretation: 'snake' } };
    });
    await c.client.listTools();
    const result = await c.client.callTool(
      { name: 'simulate-research-query', arguments: { topic: 'python', ambiguous: true } },
      undefined,
      { timeout: 30_000 },
    );
    expect(asked).toHaveLength(1);
    expect(asked[0]!.params._meta?.[RELATED]).toBeUndefined();
    expect(JSON.stringify(asked[0]!.params)).toContain('"const":"snake"');
    expect(text(result)).toContain('Research Report: python (snake)');
  });
});

describe('unwrap against the plain-answer fixture', () => {
  it('copes with a server that answers a task-augmented call with the plain result', async () => {
    const c = (connection = await connect('legacy', {
      capabilities: LEGACY_CLIENT,
      upstream: [process.execPath, FIXTURES.plainAnswer],
    }));
    await c.client.listTools();
    const result = await c.client.callTool({ name: 'report', arguments: { topic: 'tides' } });
    expect(text(result)).toBe('plain report on tides');
  });
});

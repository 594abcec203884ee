/**
 * Unwrap against the native fixture's server, in process: a client without tasks calls a tool that the
 * server runs only as a task; taskgate follows the upstream task and answers the plain call with its
 * exact error, cancels it when the client gives up, and ends the call clearly when polling fails (the
 * failures the fixture plays). test/integration/unwrap.test.ts keeps server-everything and the
 * plain-answer fixture, each in its own process.
 */
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { createNativeServer, type NativeOptions } from '../fixtures/native-fixture.js';
import { inProcessGateway, type Gateway } from '../helpers/in-process.js';

let gate: Gateway | undefined;
afterEach(async () => {
  expect(gate?.violations ?? []).toEqual([]);
  await gate?.close();
  gate = undefined;
});

const open = async (options: NativeOptions = {}): Promise<Gateway> => {
  gate = await inProcessGateway({ server: createNativeServer(options), clientTasks: false });
  await gate.client.listTools();
  return gate;
};

const text = (result: Record<string, unknown>): string =>
  (result.content as { type: string; text: string }[]).map((item) => item.text).join('\n');

describe('in process: unwrap against the native fixture', () => {
  it('returns the exact JSON-RPC error of the upstream task', async () => {
    const { client } = await open();
    const error = await client.callTool({ name: 'sleep-required', arguments: { ms: 'not a number' } }).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(McpError);
    expect((error as McpError).code).toBe(-32602);
    expect((error as McpError).message).toContain('Argument "ms" must be a number');
  });

  it('cancels the upstream task when the client cancels its call', async () => {
    const { client } = await open();
    const controller = new AbortController();
    const call = client.callTool(
      { name: 'sleep-required', arguments: { ms: 30_000, label: 'unwrapped in process' } },
      undefined,
      { signal: controller.signal },
    );
    // Whether the upstream task exists yet or is still being created, it must end up cancelled.
    controller.abort('changed my mind');
    await expect(call).rejects.toThrow();
    const deadline = Date.now() + 10_000;
    let cancelled: string[] = [];
    while (!cancelled.includes('unwrapped in process') && Date.now() < deadline) {
      cancelled = JSON.parse(
        text(await client.callTool({ name: 'cancelled-calls', arguments: {} })),
      ) as string[];
      if (!cancelled.includes('unwrapped in process'))
        await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(cancelled).toContain('unwrapped in process');
  });

  it.each([
    ['tasks-get-fails', /Following the upstream task .* failed: task store unavailable/],
    ['tasks-expire', /vanished before it finished/],
  ])('ends the call with a clear error when polling fails (%s)', async (misbehave, expected) => {
    const { client } = await open({ misbehave });
    const error = await client.callTool({ name: 'sleep-required', arguments: { ms: 5_000 } }).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(McpError);
    expect((error as McpError).message).toMatch(expected);
  });
});

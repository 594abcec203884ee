/**
 * Issue 28 "Unrelated server requests fail a call": server-everything asks roots/list on its own 350 ms
 * after initialize (its server/roots.js). Through taskgate, a pinned SDK v2 client that declared no roots
 * and whose first call is slow must get that call's own result: the request it never declared it can answer
 * is refused to the server as that client would refuse it directly (the SDK's -32601 "Method not found").
 */
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { connectModern, type ModernConnection } from '../helpers/modern-client.js';
import { TASKGATE } from '../helpers/taskgate.js';

const EVERYTHING = fileURLToPath(
  new URL('../../node_modules/@modelcontextprotocol/server-everything/dist/index.js', import.meta.url),
);

let modern: ModernConnection | undefined;
afterEach(async () => {
  await modern?.close();
  modern = undefined;
});

describe('a server request the caller did not declare it can answer', () => {
  it('server-everything’s own roots/list during a pinned client’s first slow call: refused to the server, and the call ends with its own result', async () => {
    modern = await connectModern(
      { command: [process.execPath, TASKGATE, '--', process.execPath, EVERYTHING, 'stdio'] },
      { mode: 'pin', capabilities: {} },
    );
    const { client } = modern;
    const long = await client.callTool({
      name: 'trigger-long-running-operation',
      arguments: { duration: 1, steps: 2 },
    });
    expect(JSON.stringify(long.content)).toMatch(/Long running operation completed/i);
    // The roots/list was asked while the call ran, and the server heard what the client itself answers.
    await vi.waitFor(
      () => expect(modern!.stderr()).toMatch(/Failed to request roots from client.*Method not found/),
      {
        timeout: 5_000,
      },
    );
  });
});

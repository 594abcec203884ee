/**
 * What augmenting a legacy server needs a process for: the HTTP front's tasks/list, and a real legacy server's
 * resources. The rest of augment (status notifications, input_required, ttl policy, per-tool taskSupport,
 * limits, tasks/list, params) is in process: test/unit/in-process-augment.test.ts.
 */
import { McpError, ReadResourceResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { connect, type Connection } from '../helpers/taskgate.js';

let connection: Connection | undefined;
afterEach(async () => {
  expect(connection?.transport.violations ?? []).toEqual([]);
  await connection?.close();
  connection = undefined;
});

const open = async (flags: string[] = []): Promise<Connection> =>
  (connection = await connect('legacy', { flags }));

const rpcError = async (promise: Promise<unknown>): Promise<McpError> => {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(McpError);
  return error as McpError;
};

describe('augment: tasks/list', () => {
  it('is neither advertised nor served on the HTTP front without an identity (spec: Security, Task Isolation)', async () => {
    const c = (connection = await connect('legacy', { front: 'http' }));
    expect(c.client.getServerCapabilities()?.tasks?.list).toBeUndefined();
    const error = await rpcError(c.client.experimental.tasks.listTasks());
    expect(error.code).toBe(-32601);
  });
});

describe('augment: params it interprets', () => {
  it('takes task metadata off other requests before a legacy server sees it (spec: Task Support and Handling 1)', async () => {
    const c = await open();
    const read = await c.client.request(
      { method: 'resources/read', params: { uri: 'fixture://hello', task: { ttl: 1000 } } } as never,
      ReadResourceResultSchema,
    );
    expect(read.contents[0]).toMatchObject({ text: 'hello from fixture' });
  });
});

/**
 * taskgate behind taskgate (issue 34): the outer one speaks 2026-07-28 to the inner one over stdio (the inner
 * front answers server/discover), the inner one 2025 to a 2025 server. The chain is transparent: what the
 * client gets is what it gets from one taskgate.
 */
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, FIXTURES, TASKGATE, type Connection } from '../helpers/taskgate.js';
import { textOf } from '../helpers/tool-results.js';

describe.each([
  ['one taskgate', [process.execPath, FIXTURES.conformance]],
  ['taskgate behind taskgate', [process.execPath, TASKGATE, '--', process.execPath, FIXTURES.conformance]],
])('a 2025 client through %s', (_name, upstream) => {
  let connection: Connection;
  beforeAll(async () => {
    connection = await connect('conformance', { upstream });
  });
  afterAll(() => connection?.close());

  it('gets the log messages a tool sends while it runs, without ever setting a level', async () => {
    const logged: unknown[] = [];
    connection.client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
      logged.push(notification.params.data);
    });
    const result = await connection.client.callTool({ name: 'test_tool_with_logging', arguments: {} });
    expect(textOf(result)).toBe('Logged three messages.');
    // Each arrives before the answer of the call it belongs with.
    expect(logged).toEqual(['Tool execution started', 'Tool processing data', 'Tool execution completed']);
  });
});

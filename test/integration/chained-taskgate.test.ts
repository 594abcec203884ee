/**
 * taskgate behind taskgate (issue 34): the outer one speaks 2026-07-28 to the inner one over stdio (the inner
 * front answers server/discover), the inner one 2025 to a 2025 server. The chain is transparent: what the
 * client gets is what it gets from one taskgate.
 */
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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

/**
 * The chain on a loaded machine (issue 34): the inner taskgate starts reading its input only after the
 * outer one's server/discover probe was given up (the probe waits 3 s at most), then takes the pipe as
 * 2026-07-28 and refuses (-32602, no 2026-07-28 _meta) the 2025 initialize that the outer one sent
 * meanwhile, and answers the probe once its own upstream is up. That late answer decides: the outer one
 * speaks 2026-07-28 to the same inner taskgate, rather than start a fresh one, as slow again (each start
 * costs two processes, and under load it cost the chain's runs their bound).
 */
describe('a 2025 client through taskgate behind a taskgate slower to start than the era probe waits', () => {
  let connection: Connection;
  beforeAll(async () => {
    const file = join(tmpdir(), `taskgate-slow-chain-${process.pid}.json`);
    // The probe waits 3 s (a quarter of requestTimeout is more); the inner taskgate reads its input after
    // 4 s; initialize, sent at 3 s, has 20 s for its answer (a loaded machine starts node slowly).
    const slowStart = 'setTimeout(() => import(process.argv[1]), 4_000)';
    const upstream = {
      command: process.execPath,
      args: ['-e', slowStart, TASKGATE, '--', process.execPath, FIXTURES.conformance],
      requestTimeout: 20_000,
    };
    writeFileSync(file, JSON.stringify({ upstream }));
    connection = await connect('conformance', { flags: ['--config', file], upstream: [] });
  }, 40_000);
  afterAll(() => connection?.close());

  it('is served by that inner taskgate in 2026-07-28, logs and all', async () => {
    const logged: unknown[] = [];
    connection.client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
      logged.push(notification.params.data);
    });
    const result = await connection.client.callTool({ name: 'test_tool_with_logging', arguments: {} });
    expect(textOf(result)).toBe('Logged three messages.');
    expect(logged).toEqual(['Tool execution started', 'Tool processing data', 'Tool execution completed']);
    const stderr = connection.stderr();
    expect(stderr).toContain('server/discover: no answer within 3000 ms');
    expect(stderr).toMatch(
      /answered server\/discover late and refused the 2025 initialize \(error -32\d+ .*\): it speaks 2026-07-28/,
    );
    expect(stderr).not.toContain('a fresh upstream server');
  });
});

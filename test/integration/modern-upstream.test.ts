/**
 * A 2025 client through taskgate to a 2026-07-28 server: the SDK 1.32 client, over stdio and over the HTTP
 * gateway, in front of the SDK v2 fixture on stdio, and as a sidecar (`--upstream-url`) in front of the
 * fixture over Streamable HTTP, which taskgate finds to be modern by `server/discover` and speaks
 * 2026-07-28 to. The client sees a 2025 server: initialize answered, no resultType, the server's
 * MRTR input rounds as elicitation requests, ping and logging/setLevel answered; augment still gives it
 * tasks. `upstream.era: legacy` keeps the 2025 hop.
 */
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startHttpFixture, type HttpFixture } from '../helpers/http-fixture.js';
import { connect, FIXTURES, type Connection } from '../helpers/taskgate.js';
import { textOf, until, untilCancelledOnServer } from '../helpers/tool-results.js';

describe.each(['stdio', 'http', 'sidecar'] as const)(
  'an SDK 1.x client on the %s front to the SDK v2 server',
  (front) => {
    let connection: Connection;
    let http: HttpFixture | undefined;
    const asked: unknown[] = [];

    beforeAll(async () => {
      if (front === 'sidecar') {
        // The server over Streamable HTTP (createMcpHandler), taskgate on stdio with --upstream-url.
        http = await startHttpFixture('modern');
        connection = await connect('modern', { upstream: [], flags: ['--upstream-url', http.url] });
      } else connection = await connect('modern', { front });
      connection.client.setRequestHandler(ElicitRequestSchema, async (request) => {
        asked.push(request.params);
        return { action: 'accept', content: { answer: 'forty-two' } };
      });
    });
    afterAll(async () => {
      await connection?.close();
      await http?.stop();
    });
    afterEach(() => expect(connection.transport.violations).toEqual([]));

    it('meets a 2025 server, and taskgate says it speaks 2026-07-28 upstream', async () => {
      expect(connection.client.getServerVersion()).toMatchObject({ name: 'modern-fixture' });
      expect(connection.stderr()).toContain('the upstream server speaks 2026-07-28');
    });

    it('gets results without resultType', async () => {
      const result = await connection.client.callTool({ name: 'echo', arguments: { text: 'hi' } });
      expect(textOf(result)).toBe('hi');
      expect(result).not.toHaveProperty('resultType');
    });

    it("gets the server's MRTR input round as an elicitation request, and its answer reaches the server", async () => {
      const result = await connection.client.callTool({ name: 'elicit', arguments: { message: 'q?' } });
      expect(result.isError).toBeFalsy();
      expect(JSON.parse(textOf(result))).toEqual({ action: 'accept', content: { answer: 'forty-two' } });
      expect(asked).toEqual([expect.objectContaining({ mode: 'form', message: 'q?' })]);
    });

    // Over HTTP the SDK v2 fixture has a server per request: what a tool announces reaches no listen.
    if (front !== 'sidecar')
      it("the server's resource updates and list changes reach the client, by the listen taskgate holds upstream", async () => {
        const updated: string[] = [];
        let toolsChanged = 0;
        connection.client.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => {
          updated.push(notification.params.uri);
        });
        connection.client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
          toolsChanged++;
        });
        expect(connection.client.getServerCapabilities()?.resources).toMatchObject({ subscribe: true });
        await connection.client.subscribeResource({ uri: 'fixture://hello' });
        // The listen with the new subscription is open once the server acknowledged it; touch until heard.
        await until(async () => {
          await connection.client.callTool({ name: 'touch', arguments: { uri: 'fixture://hello' } });
          return updated.includes('fixture://hello');
        }, 'the resource update');
        await connection.client.callTool({ name: 'touch', arguments: { uri: 'fixture://other' } });
        await connection.client.callTool({ name: 'change-tools', arguments: {} });
        await until(async () => toolsChanged > 0, 'the tool list change');
        expect(updated.every((uri) => uri === 'fixture://hello')).toBe(true);
        await connection.client.unsubscribeResource({ uri: 'fixture://hello' });
      });

    it('ping and logging/setLevel, which 2026-07-28 removed, are answered', async () => {
      await expect(connection.client.ping()).resolves.toEqual({});
      await expect(connection.client.setLoggingLevel('debug')).resolves.toEqual({});
    });

    it('cancelling a running call stops it on the server', async () => {
      const label = `legacy-client-${front}`;
      const abort = new AbortController();
      const call = connection.client.callTool({ name: 'slow', arguments: { ms: 30_000, label } }, undefined, {
        signal: abort.signal,
        onprogress: () => abort.abort('the test cancels'),
      });
      await expect(call).rejects.toThrow('the test cancels');
      await untilCancelledOnServer((params) => connection.client.callTool(params), label);
    });

    it('a task-augmented call is augmented as before: a task, then its result', async () => {
      const { task } = await connection.client.request(
        {
          method: 'tools/call',
          params: { name: 'echo', arguments: { text: 'task' }, task: { ttl: 60_000 } },
        },
        CreateTaskResultSchema,
      );
      const result = await connection.client.request(
        { method: 'tasks/result', params: { taskId: task.taskId } },
        CallToolResultSchema,
      );
      expect(textOf(result)).toBe('task');
    });
  },
);

describe('a 2026-07-28 stdio server that crashes', () => {
  let connection: Connection;
  beforeAll(async () => {
    connection = await connect('modern');
  });
  afterAll(() => connection?.close());

  it('is restarted and given server/discover again, and serves the same client', async () => {
    await expect(connection.client.callTool({ name: 'crash', arguments: {} })).rejects.toThrow(
      /Upstream server unavailable/,
    );
    await until(
      async () => connection.stderr().includes('upstream server is serving again'),
      'the restarted server serving',
      15_000,
    );
    const result = await connection.client.callTool({ name: 'echo', arguments: { text: 'again' } });
    expect(textOf(result)).toBe('again');
  });
});

describe('upstream.era: legacy', () => {
  let connection: Connection;
  beforeAll(async () => {
    const file = join(tmpdir(), `taskgate-era-legacy-${process.pid}.json`);
    const upstream = { command: process.execPath, args: [FIXTURES.modern], era: 'legacy' };
    writeFileSync(file, JSON.stringify({ upstream }));
    connection = await connect('modern', { flags: ['--config', file], upstream: [] });
  });
  afterAll(() => connection?.close());

  it('never asks server/discover: the server is spoken to in 2025 (the SDK v2 server serves it)', async () => {
    const result = await connection.client.callTool({ name: 'echo', arguments: { text: 'hi' } });
    expect(textOf(result)).toBe('hi');
    expect(connection.stderr()).not.toContain('server/discover');
  });
});

describe('a dual-era server that takes an unanswered server/discover as its choice of era', () => {
  let connection: Connection;
  beforeAll(async () => {
    const file = join(tmpdir(), `taskgate-era-choosing-${process.pid}.json`);
    // requestTimeout 2 s: the probe waits a quarter of it.
    const upstream = { command: process.execPath, args: [FIXTURES.eraChoosing], requestTimeout: 2_000 };
    writeFileSync(file, JSON.stringify({ upstream }));
    connection = await connect('eraChoosing', { flags: ['--config', file], upstream: [] });
  });
  afterAll(() => connection?.close());

  it('refuses the 2025 handshake, which a fresh process is then given and serves', async () => {
    const result = await connection.client.callTool({ name: 'echo', arguments: { text: 'fresh' } });
    expect(textOf(result)).toBe('fresh');
    const stderr = connection.stderr();
    expect(stderr).toMatch(/initialize on a 2026 connection/);
    expect(stderr).toContain('initialize was refused (error -32601');
    expect(stderr).toContain('a fresh upstream server takes the 2025 handshake');
    expect(stderr).toMatch(/initialize on a 2025 connection/);
  });
});

describe('a 2025 server slower to start than the era probe waits (npx -y fetching it)', () => {
  let connection: Connection;
  beforeAll(async () => {
    const file = join(tmpdir(), `taskgate-slow-start-${process.pid}.json`);
    // The probe waits 2.5 s (a quarter of requestTimeout); the server reads its input after 4 s, and
    // initialize, sent at 2.5 s, has 10 s for its answer (a loaded machine starts node slowly).
    const slowStart = 'setTimeout(() => import(process.argv[1]), 4_000)';
    const upstream = {
      command: process.execPath,
      args: ['-e', slowStart, FIXTURES.legacy],
      requestTimeout: 10_000,
    };
    writeFileSync(file, JSON.stringify({ upstream }));
    connection = await connect('legacy', { flags: ['--config', file], upstream: [] });
  });
  afterAll(() => connection?.close());

  it('keeps its first process and serves through it', async () => {
    const result = await connection.client.callTool({ name: 'echo', arguments: { text: 'patient' } });
    expect(textOf(result)).toBe('patient');
    const stderr = connection.stderr();
    expect(stderr).toContain('the upstream server speaks 2025 (server/discover: no answer within 2500 ms)');
    expect(stderr).not.toContain('a fresh upstream server');
  });
});

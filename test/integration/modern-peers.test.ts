/**
 * The real MCP 2026-07-28 peers, directly, without taskgate: an SDK v2 client (test/helpers/modern-client.ts)
 * pinned to 2026-07-28 and in `auto` mode, against the SDK v2 fixture (test/fixtures/modern-server.js) on
 * stdio (serveStdio) and Streamable HTTP (createMcpHandler). The baseline that taskgate's modern tests
 * mirror. Clauses are from the 2026-07-28 specification: basic/patterns/mrtr.mdx, basic/index.mdx,
 * basic/utilities/cancellation.mdx and progress.mdx, basic/transports/*. Last, what the same server
 * does for a 2025 client (SDK 1.x), which taskgate meets when it puts a 2025 client in front of it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ElicitRequest, Progress } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { httpTransport } from '../helpers/http-client.js';
import { startHttpFixture, type HttpFixture } from '../helpers/http-fixture.js';
import { modernCallCases } from '../helpers/modern-calls.js';
import { connectModern, MODERN_VERSION, type ModernConnection } from '../helpers/modern-client.js';
import { connect, FIXTURES, type Connection } from '../helpers/taskgate.js';
import { textOf, untilCancelledOnServer } from '../helpers/tool-results.js';

const MODERN_SERVER = [process.execPath, FIXTURES.modern];

interface Peer {
  name: string;
  transport: 'stdio' | 'http';
  mode: 'pin' | 'auto';
  probe?: 'in-place';
}

const PEERS: Peer[] = [
  { name: 'pinned over stdio', transport: 'stdio', mode: 'pin' },
  { name: 'pinned over stdio, probing in place', transport: 'stdio', mode: 'pin', probe: 'in-place' },
  { name: 'auto over stdio', transport: 'stdio', mode: 'auto' },
  { name: 'pinned over HTTP', transport: 'http', mode: 'pin' },
  { name: 'auto over HTTP', transport: 'http', mode: 'auto' },
];

describe.each(PEERS)('SDK v2 client $name to the SDK v2 server', (peer) => {
  const elicitations: ElicitRequest['params'][] = [];
  let http: HttpFixture | undefined;
  let connection: ModernConnection;

  beforeAll(async () => {
    const options = {
      mode: peer.mode,
      ...(peer.probe && { probe: peer.probe }),
      onElicit: (params: ElicitRequest['params']) => {
        elicitations.push(params);
        return { action: 'accept' as const, content: { answer: 'forty-two' } };
      },
    };
    if (peer.transport === 'http') {
      http = await startHttpFixture('modern');
      connection = await connectModern({ url: http.url }, options);
    } else {
      connection = await connectModern({ command: MODERN_SERVER }, options);
    }
  });

  afterAll(async () => {
    await connection?.close();
    await http?.stop();
  });

  it('speaks 2026-07-28, learnt from server/discover (versioning: no initialize)', () => {
    const { client } = connection;
    expect(client.getProtocolEra()).toBe('modern');
    expect(client.getNegotiatedProtocolVersion()).toBe(MODERN_VERSION);
    expect(client.getDiscoverResult()?.supportedVersions).toContain(MODERN_VERSION);
    expect(client.getServerVersion()).toMatchObject({ name: 'modern-fixture' });
    expect(client.getServerCapabilities()).toMatchObject({ tools: {}, resources: {}, prompts: {} });
  });

  it('lists the tools the SDK 1.x fixtures share', async () => {
    const { tools } = await connection.client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(
      [
        'cancelled-calls',
        'change-tools',
        'crash',
        'echo',
        'elicit',
        'fail',
        'progress',
        'sleep',
        'slow',
        'touch',
      ].sort(),
    );
  });

  // The SDK v2 client runs notification handlers a microtask after it reads them but settles a response at
  // once: progress read in the same chunk as the result is dropped. So only what arrives is checked here.
  it('the progress tool answers after its steps, and the progress that arrives is its steps in order', async () => {
    const progress: Progress[] = [];
    const result = await connection.client.callTool(
      { name: 'progress', arguments: { steps: 3, intervalMs: 20 } },
      { onprogress: (update) => progress.push(update) },
    );
    expect(textOf(result)).toBe('done 3 steps');
    const steps = [1, 2, 3].map((i) => ({ progress: i, total: 3, message: `step ${i}` }));
    expect(progress).toEqual(steps.slice(0, progress.length));
  });

  modernCallCases({
    connection: () => connection,
    elicitations,
    serverName: 'modern-fixture',
    label: `direct-${peer.transport}-${peer.mode}-${peer.probe ?? 'sibling'}`,
  });
});

describe('an SDK 1.x client (2025-11-25) to the same server', () => {
  let stdio: Connection;
  let http: HttpFixture;
  let overHttp: LegacyClient;

  beforeAll(async () => {
    stdio = await connect('modern', { direct: true });
    stdio.client.setRequestHandler(ElicitRequestSchema, async () => ({
      action: 'accept',
      content: { answer: 'forty-two' },
    }));
    http = await startHttpFixture('modern');
    overHttp = new LegacyClient({ name: 'legacy-test', version: '1.0.0' }, { capabilities: {} });
    await overHttp.connect(httpTransport(new URL(http.url)));
  });

  afterAll(async () => {
    await stdio?.close();
    await overHttp?.close();
    await http?.stop();
  });

  it('on stdio, initialize pins the connection to 2025 and answers as a 2025 server (no resultType)', async () => {
    expect(stdio.client.getServerVersion()).toMatchObject({ name: 'modern-fixture' });
    const result = await stdio.client.callTool({ name: 'echo', arguments: { text: 'hi' } });
    expect(result).toEqual({ content: [{ type: 'text', text: 'hi' }] });
  });

  it("on stdio, elicit's input_required becomes an elicitation/create request to the client", async () => {
    const result = await stdio.client.callTool({ name: 'elicit', arguments: { message: 'q?' } });
    expect(result.isError).toBeFalsy();
    expect(JSON.parse(textOf(result))).toEqual({ action: 'accept', content: { answer: 'forty-two' } });
  });

  it('on stdio, notifications/cancelled stops a running call', async () => {
    const abort = new AbortController();
    const call = stdio.client.callTool(
      { name: 'slow', arguments: { ms: 30_000, label: 'cancel-2025' } },
      undefined,
      {
        signal: abort.signal,
        onprogress: () => abort.abort('the test cancels'),
      },
    );
    await expect(call).rejects.toThrow('the test cancels');
    await untilCancelledOnServer((params) => stdio.client.callTool(params), 'cancel-2025');
  });

  it('over HTTP, 2025 requests are served statelessly: elicit cannot reach the client and is an isError result', async () => {
    const echoed = await overHttp.callTool({ name: 'echo', arguments: { text: 'hi' } });
    expect(echoed).toEqual({ content: [{ type: 'text', text: 'hi' }] });
    const asked = await overHttp.callTool({ name: 'elicit', arguments: { message: 'q?' } });
    expect(asked.isError).toBe(true);
    expect(textOf(asked)).toContain('per-request legacy serving cannot receive server-to-client requests');
  });
});

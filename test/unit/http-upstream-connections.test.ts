/**
 * The HTTP gateway's sessions to an HTTP upstream share its keep-alive connections (issue 34: in front of a
 * server that takes a session per conformance scenario, a Pool per session cost three new connections a
 * scenario, set up and torn down at both ends). In the test's own process: startHttpGateway in front of a
 * fixture's SDK server, behind a TCP relay that counts the connections made to it; SDK clients on the front.
 */
import { once } from 'node:events';
import { connect as tcpConnect, createServer, type Socket } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/config/load.js';
import { createLegacyServer } from '../fixtures/legacy-fixture.js';
import { memoryGateway } from '../helpers/memory-gateway.js';
import { serveInProcess } from '../helpers/in-process-http.js';
import { textOf } from '../helpers/tool-results.js';

const closing: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

interface Relay {
  url: string;
  /** The connections made to it so far. */
  connections: () => number;
  /** Resolves once `count` of them have closed in all; fails after 5 s. */
  closed: (count: number) => Promise<void>;
}

/** A TCP relay to the server of `target` that counts the connections made to it and those closed. */
async function countingRelay(target: string): Promise<Relay> {
  const { hostname, port } = new URL(target);
  let connections = 0;
  let closed = 0;
  const sockets = new Set<Socket>();
  const relay = createServer((socket) => {
    connections++;
    socket.on('close', () => {
      closed++;
      relay.emit('connection-closed');
    });
    const upstream = tcpConnect(Number(port), hostname);
    sockets.add(socket).add(upstream);
    socket.pipe(upstream).pipe(socket);
    for (const [one, other] of [
      [socket, upstream],
      [upstream, socket],
    ] as const) {
      one.on('error', () => other.destroy());
      one.on('close', () => other.destroy());
    }
  });
  relay.listen(0, '127.0.0.1');
  await once(relay, 'listening');
  closing.push(async () => {
    for (const socket of sockets) socket.destroy();
    relay.close();
    await once(relay, 'close');
  });
  const address = relay.address();
  const relayPort = typeof address === 'object' && address !== null ? address.port : 0;
  const closedAtLeast = async (count: number): Promise<void> => {
    const deadline = AbortSignal.timeout(5_000);
    while (closed < count) {
      await once(relay, 'connection-closed', { signal: deadline }).catch(() => {
        throw new Error(`${closed} connections closed within 5 s, not ${count}`);
      });
    }
  };
  return {
    url: `http://127.0.0.1:${relayPort}/mcp`,
    connections: () => connections,
    closed: closedAtLeast,
  };
}

/** One client session through the gateway: three calls at once, then its end (DELETE). */
async function session(url: URL): Promise<void> {
  const client = new Client({ name: 'connections', version: '1' });
  const transport = new StreamableHTTPClientTransport(url);
  await client.connect(transport);
  const texts = await Promise.all(
    [1, 2, 3].map(async (n) =>
      textOf(await client.callTool({ name: 'echo', arguments: { text: `call ${n}` } })),
    ),
  );
  expect(texts).toEqual(['call 1', 'call 2', 'call 3']);
  await transport.terminateSession();
  await client.close();
}

describe('the HTTP gateway in front of an HTTP upstream', () => {
  it('gives a session after another the connections the first left, not new ones', async () => {
    const server = await serveInProcess(() => createLegacyServer(), 'legacy-fixture');
    closing.push(() => server.close());
    const relay = await countingRelay(server.url);
    const config = resolveConfig({
      http: { listen: '127.0.0.1:0' },
      upstream: { url: relay.url, era: 'legacy' },
    });
    const gateway = await memoryGateway(config);
    closing.push(() => gateway.close());
    await session(gateway.url);
    // The first upstream session has ended (its standalone stream's connection closed with it) before the
    // second starts: the gateway ends it after it has answered the client's DELETE.
    await relay.closed(1);
    const before = relay.connections();
    await session(gateway.url);
    // Its three calls and its standalone stream at once take four; the first session's standalone stream
    // took its connection with it (aborted mid-response), its others were kept alive for this one.
    expect(relay.connections() - before).toBeLessThanOrEqual(1);
  });
});

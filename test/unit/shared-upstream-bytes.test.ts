/**
 * Issue 33: with `upstream.sharing: shared`, a big answer reaches each session's client as the pieces the
 * server's answer was read in, its wire id written over with the session's (a longer one too), never
 * joined nor JSON.parsed, and scanned once. In the test's own process: startHttpGateway in front of a real
 * SDK server on real sockets, two sessions by hand at the front.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { resolveConfig } from '../../src/config/load.js';
import { serveInProcess } from '../helpers/in-process-http.js';
import { memoryGateway } from '../helpers/memory-gateway.js';
import { runCleanups, type Cleanups } from '../helpers/upstream-harness.js';
import { watchBytes } from '../helpers/byte-watch.js';
import { openSession, postTextCall } from '../helpers/raw-http.js';

const cleanups: Cleanups = [];
afterEach(() => runCleanups(cleanups));

const LENGTH = 1_000_000;

/** A real SDK server whose `text` tool returns `length` characters, quotes and escapes among them. */
async function sdkServer(): Promise<string> {
  const makeServer = () => {
    const server = new McpServer({ name: 'big', version: '1' });
    server.registerTool('text', { inputSchema: { length: z.number() } }, ({ length }) => ({
      content: [{ type: 'text', text: 'a "b" \\ c\n'.repeat(length / 10) }],
    }));
    return server.server;
  };
  const served = await serveInProcess(makeServer, 'big');
  cleanups.push(served.close);
  return served.url;
}

describe('issue 33: a big answer through a shared upstream', () => {
  it("reaches each session's client as the server's pieces under its own id, never joined nor JSON.parsed", async () => {
    const config = resolveConfig({
      http: { listen: '127.0.0.1:0' },
      upstream: { url: await sdkServer(), era: 'legacy', sharing: 'shared' },
    });
    const gateway = await memoryGateway(config);
    cleanups.push(() => gateway.close());
    const url = gateway.url;
    const sessions = [await openSession(url), await openSession(url)];
    // The wire ids are small numbers: one id as short, one far longer, which moves what follows it.
    const ids = [7, 'a request id much longer than any the shared connection gives'];
    const { value: answers, ...watch } = await watchBytes(LENGTH, () =>
      Promise.all(
        sessions.map(async (sessionId, k) => {
          return postTextCall(url, sessionId, ids[k]!, LENGTH);
        }),
      ),
    );
    expect(watch.parsedAnywhere).toBe(0);
    expect(watch.joins).toEqual([]);
    expect(watch.scannedBytes).toBeGreaterThan(2 * LENGTH);
    expect(watch.scannedBytes).toBeLessThan(3 * LENGTH);
    for (const [k, answer] of answers.entries()) {
      const message = JSON.parse(answer) as { id: unknown; result: { content: { text: string }[] } };
      expect(message.id).toBe(ids[k]);
      expect(message.result.content[0]!.text).toBe('a "b" \\ c\n'.repeat(LENGTH / 10));
    }
  });
});

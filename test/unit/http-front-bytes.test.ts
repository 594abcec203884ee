/**
 * Issue 33: a body POSTed to the HTTP front is parsed once on its way through taskgate: the front reads it
 * (to answer what it must refuse, and to route it) and hands that read to the session beside the bytes,
 * which go on unchanged. The HTTP front in process before a Session and a real SDK Server in memory.
 */
import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { HttpFront } from '../../src/transport/http-front.js';
import { textResult, type FakeTool } from '../helpers/in-process.js';
import { sessionFor } from '../helpers/raw-client.js';
import { inSession, openSession, post } from '../helpers/raw-http.js';
import { frontOptions } from '../helpers/front-options.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const measure: FakeTool = {
  name: 'measure',
  run: (args) => Promise.resolve(textResult(`${String(args.text).length} characters`)),
};

async function front(): Promise<URL> {
  const gateway: HttpFront = new HttpFront(
    frontOptions({ maxMessageBytes: 8 * 1024 * 1024 }),
    {
      openSession: async (session) => {
        const opened = await sessionFor(session, [measure]);
        cleanups.push(opened.close);
      },
      notReady: async () => undefined,
    },
    pino({ level: 'silent' }),
  );
  const url = await gateway.listen();
  cleanups.push(() => gateway.close());
  return url;
}

describe('issue 33: a body POSTed to the HTTP front', () => {
  it('is parsed once by taskgate: the front hands its read to the session', async () => {
    const url = await front();
    const headers = inSession(await openSession(url));
    const text = 'x'.repeat(2_000_000);
    const parse = vi.spyOn(JSON, 'parse');
    try {
      const call = {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'measure', arguments: { text } },
      };
      const answer = await (await post(url, call, headers)).text();
      expect(answer).toContain('"2000000 characters"');
      const big = parse.mock.calls.filter(([arg]) => typeof arg === 'string' && arg.length > 1_000_000);
      // The front's read, and the SDK server's own (its transport in memory parses what it is sent).
      expect(big).toHaveLength(2);
    } finally {
      parse.mockRestore();
    }
  });
});

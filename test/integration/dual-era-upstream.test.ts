/**
 * A dual-era HTTP server whose 2026-07-28 face offers less than its 2025 one (test/fixtures/dual-era-server.js,
 * as the conformance repository's everything-server): a 2025 client through taskgate has its session on the
 * 2025 face; `--upstream-era modern` puts it on the 2026-07-28 face. That a 2025 client sees through taskgate
 * all it sees directly is what conformance-servers.test.ts runs the official suite for, in front of such a
 * server (the direct run here checked only the fixture).
 */
import { CreateMessageRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpFixture, type HttpFixture } from '../helpers/http-fixture.js';
import { connect } from '../helpers/taskgate.js';
import { textOf } from '../helpers/tool-results.js';

let fixture: HttpFixture;
beforeAll(async () => {
  fixture = await startHttpFixture('dualEra');
});
afterAll(() => fixture?.stop());

const through = (...flags: string[]) =>
  connect('dualEra', { upstream: [], flags: ['--upstream-url', fixture.url, ...flags] });

describe('a 2025 client through taskgate (upstream.era auto)', () => {
  it('is served by the 2025 face, whose logging and resource subscriptions it sees and uses', async () => {
    const { client, close } = await through();
    try {
      expect(textOf(await client.callTool({ name: 'face', arguments: {} }))).toBe('2025');
      expect(client.getServerCapabilities()).toMatchObject({ logging: {}, resources: { subscribe: true } });
      await expect(client.subscribeResource({ uri: 'test://note' })).resolves.toEqual({});
    } finally {
      await close();
    }
  });
});

describe('a 2025 client through taskgate with --upstream-era modern', () => {
  it('is served by the 2026-07-28 face, translated, which has no resource subscriptions', async () => {
    const { client, close } = await through('--upstream-era', 'modern');
    try {
      expect(textOf(await client.callTool({ name: 'face', arguments: {} }))).toBe('2026-07-28');
      expect(client.getServerCapabilities()?.resources).toBeUndefined();
    } finally {
      await close();
    }
  });
});

describe('a server request tied to no call, asked by the first call after the handshake (the sidecar race)', () => {
  let slow: HttpFixture;
  beforeAll(async () => {
    // The standalone GET stream opens 300 ms late: a call forwarded before it is open loses the request.
    slow = await startHttpFixture('dualEra', { env: { FIXTURE_GET_DELAY_MS: '300' } });
  });
  afterAll(() => slow?.stop());

  it('reaches the client: the first call waits for the upstream standalone stream', async () => {
    const connection = await connect('dualEra', { upstream: [], flags: ['--upstream-url', slow.url] });
    try {
      connection.client.setRequestHandler(CreateMessageRequestSchema, async () => ({
        role: 'assistant',
        model: 'test',
        content: { type: 'text', text: 'yes' },
      }));
      const result = await connection.client.callTool(
        { name: 'ask_unrelated', arguments: { prompt: 'ok?' } },
        undefined,
        { timeout: 10_000 },
      );
      expect(textOf(result)).toBe('sampled: yes');
    } finally {
      await connection.close();
    }
  });
});

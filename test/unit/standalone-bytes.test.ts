/**
 * Issue 33: a big message on the standalone GET stream of an HTTP upstream is handed on as the chunks it
 * was read in, scanned as they came, as the answers on request streams are; and only to a receiver that
 * takes pieces: for any other, nothing is scanned. HttpUpstream against the legacy fixture's SDK server,
 * served from this process on real sockets.
 */
import { watchBytes } from '../helpers/byte-watch.js';
import { afterEach, describe, expect, it } from 'vitest';
import { scanJson } from '../../src/protocol/scan.js';
import { createLegacyServer } from '../fixtures/legacy-fixture.js';
import { serveInProcess } from '../helpers/in-process-http.js';
import { answerText, openUpstream, runCleanups, type Cleanups } from '../helpers/upstream-harness.js';

const cleanups: Cleanups = [];
afterEach(() => runCleanups(cleanups));

const TEXT = 'a "b" \\ c — é\n'.repeat(80_000);

/** The legacy fixture's `announce` of TEXT, which goes on the standalone stream: the log message. */
async function announced(takingPieces: boolean) {
  const server = await serveInProcess(() => createLegacyServer(), 'legacy-fixture');
  cleanups.push(() => server.close());
  const h = openUpstream(cleanups, server.url, {}, takingPieces);
  await h.initialize();
  expect(await h.upstream.standaloneStream()).toBe(true);
  const id = h.call('announce', { text: TEXT });
  const log = await h.inbox.waitFor((r) => r.message.method === 'notifications/message', 'the log message');
  expect(answerText(await h.answer(id))).toBe('announced');
  expect(log.message.params.data).toBe(TEXT);
  expect(log.onStreamOf).toBeUndefined();
  return log;
}

describe('issue 33: a big message on the standalone stream', () => {
  it('goes to a receiver that takes pieces as the chunks it came in, with their scan', async () => {
    const log = await announced(true);
    const { line, scanned } = log.pieces!;
    expect(line.parts.length).toBeGreaterThan(1);
    expect(line.length).toBe(log.raw.length);
    expect(scanned).toEqual(scanJson(log.raw));
  });

  it('goes to any other receiver joined, and unscanned', async () => {
    const { value: log, scannedBytes } = await watchBytes(0, () => announced(false));
    expect(log.pieces).toBeUndefined();
    expect(scannedBytes).toBe(0);
  });
});

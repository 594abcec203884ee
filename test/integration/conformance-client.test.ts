/**
 * The official conformance suite's client scenario sse-retry (0.1.16, SEP-1699) with taskgate as the client:
 * test/conformance/taskgate-client.js runs taskgate with `--upstream-url` the scenario's server. The server
 * primes every SSE stream with `retry: 500`, closes the tools/call stream mid-call and answers the call on the
 * GET that resumes it with Last-Event-ID.
 *
 * It used to fail 2 runs in 11 (issue 34): when taskgate's standalone GET reached the server only after the
 * tools/call stream was closed, the server took that GET for the reconnection. Since fix 1 no request goes
 * upstream before the standalone GET stream is open, so the order is fixed by construction; each run checks
 * that order in what the server saw, rather than hoping a few repetitions meet the race.
 */
import { describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { runClientScenario } from '../conformance/suite.js';

const CLIENT = fileURLToPath(new URL('../conformance/taskgate-client.js', import.meta.url));

describe('the client scenario sse-retry with taskgate as the client', () => {
  it('passes every check, the standalone GET reaching the server before any request after the handshake', async () => {
    const checks = await runClientScenario('2025', `"${process.execPath}" "${CLIENT}"`, 'sse-retry', 30_000);
    const scored = checks.filter((check) => check.status !== 'INFO');
    expect(scored.map(({ id, status }) => ({ id, status }))).toEqual([
      { id: 'client-sse-graceful-reconnect', status: 'SUCCESS' },
      { id: 'client-sse-retry-timing', status: 'SUCCESS' },
      { id: 'client-sse-last-event-id', status: 'SUCCESS' },
    ]);
    const seen = checks.filter((check) => check.id === 'incoming-request').map((check) => check.description);
    const firstGet = seen.findIndex((description) => /^Received GET request for \S+$/.test(description));
    const firstAfterHandshake = seen.findIndex((description) =>
      /method: (tools|resources|prompts)\//.test(description),
    );
    expect(firstGet, seen.join('\n')).toBeGreaterThan(-1);
    expect(firstGet, seen.join('\n')).toBeLessThan(firstAfterHandshake);
  }, 40_000);
});

/**
 * The official conformance suite in front of test/fixtures/conformance-everything.js's HTTP mode (issue 34),
 * a server that behaves as the conformance repository's everything-server: its sampling and elicitation
 * travel on the standalone GET stream (no related request), it primes with `retry: 5000` and replays
 * nothing on a resumption, and its 2026-07-28 face has tools only. Directly (the baseline) and through
 * taskgate as a sidecar (`--upstream-url`, upstream.era auto), which must keep a 2025 client on the 2025
 * face; the two at once, so that their times compare. The gateway in front of it on stdio is
 * conformance-servers.test.ts.
 *
 * Behind the sidecar, the fixture opens each GET stream 300 ms late: a call forwarded before taskgate's
 * upstream GET stream is open would lose the server's request in every run, not in 2 % of them (without
 * issue 34's fix 1 the four asking scenarios hang there every time). Directly it cannot: the suite's client
 * does not wait for its GET stream either, and would lose them.
 *
 * Both are 0.2.0-alpha.12 `--requirements 2025-11-25` alone: it runs every scenario of 0.1.16 with more
 * checks (conformance.test.ts says why 0.1.16 does not run here too). The four asking scenarios hang in
 * every run without fix 1, so one run shows it.
 */
import {
  describeTarget,
  NO_HOST_CHECK,
  run2025,
  SCENARIOS_2025_REQUIREMENTS,
  table,
  type Expected,
} from '../conformance/tables.js';
import { fixtureTarget, sidecarTarget } from '../conformance/targets.js';

/**
 * server-sse-polling, with the defaults (issue 34 fix 2): the fixture closes the tools/call stream and
 * replays nothing, so the answer is lost upstream, as it is directly (where the suite's own client gives its
 * resumption up after 5 s and scores a WARNING). taskgate waits the `retry: 5000` the server asked for,
 * resumes, gives the resumption up after upstream.resumeTimeout (5 s) and answers the call -32000, in
 * one JSON body: the SSE checks do not apply. Before fix 2 it waited out upstream.requestTimeout (300 s).
 */
const NOTHING_REPLAYED: Expected = {
  checksNothing:
    'taskgate answers that POST with one JSON body, so the SSE checks do not apply; the answer itself is lost upstream (the fixture replays nothing), and taskgate gives its resumption up after upstream.resumeTimeout',
};

describeTarget('conformance-everything.js directly', () => fixtureTarget('conformanceEverything'), [
  run2025(table(SCENARIOS_2025_REQUIREMENTS, { 'dns-rebinding-protection': NO_HOST_CHECK })),
]);

describeTarget(
  'taskgate as a sidecar in front of conformance-everything.js (its GET streams open 300 ms late)',
  () => sidecarTarget('conformanceEverything', { env: { FIXTURE_GET_DELAY_MS: '300' } }),
  [run2025(table(SCENARIOS_2025_REQUIREMENTS, { 'server-sse-polling': NOTHING_REPLAYED }))],
);

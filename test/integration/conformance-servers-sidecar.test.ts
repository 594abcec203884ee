/**
 * The official conformance suite in front of test/fixtures/conformance-everything.js's HTTP mode (issue 34),
 * a server that behaves as the conformance repository's everything-server: its sampling and elicitation
 * travel on the standalone GET stream (no related request), it primes with `retry: 5000` and replays
 * nothing on a resumption, and its 2026-07-28 face has tools only. Directly (the baseline) and through
 * taskgate as a sidecar (`--upstream-url`, upstream.era auto), which must keep a 2025 client on the 2025
 * face; the two at once, so that their times compare. The gateway in front of it on stdio is
 * conformance-servers.test.ts.
 *
 * Behind the sidecar, the fixture opens each standalone GET stream 300 ms late: a call forwarded before
 * taskgate's upstream GET stream is open would lose the server's request in every run, not in 2 % of them
 * (without issue 34's fix 1 the four asking scenarios hang there every time). Directly it cannot: the
 * suite's client does not wait for its GET stream either, and would lose them. A GET that resumes a stream
 * (Last-Event-ID) is not delayed: that is not the race, and server-sse-polling's resumption is its own test.
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
} from '../conformance/tables.js';
import { fixtureTarget, sidecarTarget } from '../conformance/targets.js';

describeTarget('conformance-everything.js directly', () => fixtureTarget('conformanceEverything'), [
  run2025(table(SCENARIOS_2025_REQUIREMENTS, { 'dns-rebinding-protection': NO_HOST_CHECK })),
]);

/**
 * Every scenario passes, server-sse-polling too: the fixture closes the tools/call stream with
 * `retry: 5000` and replays nothing, and taskgate closes its client's stream alike (SEP-1699), so the
 * priming and retry checks pass; taskgate resumes upstream when the suite's client resumes, which it does
 * at once, before the server answers, so the answer comes live as it does directly.
 */
describeTarget(
  'taskgate as a sidecar in front of conformance-everything.js (its standalone GET streams open 300 ms late)',
  () => sidecarTarget('conformanceEverything', { env: { FIXTURE_GET_DELAY_MS: '300' } }),
  [run2025(table(SCENARIOS_2025_REQUIREMENTS))],
);

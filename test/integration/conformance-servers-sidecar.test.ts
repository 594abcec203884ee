/**
 * The official conformance suite through taskgate as a sidecar (`--upstream-url`, upstream.era auto) in
 * front of test/fixtures/conformance-everything.js's HTTP mode (conformance-servers.test.ts runs it
 * directly, the baseline, and says how it behaves): taskgate must keep a 2025 client on the 2025 face. The
 * fixture opens each GET stream 300 ms late: a call forwarded before taskgate's upstream GET stream is open
 * would lose the server's request in every run, not in 2 % of them (without issue 34's fix 1 the four
 * asking scenarios hang there every time).
 */
import {
  describeTarget,
  run0116,
  run2025,
  SCENARIOS_0_1_16,
  SCENARIOS_2025_REQUIREMENTS,
  table,
  type Expected,
} from '../conformance/tables.js';
import { sidecarTarget } from '../conformance/targets.js';

/** The resumption taskgate makes as a sidecar gets nothing back: it waits out upstream.requestTimeout. */
const REQUEST_TIMEOUT_MS = 8_000;
const NOTHING_REPLAYED: Expected = {
  checksNothing: `until issue 34 fix 2 (branch upstream), where it passes directly: taskgate honours retry: 5000, resumes the closed tools/call stream with Last-Event-ID, gets nothing replayed, and waits out upstream.requestTimeout (${REQUEST_TIMEOUT_MS} ms here, 300 s by default) before it answers the call -32000 in one JSON body, so the SSE checks do not apply; the suite's own client gives such a resumption up at once`,
};

describeTarget(
  'taskgate as a sidecar in front of conformance-everything.js (its GET streams open 300 ms late)',
  () =>
    sidecarTarget('conformanceEverything', {
      env: { FIXTURE_GET_DELAY_MS: '300' },
      upstream: { requestTimeout: REQUEST_TIMEOUT_MS },
    }),
  [
    run0116(table(SCENARIOS_0_1_16, { 'server-sse-polling': NOTHING_REPLAYED })),
    run2025(table(SCENARIOS_2025_REQUIREMENTS, { 'server-sse-polling': NOTHING_REPLAYED })),
  ],
);

/**
 * The official MCP conformance suite's server scenarios in front of test/fixtures/conformance-server.js:
 * against the fixture's own HTTP mode (the baseline: a scenario that passes directly but fails through
 * taskgate is a taskgate bug), through taskgate as a sidecar (`--upstream-url`) in front of it, the two at
 * once so that their times compare, and behind two taskgates (issue 34: the outer one speaks 2026-07-28 to
 * the inner one over stdio), which must be as transparent as one taskgate. Each table through taskgate is
 * the one of taskgate in front of the fixture on stdio (conformance.test.ts).
 *
 * The sidecar is the one target of the conformance files that 0.1.16 runs against as well (the cheapest:
 * no process per session); elsewhere 0.2.0-alpha.12 `--requirements 2025-11-25`, which runs 0.1.16's
 * scenarios with more checks, runs alone (conformance.test.ts says why).
 */
import {
  describeTarget,
  NO_HOST_CHECK,
  run0116,
  run2025,
  SCENARIOS_2025_REQUIREMENTS,
  table,
} from '../conformance/tables.js';
import { fixtureTarget, gatewayTarget, sidecarTarget } from '../conformance/targets.js';
import {
  GATEWAY_FLAGS,
  THROUGH_TASKGATE_0_1_16,
  THROUGH_TASKGATE_2025_REQUIREMENTS,
} from '../conformance/through-taskgate.js';
import { FIXTURES, TASKGATE } from '../helpers/taskgate.js';

/**
 * The outer taskgate shares one inner taskgate among its sessions (`--upstream-sharing shared`): the inner
 * one speaks 2026-07-28, where nothing is a session's, and a session of its own each would start two
 * processes per scenario (the inner taskgate, then the fixture): 200 s of a 300 s run, most of this
 * file's CPU. An upstream per session is conformance.test.ts's topology.
 */
const SHARED_INNER = ['--upstream-sharing', 'shared'];

describeTarget('conformance-server.js directly', () => fixtureTarget('conformance'), [
  run2025(table(SCENARIOS_2025_REQUIREMENTS, { 'dns-rebinding-protection': NO_HOST_CHECK })),
]);

describeTarget(
  'taskgate as a sidecar in front of conformance-server.js over HTTP',
  () => sidecarTarget('conformance', { flags: GATEWAY_FLAGS }),
  // server-sse-polling passes too: the fixture closes the call's stream, and so does taskgate (SEP-1699).
  [run0116(THROUGH_TASKGATE_0_1_16), run2025(table(SCENARIOS_2025_REQUIREMENTS))],
);
describeTarget(
  'taskgate behind taskgate (over stdio, the outer one speaking 2026-07-28) in front of conformance-server.js',
  () =>
    gatewayTarget(
      [process.execPath, TASKGATE, '--', process.execPath, FIXTURES.conformance],
      [...GATEWAY_FLAGS, ...SHARED_INNER],
    ),
  [run2025(THROUGH_TASKGATE_2025_REQUIREMENTS)],
);

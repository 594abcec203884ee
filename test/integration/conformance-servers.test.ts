/**
 * The official conformance suite in front of servers that behave as those the project does not write
 * (issue 34), directly and through taskgate: a scenario that passes directly passes through taskgate, or its
 * entry says why not.
 *
 * test/fixtures/conformance-everything.js, as the conformance repository's everything-server: its sampling
 * and elicitation travel on the standalone GET stream (no related request), it primes with `retry: 5000` and
 * replays nothing on a resumption, and its 2026-07-28 face has tools only. Directly, on its HTTP mode; as the
 * gateway, on stdio; as a sidecar, conformance-servers-sidecar.test.ts (a file of its own, so that vitest
 * runs the two side by side).
 *
 * The baseline is 0.2.0-alpha.12 `--requirements 2025-11-25` alone: it runs every scenario of 0.1.16 with
 * more checks, so a direct 0.1.16 run would check the fixture only, twice.
 */
import {
  describeTarget,
  NO_HOST_CHECK,
  run0116,
  run2025,
  SCENARIOS_0_1_16,
  SCENARIOS_2025_REQUIREMENTS,
  table,
  TASKGATE_ANSWERS_JSON,
} from '../conformance/tables.js';
import { fixtureTarget, gatewayTarget } from '../conformance/targets.js';
import { FIXTURES } from '../helpers/taskgate.js';

describeTarget('conformance-everything.js directly', () => fixtureTarget('conformanceEverything'), [
  run2025(table(SCENARIOS_2025_REQUIREMENTS, { 'dns-rebinding-protection': NO_HOST_CHECK })),
]);

describeTarget(
  'taskgate as the gateway in front of conformance-everything.js on stdio',
  () => gatewayTarget([process.execPath, FIXTURES.conformanceEverything]),
  [
    run0116(table(SCENARIOS_0_1_16, { 'server-sse-polling': TASKGATE_ANSWERS_JSON })),
    run2025(table(SCENARIOS_2025_REQUIREMENTS, { 'server-sse-polling': TASKGATE_ANSWERS_JSON })),
  ],
);

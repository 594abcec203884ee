/**
 * The official conformance suite through taskgate as the gateway in front of
 * test/fixtures/conformance-everything.js on stdio (issue 34), a server that behaves as those the project
 * does not write: its sampling and elicitation are tied to no request, and over stdio they go on the one
 * pipe. The fixture run directly (its HTTP mode, the baseline) and behind a sidecar is
 * conformance-servers-sidecar.test.ts (a file of its own, so that vitest runs the two side by side): a
 * scenario that passes directly passes through taskgate, or its entry says why not. 0.2.0-alpha.12
 * `--requirements 2025-11-25` alone: it runs 0.1.16's scenarios with more checks (conformance.test.ts).
 */
import {
  describeTarget,
  run2025,
  SCENARIOS_2025_REQUIREMENTS,
  table,
  TASKGATE_ANSWERS_JSON,
} from '../conformance/tables.js';
import { gatewayTarget } from '../conformance/targets.js';
import { FIXTURES } from '../helpers/taskgate.js';

describeTarget(
  'taskgate as the gateway in front of conformance-everything.js on stdio',
  () => gatewayTarget([process.execPath, FIXTURES.conformanceEverything]),
  [run2025(table(SCENARIOS_2025_REQUIREMENTS, { 'server-sse-polling': TASKGATE_ANSWERS_JSON }))],
);

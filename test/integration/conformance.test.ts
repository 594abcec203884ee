/**
 * The official MCP conformance suite's server scenarios (test/conformance: its two versions, on Node 22)
 * through taskgate's HTTP front in front of test/fixtures/conformance-server.js (SDK 1.32, stdio). That
 * fixture's own HTTP mode, the baseline that tells a taskgate bug from a gap in the fixture (a scenario
 * that passes directly but fails through taskgate is a taskgate bug), and the fixture behind a sidecar and
 * behind two taskgates are conformance-relays.test.ts; the SDK v2 fixture, conformance-modern.test.ts
 * (files of their own, so that vitest runs them side by side).
 *
 * Each run has a table (test/conformance/tables.ts, through-taskgate.ts). One gateway serves every run of
 * a topology, with the task policy the 2026-07-28 runs need. 0.2.0-alpha.12 `--requirements 2025-11-25`
 * runs every scenario of 0.1.16 with more checks, on the same SDK client (1.32, 2025-11-25): a 0.1.16 run
 * beside it against the same target would repeat it with fewer checks, so 0.1.16 runs once, against the
 * cheapest target (the sidecar, conformance-relays.test.ts), and the baselines are 0.2.0-alpha.12 alone.
 */
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { NODE_22, SUITES } from '../conformance/suite.js';
import { describeTarget, run2025, run2026 } from '../conformance/tables.js';
import { gatewayTarget } from '../conformance/targets.js';
import {
  GATEWAY_FLAGS,
  THROUGH_TASKGATE_2025_REQUIREMENTS,
  THROUGH_TASKGATE_2026,
} from '../conformance/through-taskgate.js';
import { FIXTURES } from '../helpers/taskgate.js';

describe('the official conformance suite', () => {
  it('is installed (npm test installs test/conformance)', () => {
    expect(existsSync(NODE_22)).toBe(true);
    expect(existsSync(SUITES['2025'])).toBe(true);
    expect(existsSync(SUITES['2026'])).toBe(true);
  });
});

describeTarget(
  'taskgate in front of conformance-server.js',
  () => gatewayTarget([process.execPath, FIXTURES.conformance], GATEWAY_FLAGS),
  [run2025(THROUGH_TASKGATE_2025_REQUIREMENTS), run2026(THROUGH_TASKGATE_2026)],
);

/**
 * The official MCP conformance suite's server scenarios in front of test/fixtures/conformance-modern-server.js
 * (SDK v2, a 2026-07-28 server that answers input_required itself), which taskgate speaks 2026-07-28 to, on
 * stdio and as a sidecar over HTTP; and against the fixture's own HTTP mode, the baseline: a scenario that
 * passes directly but fails through taskgate is a taskgate bug. The tables start from those of taskgate
 * in front of conformance-server.js (test/conformance/through-taskgate.ts).
 */
import { describeTarget, run2025, run2026, type Expected } from '../conformance/tables.js';
import { fixtureTarget, gatewayTarget, sidecarTarget } from '../conformance/targets.js';
import {
  GATEWAY_FLAGS,
  THROUGH_TASKGATE_2025_REQUIREMENTS,
  THROUGH_TASKGATE_2026,
} from '../conformance/through-taskgate.js';
import { FIXTURES } from '../helpers/taskgate.js';

/**
 * The SDK v2 fixture has no tasks extension (the SDK v2 server has none), so against it directly the
 * tasks-* scenarios find plain tools where they want tasks.
 */
const NO_TASKS_EXTENSION = {
  fails:
    'conformance-modern-server.js serves no tasks extension (the SDK v2 server has none): discover declares no io.modelcontextprotocol/tasks, tasks/* are -32601, and every tool answers plainly, slow_compute only after its seconds (then the scenario runs out of its 10 s)',
};

/**
 * 0.2.0-alpha.12 `--requirements 2026-07-28` against conformance-modern-server.js's own HTTP mode: the
 * baseline for the runs through taskgate in front of it.
 */
const DIRECT_MODERN_2026: Record<string, Expected> = {
  ...Object.fromEntries(Object.keys(THROUGH_TASKGATE_2026).map((scenario) => [scenario, 'passes' as const])),
  'dns-rebinding-protection': {
    fails:
      'conformance-modern-server.js serves createMcpHandler on node:http without checking Host or Origin (a fixture, as http-serve.js); taskgate answers 403 to a foreign Origin',
  },
  ...Object.fromEntries(
    Object.keys(THROUGH_TASKGATE_2026)
      .filter((scenario) => scenario.startsWith('tasks-'))
      .map((scenario) => [scenario, NO_TASKS_EXTENSION]),
  ),
  'tasks-status-notifications': { checksNothing: 'it has no checks in 0.2.0-alpha.12' },
};

/**
 * 0.2.0-alpha.12 `--requirements 2026-07-28` through taskgate (stdio, or a sidecar over HTTP) in front of
 * conformance-modern-server.js: taskgate finds a 2026-07-28 server by server/discover and speaks that to it,
 * through the translator that shows it to taskgate's Session as a 2025 server; the tasks are taskgate's
 * (GATEWAY_FLAGS). The input-required-result-* scenarios pass now that the server names its own keys
 * and requestState, except where taskgate's bridge shows through. (-missing-input-response and
 * -ignore-extra-params pass with a WARNING each: taskgate answers inputResponses that come without its
 * requestState with -32602, where SEP-2322 would rather have a new round, or the extra keys ignored.)
 */
const THROUGH_TASKGATE_MODERN_2026: Record<string, Expected> = {
  ...THROUGH_TASKGATE_2026,
  ...Object.fromEntries(
    Object.keys(THROUGH_TASKGATE_2026)
      .filter((scenario) => scenario.startsWith('input-required-result-'))
      .map((scenario) => [scenario, 'passes' as const]),
  ),
  'input-required-result-basic-elicitation': {
    fails:
      "taskgate's bridge renames the server's MRTR input keys to its own input-N keys: the translator puts the upstream's input requests to taskgate's Session as 2025 requests (docs/eras.md), which the bridge asks again as MRTR under keys of its own; the scenario wants the key user_name",
  },
  'tasks-mrtr-composition': {
    fails:
      "taskgate decides on the task before the tool runs: test_tool_with_task is task-required by its policy, so the first call is answered with a CreateTaskResult and the fixture's input_required round (user_name) becomes the task's inputRequests on tasks/get, where the scenario wants an InputRequiredResult before any task exists",
  },
};

// Directly, the tasks-* scenarios wait for tasks the fixture never makes: 5 s each is as telling as 10 s
// (the same 161 checks passed and 16 failed with 3 s and with 10 s), and sooner.
describeTarget('the SDK v2 fixture directly', () => fixtureTarget('conformanceModern'), [
  run2026(DIRECT_MODERN_2026, 5_000),
]);
/**
 * Its 2025-11-25 run is a 2025 client of a 2026-07-28 server, through the translator (the server's
 * input_required rounds become 2025 requests to the client; ping and logging/setLevel are answered by
 * taskgate; resources/subscribe is followed by the subscriptions/listen taskgate holds upstream): the same
 * table as in front of conformance-server.js.
 */
describeTarget(
  "taskgate's modern front in front of the SDK v2 fixture",
  () => gatewayTarget([process.execPath, FIXTURES.conformanceModern], GATEWAY_FLAGS),
  [run2026(THROUGH_TASKGATE_MODERN_2026), run2025(THROUGH_TASKGATE_2025_REQUIREMENTS)],
);
describeTarget(
  "taskgate's modern front as a sidecar in front of the SDK v2 fixture over HTTP",
  () => sidecarTarget('conformanceModern', { flags: GATEWAY_FLAGS }),
  [run2026(THROUGH_TASKGATE_MODERN_2026)],
);

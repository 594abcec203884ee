/**
 * The official MCP conformance suite's server scenarios (test/conformance: its two versions, on Node 22)
 * through taskgate's HTTP front in front of test/fixtures/conformance-server.js (SDK 1.32, stdio), and
 * against that fixture's own HTTP mode, to tell a taskgate bug from a gap in the fixture: a scenario that
 * passes directly but fails through taskgate is a taskgate bug. The same again in front of
 * test/fixtures/conformance-modern-server.js (SDK v2, a 2026-07-28 server that answers input_required
 * itself), which taskgate speaks 2026-07-28 to, on stdio and over HTTP; and through taskgate behind
 * taskgate (issue 34), which must be as transparent as one taskgate.
 *
 * Each run has a table (test/conformance/tables.ts); for the 2026-07-28 run, THROUGH_TASKGATE_2026. One
 * gateway serves every run of a topology, with the task policy the 2026-07-28 runs need: it makes none of
 * the 2025 scenarios' tools a task. The baseline against conformance-server.js is 0.2.0-alpha.12
 * `--requirements 2025-11-25` alone: it runs every scenario of 0.1.16 with more checks, so a direct 0.1.16
 * run would check the fixture only, twice.
 */
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { NODE_22, SUITES } from '../conformance/suite.js';
import {
  describeTarget,
  SCENARIOS_0_1_16,
  SCENARIOS_2025_REQUIREMENTS,
  SELECT_0_1_16,
  SELECT_2025_REQUIREMENTS,
  table,
  type Expected,
  type SuiteRun,
  type Target,
} from '../conformance/tables.js';
import { startHttpFixture } from '../helpers/http-fixture.js';
import { FIXTURES, Gateway, TASKGATE, type FixtureName } from '../helpers/taskgate.js';

const NO_HOST_CHECK = {
  fails:
    'http-serve.js checks neither Host nor Origin (a fixture, not a product); taskgate answers 403 to a foreign Origin',
};
const TASKGATE_ANSWERS_JSON = {
  checksNothing:
    'taskgate answers that POST with one JSON body, as the transport allows (whether its upstream is on stdio or closes its own SSE stream mid-call over HTTP), so the SSE checks do not apply',
};

const THROUGH_TASKGATE_0_1_16 = table(SCENARIOS_0_1_16, { 'server-sse-polling': TASKGATE_ANSWERS_JSON });
const DIRECT_2025_REQUIREMENTS = table(SCENARIOS_2025_REQUIREMENTS, {
  'dns-rebinding-protection': NO_HOST_CHECK,
});
const THROUGH_TASKGATE_2025_REQUIREMENTS = table(SCENARIOS_2025_REQUIREMENTS, {
  'server-sse-polling': TASKGATE_ANSWERS_JSON,
});

/**
 * The input-required-result scenarios (and tasks-mrtr-composition) check input keys the server names
 * (`user_name`, ...) and its requestState: through taskgate, a 2025 server's elicitation/create becomes an
 * input request under a key taskgate names, so these can pass only in front of a server that answers with
 * an InputRequiredResult itself (an SDK v2 fixture).
 */
const NEEDS_MRTR_SERVER = {
  fails:
    'conformance-server.js has no test_input_required_result_* tool, and a 2025 server could not name the input keys and requestState these check',
};
/** Which tools of conformance-2026-tools.js taskgate runs as tasks for the 2026 suite (first match wins). */
const TASK_POLICY_2026 = [
  'test_tool_with_task=required',
  'failing_job=required',
  'slow_compute=optional',
  'protocol_error_job=optional',
  'confirm_delete=optional',
  'multi_input=optional',
  '*=forbidden',
].flatMap((rule) => ['--tool-task-support', rule]);

/**
 * tasks-mrtr-composition (and input-required scenarios) leave tasks waiting for input nobody gives: on
 * SIGTERM taskgate would let them run for the default 30 s shutdownGrace.
 */
const QUICK_SHUTDOWN = ['--shutdown-grace', '1000'];

/**
 * 0.2.0-alpha.12 `--requirements 2026-07-28` through taskgate's modern front: the scored scenarios, then
 * those it runs unscored (the tasks extension, and three pending ones), in the order it runs them.
 */
const THROUGH_TASKGATE_2026: Record<string, Expected> = {
  'server-stateless': 'passes',
  'completion-complete': 'passes',
  'tools-list': 'passes',
  'tools-call-simple-text': 'passes',
  'tools-call-image': 'passes',
  'tools-call-audio': 'passes',
  'tools-call-embedded-resource': 'passes',
  'tools-call-mixed-content': 'passes',
  'tools-call-error': 'passes',
  'tools-call-with-progress': 'passes',
  'server-sse-multiple-streams': 'passes',
  'resources-list': 'passes',
  'resources-read-text': 'passes',
  'resources-read-binary': 'passes',
  'resources-templates-read': 'passes',
  'sep-2164-resource-not-found': 'passes',
  'prompts-list': 'passes',
  'prompts-get-simple': 'passes',
  'prompts-get-with-args': 'passes',
  'prompts-get-embedded-resource': 'passes',
  'prompts-get-with-image': 'passes',
  'dns-rebinding-protection': 'passes',
  caching: 'passes',
  'input-required-result-basic-elicitation': NEEDS_MRTR_SERVER,
  'input-required-result-basic-sampling': NEEDS_MRTR_SERVER,
  'input-required-result-basic-list-roots': NEEDS_MRTR_SERVER,
  'input-required-result-request-state': NEEDS_MRTR_SERVER,
  'input-required-result-multiple-input-requests': NEEDS_MRTR_SERVER,
  'input-required-result-multi-round': NEEDS_MRTR_SERVER,
  'input-required-result-missing-input-response': 'passes',
  'input-required-result-non-tool-request': NEEDS_MRTR_SERVER,
  'input-required-result-result-type': NEEDS_MRTR_SERVER,
  'input-required-result-unsupported-methods': 'passes',
  'input-required-result-tampered-state': NEEDS_MRTR_SERVER,
  'input-required-result-capability-check': NEEDS_MRTR_SERVER,
  'input-required-result-ignore-extra-params': 'passes',
  'input-required-result-validate-input': 'passes',
  'tasks-lifecycle': 'passes',
  'tasks-capability-negotiation': 'passes',
  'tasks-wire-fields': 'passes',
  'tasks-request-state-removal': 'passes',
  'tasks-mrtr-input': 'passes',
  'tasks-request-headers': 'passes',
  'tasks-dispatch-and-envelope': 'passes',
  'tasks-status-notifications': { checksNothing: 'it has no checks in 0.2.0-alpha.12' },
  'tasks-required-task-error': 'passes',
  'tasks-mrtr-composition': {
    fails:
      'its first round must be an InputRequiredResult naming the key user_name before any task exists: taskgate cannot know that a 2025 tool will ask for input before it runs it as a task, nor name its keys',
  },
  'json-schema-2020-12': 'passes',
  'http-header-validation': 'passes',
  'http-custom-header-server-validation': 'passes',
};

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
 * (TASK_POLICY_2026). The input-required-result-* scenarios pass now that the server names its own keys
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

/**
 * 0.2.0-alpha.12 `--requirements 2025-11-25` through taskgate in front of conformance-modern-server.js: a
 * 2025 client of a 2026-07-28 server, through the translator (the server's input_required rounds become
 * 2025 requests to the client; ping and logging/setLevel are answered by taskgate; resources/subscribe is
 * followed by the subscriptions/listen taskgate holds upstream).
 */
const THROUGH_TASKGATE_MODERN_2025_REQUIREMENTS = table(SCENARIOS_2025_REQUIREMENTS, {
  'server-sse-polling': TASKGATE_ANSWERS_JSON,
});

/** The fixture servers with the conformance suite's tools: SDK 1.x (2025), SDK v2 (2026-07-28). */
type ConformanceFixture = Extract<FixtureName, 'conformance' | 'conformanceModern'>;

const run0116: SuiteRun = {
  title: '0.1.16',
  suite: '2025',
  selection: SELECT_0_1_16,
  expected: THROUGH_TASKGATE_0_1_16,
};
const run2025 = (expected: Record<string, Expected>): SuiteRun => ({
  title: '0.2.0-alpha.12 --requirements 2025-11-25',
  suite: '2026',
  selection: SELECT_2025_REQUIREMENTS,
  expected,
});
const run2026 = (expected: Record<string, Expected>): SuiteRun => ({
  title: '0.2.0-alpha.12 --requirements 2026-07-28',
  suite: '2026',
  selection: ['--requirements', '2026-07-28', '--timeout', '10000'],
  expected,
});

/** The flags of every gateway here: the 2026-07-28 runs' task policy, and a quick shutdown. */
const FLAGS = [...TASK_POLICY_2026, ...QUICK_SHUTDOWN];

/** A fixture's own HTTP mode. */
async function fixtureTarget(name: ConformanceFixture): Promise<Target> {
  const fixture = await startHttpFixture(name);
  return { url: fixture.url, stop: () => fixture.stop('SIGTERM') };
}

/** taskgate's HTTP front, each session with its own `upstream` child on stdio. */
async function gatewayTarget(upstream: string[]): Promise<Target> {
  const gateway = await Gateway.start(upstream, FLAGS);
  return { url: gateway.url.href, stop: () => gateway.stop() };
}

/** taskgate as a sidecar (`--upstream-url`) in front of a fixture's HTTP mode. */
async function sidecarTarget(name: ConformanceFixture): Promise<Target> {
  const fixture = await startHttpFixture(name);
  const gateway = await Gateway.start([], [...FLAGS, '--upstream-url', fixture.url]).catch(
    async (error: unknown) => {
      await fixture.stop('SIGTERM');
      throw error;
    },
  );
  return {
    url: gateway.url.href,
    stop: async () => {
      await gateway.stop();
      await fixture.stop('SIGTERM');
    },
  };
}

describe('the official conformance suite', () => {
  it('is installed (npm test installs test/conformance)', () => {
    expect(existsSync(NODE_22)).toBe(true);
    expect(existsSync(SUITES['2025'])).toBe(true);
    expect(existsSync(SUITES['2026'])).toBe(true);
  });
});

describeTarget('conformance-server.js directly', () => fixtureTarget('conformance'), [
  run2025(DIRECT_2025_REQUIREMENTS),
]);
describeTarget(
  'taskgate in front of conformance-server.js',
  () => gatewayTarget([process.execPath, FIXTURES.conformance]),
  [run0116, run2025(THROUGH_TASKGATE_2025_REQUIREMENTS), run2026(THROUGH_TASKGATE_2026)],
);
describeTarget(
  'taskgate as a sidecar in front of conformance-server.js over HTTP',
  () => sidecarTarget('conformance'),
  [run0116, run2025(THROUGH_TASKGATE_2025_REQUIREMENTS)],
);
describeTarget(
  'taskgate behind taskgate (over stdio, the outer one speaking 2026-07-28) in front of conformance-server.js',
  () => gatewayTarget([process.execPath, TASKGATE, '--', process.execPath, FIXTURES.conformance]),
  [run0116, run2025(THROUGH_TASKGATE_2025_REQUIREMENTS)],
);
describeTarget('the SDK v2 fixture directly', () => fixtureTarget('conformanceModern'), [
  run2026(DIRECT_MODERN_2026),
]);
describeTarget(
  "taskgate's modern front in front of the SDK v2 fixture",
  () => gatewayTarget([process.execPath, FIXTURES.conformanceModern]),
  [run2026(THROUGH_TASKGATE_MODERN_2026), run2025(THROUGH_TASKGATE_MODERN_2025_REQUIREMENTS)],
);
describeTarget(
  "taskgate's modern front as a sidecar in front of the SDK v2 fixture over HTTP",
  () => sidecarTarget('conformanceModern'),
  [run2026(THROUGH_TASKGATE_MODERN_2026)],
);

/**
 * The official MCP conformance suite's server scenarios (test/conformance: Node 22, the suite in two
 * versions) through taskgate's HTTP front, in front of test/fixtures/conformance-server.js (SDK 1.32,
 * stdio), and against that fixture directly over HTTP, so that a taskgate bug can be told from a gap in
 * the fixture: a scenario that passes directly but fails through taskgate is a taskgate bug.
 *
 * Each table says, per scenario, whether it passes or why it fails. A scenario that behaves otherwise
 * fails its test, in both directions: once a failing scenario passes, drop its entry.
 */
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NODE_22, runServerScenarios, SUITES, type ScenarioOutcome } from '../conformance/suite.js';
import { startHttpFixture, type HttpFixture } from '../helpers/http-fixture.js';
import { FIXTURES, Gateway } from '../helpers/taskgate.js';

type Expected = 'passes' | { fails: string };

/** The scenarios of 0.1.16 (`--suite all`, pending ones included), in the order the suite runs them. */
const SCENARIOS_2025 = [
  'server-initialize',
  'logging-set-level',
  'ping',
  'completion-complete',
  'tools-list',
  'tools-call-simple-text',
  'tools-call-image',
  'tools-call-audio',
  'tools-call-embedded-resource',
  'tools-call-mixed-content',
  'tools-call-with-logging',
  'tools-call-error',
  'tools-call-with-progress',
  'tools-call-sampling',
  'tools-call-elicitation',
  'json-schema-2020-12',
  'elicitation-sep1034-defaults',
  'server-sse-polling',
  'server-sse-multiple-streams',
  'elicitation-sep1330-enums',
  'resources-list',
  'resources-read-text',
  'resources-read-binary',
  'resources-templates-read',
  'resources-subscribe',
  'resources-unsubscribe',
  'prompts-list',
  'prompts-get-simple',
  'prompts-get-with-args',
  'prompts-get-embedded-resource',
  'prompts-get-with-image',
  'dns-rebinding-protection',
] as const;

/** 0.1.16 against the fixture's own HTTP mode (test/fixtures/http-serve.js). */
const DIRECT_2025: Partial<Record<(typeof SCENARIOS_2025)[number], Expected>> = {
  'dns-rebinding-protection': {
    fails:
      'http-serve.js checks neither Host nor Origin (a fixture, not a product); taskgate answers 403 to a foreign Origin',
  },
};

/** 0.1.16 through taskgate. */
const THROUGH_TASKGATE_2025: Partial<Record<(typeof SCENARIOS_2025)[number], Expected>> = {};

/** Why a 2026-07-28 scenario fails through taskgate today. */
const NO_MODERN_FRONT =
  'no modern front yet: taskgate answers a 2026-07-28 request (no initialize, MCP-Protocol-Version 2026-07-28) with HTTP 400, -32600 "Unsupported MCP-Protocol-Version"';
const NO_MODERN_FRONT_ID_NULL = `${NO_MODERN_FRONT}, and with id null, which the suite's schema check refuses`;
/** Where the 2025 fixture lacks what a 2026 scenario calls, so that it fails even with a modern front. */
const fixtureLacks = (what: string): Expected => ({
  fails: `${NO_MODERN_FRONT}; also, conformance-server.js has no ${what}`,
});

/**
 * 0.2.0-alpha.12 `--requirements 2026-07-28` through taskgate: the scored scenarios, then the ones it runs
 * but does not score (the tasks extension, and three pending ones), in the order the suite runs them.
 */
const THROUGH_TASKGATE_2026: Record<string, Expected> = {
  'server-stateless': { fails: NO_MODERN_FRONT_ID_NULL },
  'completion-complete': { fails: NO_MODERN_FRONT },
  'tools-list': { fails: NO_MODERN_FRONT },
  'tools-call-simple-text': { fails: NO_MODERN_FRONT },
  'tools-call-image': { fails: NO_MODERN_FRONT },
  'tools-call-audio': { fails: NO_MODERN_FRONT },
  'tools-call-embedded-resource': { fails: NO_MODERN_FRONT },
  'tools-call-mixed-content': { fails: NO_MODERN_FRONT },
  'tools-call-error': { fails: NO_MODERN_FRONT },
  'tools-call-with-progress': { fails: NO_MODERN_FRONT },
  'server-sse-multiple-streams': { fails: NO_MODERN_FRONT },
  'resources-list': { fails: NO_MODERN_FRONT },
  'resources-read-text': { fails: NO_MODERN_FRONT },
  'resources-read-binary': { fails: NO_MODERN_FRONT },
  'resources-templates-read': { fails: NO_MODERN_FRONT },
  'sep-2164-resource-not-found': { fails: NO_MODERN_FRONT_ID_NULL },
  'prompts-list': { fails: NO_MODERN_FRONT },
  'prompts-get-simple': { fails: NO_MODERN_FRONT },
  'prompts-get-with-args': { fails: NO_MODERN_FRONT },
  'prompts-get-embedded-resource': { fails: NO_MODERN_FRONT },
  'prompts-get-with-image': { fails: NO_MODERN_FRONT },
  // The foreign Host is refused (as by any 2025 request); the valid one is a 2026 request.
  'dns-rebinding-protection': { fails: NO_MODERN_FRONT },
  caching: { fails: NO_MODERN_FRONT },
  'input-required-result-basic-elicitation': fixtureLacks('test_input_required_result_elicitation'),
  'input-required-result-basic-sampling': fixtureLacks('test_input_required_result_sampling'),
  'input-required-result-basic-list-roots': fixtureLacks('test_input_required_result_list_roots'),
  'input-required-result-request-state': fixtureLacks('test_input_required_result_request_state'),
  'input-required-result-multiple-input-requests': fixtureLacks('test_input_required_result_multiple_inputs'),
  'input-required-result-multi-round': fixtureLacks('test_input_required_result_multi_round'),
  'input-required-result-missing-input-response': { fails: NO_MODERN_FRONT_ID_NULL },
  'input-required-result-non-tool-request': fixtureLacks('test_input_required_result_prompt prompt'),
  'input-required-result-result-type': fixtureLacks('test_input_required_result_elicitation'),
  'input-required-result-unsupported-methods': { fails: NO_MODERN_FRONT_ID_NULL },
  'input-required-result-tampered-state': fixtureLacks('test_input_required_result_tampered_state'),
  'input-required-result-capability-check': fixtureLacks('test_input_required_result_capabilities'),
  'input-required-result-ignore-extra-params': { fails: NO_MODERN_FRONT_ID_NULL },
  // Its checks accept any JSON-RPC error to a malformed inputResponses, the version refusal included.
  'input-required-result-validate-input': 'passes',
  'tasks-lifecycle': fixtureLacks('greet, slow_compute, failing_job or protocol_error_job'),
  'tasks-capability-negotiation': fixtureLacks('greet or slow_compute'),
  'tasks-wire-fields': fixtureLacks('slow_compute'),
  'tasks-request-state-removal': fixtureLacks('slow_compute'),
  'tasks-mrtr-input': fixtureLacks('confirm_delete or multi_input'),
  'tasks-request-headers': fixtureLacks('slow_compute'),
  'tasks-dispatch-and-envelope': {
    fails: `${NO_MODERN_FRONT}: -32600 where it expects -32601 for the removed tasks/result and tasks/list`,
  },
  // It has no checks in 0.2.0-alpha.12: nothing to fail.
  'tasks-status-notifications': 'passes',
  'tasks-required-task-error': fixtureLacks('test_tool_with_task (taskSupport required)'),
  'tasks-mrtr-composition': fixtureLacks('confirm_delete'),
  'json-schema-2020-12': { fails: NO_MODERN_FRONT },
  'http-header-validation': { fails: NO_MODERN_FRONT },
  'http-custom-header-server-validation': fixtureLacks('test_custom_headers'),
};

/** Whole-suite bounds: the 2025 suite through taskgate starts one upstream per scenario. */
const SUITE_TIMEOUT_MS = 90_000;

function expectOutcomes(
  outcomes: () => Map<string, ScenarioOutcome>,
  scenarios: readonly string[],
  expected: Partial<Record<string, Expected>>,
): void {
  it('runs exactly the scenarios of the table', () => {
    expect([...outcomes().keys()]).toEqual(scenarios);
  });

  it.each(scenarios)('%s', (scenario) => {
    const outcome = outcomes().get(scenario);
    const wanted = expected[scenario] ?? 'passes';
    const got = outcome === undefined ? 'not run' : outcome.failed === 0 ? 'passes' : 'fails';
    const why = wanted === 'passes' ? 'expected to pass' : `expected to fail: ${wanted.fails}`;
    expect(got, `${why}\n${outcome?.failures.join('\n') ?? ''}`).toBe(
      wanted === 'passes' ? 'passes' : 'fails',
    );
  });
}

describe('the official conformance suite', () => {
  it('is installed (npm test installs test/conformance)', () => {
    expect(existsSync(NODE_22)).toBe(true);
    expect(existsSync(SUITES['2025'])).toBe(true);
    expect(existsSync(SUITES['2026'])).toBe(true);
  });

  describe('0.1.16 (2025-11-25) against the fixture directly', () => {
    let fixture: HttpFixture;
    let outcomes: Map<string, ScenarioOutcome>;

    beforeAll(async () => {
      fixture = await startHttpFixture('conformance');
      outcomes = await runServerScenarios('2025', fixture.url, ['--suite', 'all'], SUITE_TIMEOUT_MS);
    }, SUITE_TIMEOUT_MS + 15_000);
    afterAll(() => fixture?.stop('SIGTERM'));

    expectOutcomes(() => outcomes, SCENARIOS_2025, DIRECT_2025);
  });

  describe('0.1.16 (2025-11-25) through taskgate in front of the fixture', () => {
    let gateway: Gateway;
    let outcomes: Map<string, ScenarioOutcome>;

    beforeAll(async () => {
      gateway = await Gateway.start([process.execPath, FIXTURES.conformance]);
      outcomes = await runServerScenarios('2025', gateway.url.href, ['--suite', 'all'], SUITE_TIMEOUT_MS);
    }, SUITE_TIMEOUT_MS + 15_000);
    afterAll(() => gateway?.stop());

    expectOutcomes(() => outcomes, SCENARIOS_2025, THROUGH_TASKGATE_2025);
  });

  describe('0.2.0-alpha.12 --requirements 2026-07-28 through taskgate in front of the fixture', () => {
    let gateway: Gateway;
    let outcomes: Map<string, ScenarioOutcome>;

    beforeAll(async () => {
      gateway = await Gateway.start([process.execPath, FIXTURES.conformance]);
      outcomes = await runServerScenarios(
        '2026',
        gateway.url.href,
        ['--requirements', '2026-07-28', '--timeout', '10000'],
        SUITE_TIMEOUT_MS,
      );
    }, SUITE_TIMEOUT_MS + 15_000);
    afterAll(() => gateway?.stop());

    expectOutcomes(() => outcomes, Object.keys(THROUGH_TASKGATE_2026), THROUGH_TASKGATE_2026);
  });
});

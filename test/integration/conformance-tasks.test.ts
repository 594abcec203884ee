/**
 * The tasks extension's server scenarios (SEP-2663) of the official conformance suite 0.2.0-alpha.12
 * (test/conformance, on Node 22) through taskgate's HTTP front, in front of a 2025 server without tasks
 * (test/fixtures/conformance-tasks-tools.js, SDK 1.32 on stdio) whose tools taskgate's policy makes tasks;
 * and in front of a native 2026-07-28 task server (test/fixtures/conformance-v2-tasks.js) on stdio and as a
 * sidecar, beside the same scenarios run against that server directly (issue 34).
 *
 * The tasks-* scenarios are extension scenarios: no `--suite` selects them, so each runs on its own,
 * `--scenario NAME --spec-version 2026-07-28 --force` (the stateless 2026-07-28 client of the suite, with
 * the extension declared in each request's `_meta` where the scenario wants it), a target's one after the
 * other in one Node 22 process (test/conformance/scenarios-in-one-process.js).
 *
 * The table names, per scenario, every check expected to fail, with why; a scenario is expected to pass
 * every other check it runs (and to run at least one), or to have no check at all (and why). A failing
 * check the table does not name fails the scenario's test, and so does a named one that passes: once it
 * passes, its entry has to go.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runEachServerScenario, type ScenarioOutcome } from '../conformance/suite.js';
import { startHttpFixture } from '../helpers/http-fixture.js';
import { FIXTURES, Gateway } from '../helpers/taskgate.js';

/** What a scenario gives: its checks all pass but these (check id → why), or it has no check (why). */
type Expected = { failing: Record<string, string> } | { checksNothing: string };

/**
 * Which tools taskgate runs as tasks (first match wins), as the scenarios' "Required server fixtures" say:
 * failing_job and test_tool_with_task are task-required (tasks-required-task-error wants -32021 for
 * failing_job from a client without the extension); slow_compute is task-optional (it runs as a plain call
 * for such a client, tasks-capability-negotiation); greet is sync-only.
 */
const TASK_POLICY = [
  'failing_job=required',
  'test_tool_with_task=required',
  'slow_compute=optional',
  'protocol_error_job=optional',
  'confirm_delete=optional',
  'multi_input=optional',
  '*=forbidden',
].flatMap((rule) => ['--tool-task-support', rule]);

const PASSES: Expected = { failing: {} };

/**
 * The tasks-* scenarios of 0.2.0-alpha.12, in the order `conformance list` gives them, each with what it
 * calls (every scenario connects as the stateless 2026-07-28 client; all but required-task-error declare
 * the extension; each that sends anything also gets a `wire-schema-valid` check of every answer against the 2026-07-28 schema).
 */
const THROUGH_TASKGATE: Record<string, Expected> = {
  // greet (sync); slow_compute {2} becomes a flat CreateTaskResult, tasks/get while working, then completed
  // with result.content; failing_job: completed + result.isError; protocol_error_job: failed + error
  // {code, message}, no result; slow_compute {60} cancelled: an empty {resultType: complete} ack, then a
  // terminal status; the same ack for a task already done.
  'tasks-lifecycle': PASSES,
  // server/discover declares capabilities.extensions[tasks] (no v1 capabilities.tasks); without the
  // extension, tasks/get|update|cancel are -32021 and slow_compute {0} is a plain result; declaring it in one
  // request's _meta makes slow_compute {1} a task.
  'tasks-capability-negotiation': PASSES,
  // slow_compute {1}: ttlMs (null or a positive integer), pollIntervalMs, no ttl / pollInterval; still there
  // 500 ms after it completed; no related-task _meta on the inlined result.
  'tasks-wire-fields': PASSES,
  // slow_compute {60}: neither its CreateTaskResult nor tasks/get carries requestState.
  'tasks-request-state-removal': PASSES,
  // confirm_delete: input_required with an inputRequests map of elicitation/create; tasks/update answers
  // {confirm: true}, acked empty, then completed; multi_input: two keys at once, answered one at a time (the
  // answered key leaves, the task stays input_required until the second).
  'tasks-mrtr-input': PASSES,
  // greet with Mcp-Method; slow_compute {60}, then tasks/get with matching Mcp-Method and Mcp-Name; a
  // mismatched Mcp-Method on tools/call and a mismatched Mcp-Name on tasks/get are -32020.
  'tasks-request-headers': PASSES,
  // tasks/result and tasks/list are -32601; failing_job becomes a task with no hint; greet with the legacy
  // `task` param stays plain; slow_compute {0} either way; resultType "complete" on plain results, tasks/get,
  // the cancel ack and the tasks/update ack (confirm_delete, an unknown key); tasks/get right after creation
  // resolves; an unknown taskId is -32602.
  'tasks-dispatch-and-envelope': PASSES,
  'tasks-status-notifications': {
    checksNothing:
      'in 0.2.0-alpha.12 it only reports one SKIPPED check (its harness awaits a subscriptions/listen rewrite)',
  },
  // Without the extension, failing_job (task-required) is -32021 with data.requiredCapabilities.extensions.
  'tasks-required-task-error': PASSES,
  // test_tool_with_task: round 1 input_required (MRTR, no taskId), round 2 with the answer a CreateTaskResult
  // (no requestState, no inputRequests), completed with a result naming "Alice".
  'tasks-mrtr-composition': {
    failing: {
      'sep-2663-mrtr-synchronous-before-task-creation':
        "it wants a tool that first answers input_required itself (MRTR) and becomes a task only on the retry; a 2025 server has no such tool: taskgate makes the task when the call arrives (test_tool_with_task is task-required, as the scenario asks; and for an optional tool, input asked within promoteAfter makes the call a task too, README), and the elicitation the tool sends once it runs is that task's inputRequests on tasks/get, so round 1 is a CreateTaskResult",
    },
  },
};

/** The CLI's own limit per scenario: some wait out slow tools. */
const SCENARIO_TIMEOUT_MS = 30_000;
/** Bounds a target's run, its scenarios one after the other in one Node 22 process. */
const runTimeoutMs = (scenarios: number): number => scenarios * SCENARIO_TIMEOUT_MS + 10_000;

/**
 * In front of a server with tasks of its own (test/fixtures/conformance-v2-tasks.js, a native 2026-07-28
 * task server with the scenarios' tools, each deciding what becomes a task): directly every scenario
 * passes, and through taskgate its decisions are passed through untouched (issue 34, fix 4), but for one
 * thing taskgate does on purpose.
 */
const NATIVE_DIRECT: Record<string, Expected> = Object.fromEntries(
  Object.entries(THROUGH_TASKGATE).map(([scenario, expected]) => [
    scenario,
    'checksNothing' in expected ? expected : PASSES,
  ]),
);
const NATIVE_THROUGH_TASKGATE: Record<string, Expected> = {
  ...NATIVE_DIRECT,
  'tasks-required-task-error': {
    failing: {
      'sep-2663-server-returns-missing-capability-when-required':
        'taskgate unwraps what a client cannot do itself: failing_job runs only as a task upstream, so for a client without the extension taskgate runs that task and answers with its outcome (an isError result), where the server alone answers -32021',
    },
  },
};

/** The suite's run of every scenario of `expected` against `url`. */
const runScenarios = (url: string, expected: Record<string, Expected>) =>
  runEachServerScenario(
    '2026',
    url,
    Object.keys(expected),
    ['--spec-version', '2026-07-28', '--force', '--timeout', String(SCENARIO_TIMEOUT_MS)],
    runTimeoutMs(Object.keys(expected).length),
  );

interface Target {
  url: string;
  stop(): Promise<void>;
}

/** Every target's run, started by the first describe to need one: the targets' runs go on together. */
const runs: (() => Promise<unknown>)[] = [];
/** What they started, all stopped once the file is over (a target filtered out may have started too). */
const startedTargets: Target[] = [];
afterAll(() => Promise.all(startedTargets.splice(0).map((target) => target.stop())));

/**
 * One describe per target: the scenarios run once, each then held to its entry of `expected`. The runs of
 * all targets go on at once (each mostly waits on its tools and its gateway), each with its own bound.
 */
function describeTarget(
  title: string,
  start: () => Promise<Target>,
  expected: Record<string, Expected>,
): void {
  let run: Promise<{ outcomes: Map<string, ScenarioOutcome> }> | undefined;
  const begin = () =>
    (run ??= start().then(async (target) => {
      startedTargets.push(target);
      const started = Date.now();
      const outcomes = await runScenarios(target.url, expected);
      console.info(`${title}: ${summary(outcomes)} (${Date.now() - started} ms)`);
      return { outcomes };
    }));
  runs.push(begin);
  describe(title, () => {
    let outcomes: Map<string, ScenarioOutcome>;

    beforeAll(
      async () => {
        for (const other of runs) void other().catch(() => undefined);
        ({ outcomes } = await begin());
      },
      runTimeoutMs(Object.keys(expected).length) + 15_000,
    );
    it.each(Object.entries(expected))('%s', (scenario, wanted) => {
      const outcome = outcomes.get(scenario);
      expect(outcome, `${scenario} did not run`).toBeDefined();
      const failures = outcome!.failures.map((failure) => `\n  ${failure}`).join('');
      if ('checksNothing' in wanted) {
        expect(outcome!.passed + outcome!.failed, `the table says: no check (${wanted.checksNothing})`).toBe(
          0,
        );
        return;
      }
      expect(outcome!.passed, `no check passed${failures}`).toBeGreaterThan(0);
      expect(
        [...outcome!.failedIds].sort(),
        `the table says these checks fail: ${JSON.stringify(wanted.failing)}${failures}`,
      ).toEqual(Object.keys(wanted.failing).sort());
    });
  });
}

/** How many scenarios passed every check, and how many checks passed and failed. */
function summary(outcomes: Map<string, ScenarioOutcome>): string {
  const all = [...outcomes.values()];
  const passing = all.filter((outcome) => outcome.failed === 0 && outcome.passed > 0).length;
  const passed = all.reduce((total, outcome) => total + outcome.passed, 0);
  const failed = all.reduce((total, outcome) => total + outcome.failed, 0);
  return `scenarios: ${passing} of ${all.length} pass every check; checks: ${passed} passed, ${failed} failed`;
}

/** taskgate's HTTP front; tasks-mrtr-composition leaves a task waiting for input it never gives, so a quick shutdown. */
async function gateway(upstream: string[], flags: string[] = []): Promise<Target> {
  const started = await Gateway.start(upstream, [...flags, '--shutdown-grace', '1000']);
  return { url: started.url.href, stop: () => started.stop() };
}

describe('the tasks-* scenarios of the conformance suite 0.2.0-alpha.12', () => {
  describeTarget(
    'through taskgate in front of a 2025 server without tasks',
    () => gateway([process.execPath, FIXTURES.conformanceTasks], TASK_POLICY),
    THROUGH_TASKGATE,
  );
  describeTarget(
    'directly against a native 2026-07-28 task server',
    async () => {
      const fixture = await startHttpFixture('conformanceV2Tasks');
      return { url: fixture.url, stop: () => fixture.stop('SIGTERM') };
    },
    NATIVE_DIRECT,
  );
  describeTarget(
    'through taskgate in front of a native 2026-07-28 task server on stdio',
    () => gateway([process.execPath, FIXTURES.conformanceV2Tasks]),
    NATIVE_THROUGH_TASKGATE,
  );
  describeTarget(
    'through taskgate as a sidecar in front of a native 2026-07-28 task server over HTTP',
    async () => {
      const fixture = await startHttpFixture('conformanceV2Tasks');
      const through = await gateway([], ['--upstream-url', fixture.url]).catch(async (error: unknown) => {
        await fixture.stop('SIGTERM');
        throw error;
      });
      return {
        url: through.url,
        stop: async () => {
          await through.stop();
          await fixture.stop('SIGTERM');
        },
      };
    },
    NATIVE_THROUGH_TASKGATE,
  );
});

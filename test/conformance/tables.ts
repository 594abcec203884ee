/**
 * Runs of the official conformance suite's server scenarios as vitest tests, each against a table: per
 * scenario, it passes, or it fails (and why), or it has no check that could pass or fail (and why). A
 * scenario that gives anything else fails its test, in every direction: once a failing scenario passes, its
 * entry has to change.
 *
 * One target (a fixture, or taskgate in front of one) serves every run of a `describeTarget`, the runs at
 * once: a target costs a process start or two, and no run depends on another's sessions (each run's
 * sessions are its own, as a gateway's clients are).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runServerScenarios, type ScenarioOutcome, type SUITES } from './suite.js';

/** What a scenario gives: every check passes, some fail (why), or it has no check to pass or fail (why). */
export type Expected = 'passes' | { fails: string } | { checksNothing: string };

/** A table of `scenarios`, each expected to pass unless `exceptions` says otherwise. */
export const table = (
  scenarios: readonly string[],
  exceptions: Record<string, Expected> = {},
): Record<string, Expected> =>
  Object.fromEntries(scenarios.map((scenario) => [scenario, exceptions[scenario] ?? 'passes']));

/** The server scenarios of 0.1.16 (`--suite all`: pending ones included), in the order it runs them. */
export const SCENARIOS_0_1_16 = [
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
];

/**
 * 0.2.0-alpha.12 `--requirements 2025-11-25`: the same scenarios with more checks (each message against the
 * spec's JSON schema, SSE priming under 2025-11-25), scored ones first, then three it runs unscored.
 */
export const SCENARIOS_2025_REQUIREMENTS = [
  ...SCENARIOS_0_1_16.filter((scenario) => !['json-schema-2020-12', 'server-sse-polling'].includes(scenario)),
  'server-session-lifecycle',
  'json-schema-2020-12',
  'server-sse-polling',
];

/** The scenarios in which a tool asks the client something while it runs (sampling, elicitation). */
export const ASKING_SCENARIOS = [
  'tools-call-sampling',
  'tools-call-elicitation',
  'elicitation-sep1034-defaults',
  'elicitation-sep1330-enums',
];

export const SELECT_0_1_16 = ['--suite', 'all'];
export const SELECT_2025_REQUIREMENTS = ['--requirements', '2025-11-25'];

/** What the fixtures served by http-serve.js fail where taskgate passes. */
export const NO_HOST_CHECK: Expected = {
  fails:
    'http-serve.js checks neither Host nor Origin (a fixture, not a product); taskgate answers 403 to a foreign Origin',
};
/**
 * server-sse-polling through taskgate's front, where nothing upstream polls that client's stream: an
 * upstream on stdio, or a client before 2025-11-25 (0.1.16's POST says 2025-03-26), which cannot resume.
 */
export const TASKGATE_ANSWERS_JSON: Expected = {
  checksNothing:
    'taskgate answers that POST with one JSON body, as the transport allows (its upstream is on stdio, or its client cannot resume a stream closed under it), so the SSE checks do not apply',
};

/**
 * Bounds a whole run: through taskgate, each scenario's session may start an upstream process. A gateway's
 * runs took 86 s at a load of 27 on two cores; a hang still ends in the bound.
 */
export const SUITE_TIMEOUT_MS = 180_000;

export interface SuiteRun {
  title: string;
  suite: keyof typeof SUITES;
  /** Which scenarios, as the CLI's options. */
  selection: string[];
  expected: Record<string, Expected>;
  /** Bounds this run, when SUITE_TIMEOUT_MS does not fit it. */
  timeoutMs?: number;
}

export const run0116 = (expected: Record<string, Expected>): SuiteRun => ({
  title: '0.1.16',
  suite: '2025',
  selection: SELECT_0_1_16,
  expected,
});
export const run2025 = (expected: Record<string, Expected>): SuiteRun => ({
  title: '0.2.0-alpha.12 --requirements 2025-11-25',
  suite: '2026',
  selection: SELECT_2025_REQUIREMENTS,
  expected,
});
/** `scenarioTimeoutMs`: each scenario's own bound in the suite (10 s unless given). */
export const run2026 = (expected: Record<string, Expected>, scenarioTimeoutMs = 10_000): SuiteRun => ({
  title: '0.2.0-alpha.12 --requirements 2026-07-28',
  suite: '2026',
  selection: ['--requirements', '2026-07-28', '--timeout', String(scenarioTimeoutMs)],
  expected,
});

export interface Target {
  url: string;
  stop(): Promise<void>;
}

const outcomeOf = (outcome: ScenarioOutcome | undefined): string =>
  outcome === undefined
    ? 'not run'
    : outcome.failed > 0
      ? 'fails'
      : outcome.passed === 0
        ? 'checks nothing'
        : 'passes';

const wantedOutcome = (expected: Expected): string =>
  expected === 'passes' ? 'passes' : 'fails' in expected ? 'fails' : 'checks nothing';

/** How many scenarios passed, failed and checked nothing, and how many checks passed and failed. */
function summary(outcomes: Map<string, ScenarioOutcome>): string {
  const counts = new Map<string, number>();
  let passed = 0;
  let failed = 0;
  for (const outcome of outcomes.values()) {
    const what = outcomeOf(outcome);
    counts.set(what, (counts.get(what) ?? 0) + 1);
    passed += outcome.passed;
    failed += outcome.failed;
  }
  const scenarios = [...counts].map(([what, count]) => `${count} ${what}`).join(', ');
  return `scenarios: ${scenarios}; checks: ${passed} passed, ${failed} failed`;
}

/** Every target's runs of this test file, started by the first describe to need one: targets go on together. */
const targetRuns: (() => Promise<unknown>)[] = [];
/** What they started, all stopped once the file is over (a target filtered out may have started too). */
const startedTargets: Target[] = [];

/**
 * Starts the target once, runs each of `runs` against it, then one test per scenario of each table. The
 * runs of a target, and the targets of a file, go at once (each run mostly waits on scenarios' timings and
 * on the sessions' upstream processes).
 */
export function describeTarget(title: string, start: () => Promise<Target>, runs: SuiteRun[]): void {
  const timeoutOf = (run: SuiteRun): number => run.timeoutMs ?? SUITE_TIMEOUT_MS;
  let running: Promise<{ target: Target; outcomes: Map<SuiteRun, Map<string, ScenarioOutcome>> }> | undefined;
  const begin = () =>
    (running ??= start().then(async (target) => {
      startedTargets.push(target);
      const outcomes = new Map<SuiteRun, Map<string, ScenarioOutcome>>();
      await Promise.all(
        runs.map(async (run) => {
          const started = Date.now();
          const outcome = await runServerScenarios(run.suite, target.url, run.selection, timeoutOf(run));
          outcomes.set(run, outcome);
          console.info(`${title}, ${run.title}: ${summary(outcome)} (${Date.now() - started} ms)`);
        }),
      );
      return { target, outcomes };
    }));
  if (targetRuns.length === 0) {
    afterAll(() => Promise.all(startedTargets.splice(0).map((target) => target.stop())));
  }
  targetRuns.push(begin);
  describe(title, () => {
    let outcomes = new Map<SuiteRun, Map<string, ScenarioOutcome>>();

    beforeAll(
      async () => {
        for (const other of targetRuns) void other().catch(() => undefined);
        ({ outcomes } = await begin());
      },
      runs.reduce((total, run) => total + timeoutOf(run), 20_000),
    );

    describe.each(runs.map((run) => [run.title, run] as const))('%s', (_title, run) => {
      it('runs exactly the scenarios of its table, in order', () => {
        expect([...(outcomes.get(run)?.keys() ?? [])]).toEqual(Object.keys(run.expected));
      });

      it.each(Object.entries(run.expected))('%s', (scenario, expected) => {
        const outcome = outcomes.get(run)?.get(scenario);
        const reason = typeof expected === 'string' ? '' : ` (${Object.values(expected)[0]})`;
        const failures = outcome?.failures.map((failure) => `\n  ${failure}`).join('') ?? '';
        expect(outcomeOf(outcome), `the table says: ${wantedOutcome(expected)}${reason}${failures}`).toBe(
          wantedOutcome(expected),
        );
      });
    });
  });
}

/**
 * Runs one version of the official MCP conformance suite (installed in this folder, on its own Node 22)
 * against a server URL, and reads what each server scenario gave; or runs a client scenario with a command
 * as its client.
 *
 * The CLI prints `=== Running scenario: <name> ===` as it starts each scenario and, with `-o DIR`, saves the
 * scenario's checks in `DIR/server-<name>-<timestamp>/checks.json` once it ends; a scenario that throws
 * leaves that folder empty and prints `Failed to run scenario <name>: <error>` (the suite counts that as one
 * failed check). Reading these rather than the closing summary keeps what a run that had to be stopped
 * did get through.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = (path: string): string => fileURLToPath(new URL(path, import.meta.url));

export const NODE_22 = here('node_modules/node/bin/node');

const IN_ONE_PROCESS = here('scenarios-in-one-process.js');

export const SUITES = {
  /** 0.1.16: the 2025-06-18 and 2025-11-25 scenarios. */
  '2025': here('node_modules/conformance-2025/dist/index.js'),
  /** 0.2.0-alpha.12: adds 2026-07-28 and the tasks extension. */
  '2026': here('node_modules/conformance-2026/dist/index.js'),
} as const;

export interface ScenarioOutcome {
  passed: number;
  failed: number;
  /** The error message of each failed check, or why the scenario did not run to its end. */
  failures: string[];
  /** The id of each failed check (`did-not-end` when the scenario did not run to its end), in order. */
  failedIds: string[];
}

interface Check {
  status: string;
  id?: string;
  name?: string;
  errorMessage?: string;
}

/** The failed check's id for a scenario that did not run to its end (it threw, or was stopped). */
export const DID_NOT_END = 'did-not-end';

const STARTED = /^=== Running scenario: (\S+) ===$/gm;
const CHECKS_DIR = /^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/;
const COULD_NOT_RUN = /^Failed to run scenario (\S+): (.*)$/gm;

/**
 * Runs the suite's server scenarios chosen by `selection` (e.g. `--suite all`) against `url`; each scenario
 * it started, in order, with its outcome. A run still going after `timeoutMs` is stopped.
 */
export function runServerScenarios(
  suite: keyof typeof SUITES,
  url: string,
  selection: string[],
  timeoutMs: number,
): Promise<Map<string, ScenarioOutcome>> {
  return runAndRead(
    (outputDir) => [SUITES[suite], 'server', '--url', url, ...selection, '-o', outputDir],
    timeoutMs,
  );
}

/**
 * Runs each of `scenarios` on its own (`--scenario NAME`, then `flags`, e.g. `--spec-version 2026-07-28
 * --force` for extension scenarios, which no `--suite` selects), one after the other in one Node 22
 * process (scenarios-in-one-process.js), against `url`; each with its outcome, in order. A run still
 * going after `timeoutMs` is stopped.
 */
export function runEachServerScenario(
  suite: keyof typeof SUITES,
  url: string,
  scenarios: readonly string[],
  flags: string[],
  timeoutMs: number,
): Promise<Map<string, ScenarioOutcome>> {
  return runAndRead(
    (outputDir) => [IN_ONE_PROCESS, SUITES[suite], url, outputDir, JSON.stringify(flags), ...scenarios],
    timeoutMs,
  );
}

/**
 * Runs Node 22 with the arguments `argsFor` gives for an output folder of its own; each scenario the run
 * started, in order, with the checks it saved there, or why it did not end.
 */
async function runAndRead(
  argsFor: (outputDir: string) => string[],
  timeoutMs: number,
): Promise<Map<string, ScenarioOutcome>> {
  const outputDir = await mkdtemp(join(tmpdir(), 'taskgate-conformance-'));
  try {
    const { stdout, stderr, stopped } = await run(argsFor(outputDir), timeoutMs);
    const outcomes = new Map<string, ScenarioOutcome>();
    for (const [, name] of stdout.matchAll(STARTED))
      outcomes.set(name!, { passed: 0, failed: 0, failures: [], failedIds: [] });
    if (outcomes.size === 0) throw new Error(`the suite ran no scenario:\n${stdout}\n${stderr}`);

    const ended = await readChecks(outputDir, outcomes);
    for (const [, name, error] of stderr.matchAll(COULD_NOT_RUN)) {
      const outcome = outcomes.get(name!);
      if (outcome === undefined) continue;
      ended.add(name!);
      outcome.failed++;
      outcome.failures.push(`could not run: ${error}`);
      outcome.failedIds.push(DID_NOT_END);
    }
    for (const [name, outcome] of outcomes) {
      if (ended.has(name)) continue;
      outcome.failed++;
      outcome.failedIds.push(DID_NOT_END);
      outcome.failures.push(
        stopped ? `still running when the suite was stopped after ${timeoutMs} ms` : `no result:\n${stderr}`,
      );
    }
    return outcomes;
  } finally {
    await rm(outputDir, { recursive: true, force: true });
  }
}

/** A check a client scenario recorded: INFO ones too, which say what the scenario's server saw and did. */
export interface RecordedCheck {
  id: string;
  status: string;
  description: string;
  timestamp: string;
}

/**
 * Runs the client scenario `scenario` with `command` as its client (the CLI starts it through a shell with
 * the scenario server's URL appended); every check it recorded, in order, or why it gave none.
 */
export async function runClientScenario(
  suite: keyof typeof SUITES,
  command: string,
  scenario: string,
  timeoutMs: number,
): Promise<RecordedCheck[]> {
  const outputDir = await mkdtemp(join(tmpdir(), 'taskgate-conformance-'));
  try {
    const { stdout, stderr, stopped } = await run(
      [SUITES[suite], 'client', '--command', command, '--scenario', scenario, '-o', outputDir],
      timeoutMs,
    );
    const [dir] = (await readdir(outputDir)).filter((name) => name.startsWith(`${scenario}-`));
    const checksFile = dir === undefined ? undefined : join(outputDir, dir, 'checks.json');
    if (checksFile === undefined || !existsSync(checksFile)) {
      const why = stopped ? `it was stopped after ${timeoutMs} ms` : 'it saved no checks';
      throw new Error(`client scenario ${scenario} gave no result (${why}):\n${stdout}\n${stderr}`);
    }
    return JSON.parse(await readFile(checksFile, 'utf8')) as RecordedCheck[];
  } finally {
    await rm(outputDir, { recursive: true, force: true });
  }
}

/** Adds the checks each scenario of `outcomes` saved in `outputDir` to its outcome; which scenarios saved any. */
async function readChecks(outputDir: string, outcomes: Map<string, ScenarioOutcome>): Promise<Set<string>> {
  const ended = new Set<string>();
  for (const dir of await readdir(outputDir)) {
    const name = CHECKS_DIR.exec(dir)?.[1];
    const outcome = name === undefined ? undefined : outcomes.get(name);
    const checksFile = join(outputDir, dir, 'checks.json');
    if (outcome === undefined || !existsSync(checksFile)) continue;
    ended.add(name!);
    for (const check of JSON.parse(await readFile(checksFile, 'utf8')) as Check[]) {
      if (check.status === 'SUCCESS') outcome.passed++;
      if (check.status === 'FAILURE') {
        outcome.failed++;
        outcome.failures.push(`${check.name}: ${check.errorMessage}`);
        outcome.failedIds.push(check.id ?? String(check.name));
      }
    }
  }
  return ended;
}

/** The CLI exits 1 when any scenario fails: that is an outcome, as is a run stopped at its time limit. */
function run(
  args: string[],
  timeoutMs: number,
): Promise<{ stdout: string; stderr: string; stopped: boolean }> {
  return new Promise((resolve, reject) => {
    execFile(NODE_22, args, { timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      const stopped = error?.killed === true;
      if (error && error.code !== 1 && !stopped) {
        reject(new Error(`the conformance suite failed (${error.message}):\n${stdout}\n${stderr}`));
      } else resolve({ stdout, stderr, stopped });
    });
  });
}

/**
 * Runs one version of the official MCP conformance suite (installed in this folder, on its own Node 22)
 * against a server URL, and reads what each server scenario gave.
 *
 * The CLI prints one summary line per scenario (`✓ name: 3 passed, 0 failed`) and, with `-o DIR`, saves
 * each scenario's checks in `DIR/server-<scenario>-<timestamp>/checks.json`; a scenario that throws before
 * it has checks gets only its summary line and a `Failed to run scenario <name>: <error>` line.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = (path: string): string => fileURLToPath(new URL(path, import.meta.url));

export const NODE_22 = here('node_modules/node/bin/node');

export const SUITES = {
  /** 0.1.16: the 2025-06-18 and 2025-11-25 scenarios. */
  '2025': here('node_modules/conformance-2025/dist/index.js'),
  /** 0.2.0-alpha.12: adds 2026-07-28 and the tasks extension. */
  '2026': here('node_modules/conformance-2026/dist/index.js'),
} as const;

export interface ScenarioOutcome {
  passed: number;
  failed: number;
  /** The error message of each failed check, or why the scenario could not run. */
  failures: string[];
}

interface Check {
  status: string;
  name?: string;
  errorMessage?: string;
}

const SUMMARY_LINE = /^[✓✗] (\S+): (\d+) passed, (\d+) failed$/gm;
const CHECKS_DIR = /^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/;
const COULD_NOT_RUN = /^Failed to run scenario (\S+): (.*)$/gm;

/** Runs the suite's server scenarios chosen by `selection` (e.g. `--suite all`) against `url`. */
export async function runServerScenarios(
  suite: keyof typeof SUITES,
  url: string,
  selection: string[],
  timeoutMs: number,
): Promise<Map<string, ScenarioOutcome>> {
  const outputDir = await mkdtemp(join(tmpdir(), 'taskgate-conformance-'));
  try {
    const { stdout, stderr } = await run(
      [SUITES[suite], 'server', '--url', url, ...selection, '-o', outputDir],
      timeoutMs,
    );
    const outcomes = new Map<string, ScenarioOutcome>();
    for (const [, name, passed, failed] of stdout.matchAll(SUMMARY_LINE)) {
      outcomes.set(name!, { passed: Number(passed), failed: Number(failed), failures: [] });
    }
    if (outcomes.size === 0) throw new Error(`the suite reported no scenario:\n${stdout}\n${stderr}`);
    for (const dir of await readdir(outputDir)) {
      const scenario = CHECKS_DIR.exec(dir)?.[1];
      const outcome = scenario === undefined ? undefined : outcomes.get(scenario);
      // A scenario that threw leaves its folder empty.
      const checksFile = join(outputDir, dir, 'checks.json');
      if (outcome === undefined || !existsSync(checksFile)) continue;
      const checks = JSON.parse(await readFile(checksFile, 'utf8')) as Check[];
      for (const check of checks) {
        if (check.status === 'FAILURE') outcome.failures.push(`${check.name}: ${check.errorMessage}`);
      }
    }
    for (const [, name, error] of `${stdout}\n${stderr}`.matchAll(COULD_NOT_RUN)) {
      outcomes.get(name!)?.failures.push(`could not run: ${error}`);
    }
    return outcomes;
  } finally {
    await rm(outputDir, { recursive: true, force: true });
  }
}

/** The CLI exits 1 when any scenario fails: that is an outcome, not an error; anything else is. */
function run(args: string[], timeoutMs: number): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(NODE_22, args, { timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error && error.code !== 1) {
        reject(new Error(`the conformance suite failed (${error.message}):\n${stdout}\n${stderr}`));
      } else resolve({ stdout, stderr });
    });
  });
}

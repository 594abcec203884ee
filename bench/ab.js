// @ts-check
/**
 * Two taskgate builds through the same harness, alternating (issue 15: "no ratio worse than before beyond
 * its run-to-run spread"). Each side is a build's dist/cli.js; everything else — this checkout's bench/,
 * the fixture, bench/taskgate.yaml, the flags — is the same for both, so only taskgate differs.
 *
 *   npm run bench:ab -- [--before <commit>] [--after <commit | directory>] [--rounds N]
 *
 * --before defaults to 2f4f6ee (the last commit before issue 15's restructure), --after to this checkout
 * (built first, uncommitted changes included), --rounds to 5. A commit is built once in a scratch
 * directory, <tmpdir>/taskgate-ab-<sha>, from `git archive` (node_modules linked from this checkout when
 * the lockfiles are the same, `npm ci` there otherwise) and reused by later runs; a directory is a
 * checkout, built there.
 *
 * A round is a session of each side, before then after: every target (direct stdio, raw relay, taskgate
 * stdio→stdio, direct HTTP, taskgate HTTP→stdio, taskgate sidecar) started afresh, warmed up, and one
 * round of run.js's workloads (alternate() and summarize(), issue 9's ratios by report.js's evaluate()).
 * Per figure: each side's median over rounds and its range, after ÷ before round by round, and a verdict:
 * "worse beyond spread" when after's median is worse than before's worst round ("better beyond spread"
 * the other way round). Writes bench/results/<date>T<hhmm>-ab.json and .md (UTC).
 *
 *   BENCH_QUICK=1   run.js's quick settings, to check the tool; writes nothing
 */
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { commit } from './lib/commit.js';
import { runFacts } from './lib/machine.js';
import { evaluate, fmt } from './lib/report.js';
import { median, ratio, round } from './lib/stats.js';
import { TASKGATE_CONFIG, fromRoot, targetsOf } from './lib/targets.js';
import { BLOB_BYTES, SETTINGS, alternate, startAll, summarize } from './run.js';

const DEFAULT_BEFORE = '2f4f6ee';
const QUICK = process.env.BENCH_QUICK === '1';
const ROOT = fromRoot('.');
const started = performance.now();
const log = (/** @type {string} */ line) =>
  process.stderr.write(`[ab ${((performance.now() - started) / 1000).toFixed(0).padStart(4)} s] ${line}\n`);

/**
 * @typedef {{ spec: string, commit: string, dir: string, cli: string, built: string }} Side
 * @typedef {{ id: string, label: string, better: 'lower' | 'higher', value: (results: Record<string, any>,
 *   verdicts: import('./lib/report.js').Verdict[]) => number }} Figure
 */

/** @param {string} id one of issue 9's checks (report.js) */
const verdict = (id) => (/** @type {Record<string, any>} */ _, /** @type {any[]} */ verdicts) =>
  verdicts.find((v) => v.id === id)?.value ?? NaN;
/** @param {string} target @param {(r: any) => number | undefined} pick */
const of = (target, pick) => (/** @type {Record<string, any>} */ results) => pick(results[target]) ?? NaN;

/** Issue 9's 2025-era ratios (the ones that need no peer), each by its check's id in report.js. @type {Figure[]} */
const RATIOS = /** @type {const} */ ([
  ['stdio-latency', 'lower', 'stdio→stdio p50 latency × direct stdio'],
  ['stdio-vs-relay', 'lower', 'stdio→stdio latency ratio ÷ the raw relay’s'],
  ['stdio-throughput', 'higher', 'stdio→stdio calls/s × direct stdio'],
  ['stdio-blob', 'higher', 'stdio→stdio 256 KiB results × direct stdio'],
  ['http-latency-sdk', 'lower', 'HTTP→stdio p50 latency × direct HTTP'],
  ['http-throughput-sdk', 'higher', 'HTTP→stdio calls/s × direct HTTP'],
  ['sidecar-latency', 'lower', 'sidecar HTTP→HTTP p50 latency × direct HTTP'],
  ['sidecar-throughput', 'higher', 'sidecar HTTP→HTTP calls/s × direct HTTP'],
  ['task-create-result', 'lower', 'task create → result ÷ a plain call (stdio→stdio)'],
]).map(([id, better, label]) => ({ id, better, label, value: verdict(id) }));

/** Then the figures behind them, and the controls. @type {Figure[]} */
const FIGURES = [
  ...RATIOS,
  {
    id: 'stdio-p50-ms',
    label: 'stdio→stdio p50 ms',
    better: 'lower',
    value: of('taskgate stdio→stdio', (r) => r?.latencyP50Ms),
  },
  {
    id: 'stdio-calls-s',
    label: 'stdio→stdio calls/s',
    better: 'higher',
    value: of('taskgate stdio→stdio', (r) => r?.callsPerSecond),
  },
  {
    id: 'task-p50-ms',
    label: 'task create → result p50 ms (stdio→stdio)',
    better: 'lower',
    value: of('taskgate stdio→stdio', (r) => r?.task?.createToResultP50Ms),
  },
  {
    id: 'http-p50-ms',
    label: 'HTTP→stdio p50 ms',
    better: 'lower',
    value: of('taskgate HTTP→stdio', (r) => r?.latencyP50Ms),
  },
  {
    id: 'http-calls-s',
    label: 'HTTP→stdio calls/s',
    better: 'higher',
    value: of('taskgate HTTP→stdio', (r) => r?.callsPerSecond),
  },
  {
    id: 'sidecar-p50-ms',
    label: 'sidecar HTTP→HTTP p50 ms',
    better: 'lower',
    value: of('taskgate sidecar HTTP→HTTP', (r) => r?.latencyP50Ms),
  },
  {
    id: 'sidecar-calls-s',
    label: 'sidecar HTTP→HTTP calls/s',
    better: 'higher',
    value: of('taskgate sidecar HTTP→HTTP', (r) => r?.callsPerSecond),
  },
  {
    id: 'control-stdio-p50-ms',
    label: 'control: direct stdio p50 ms (no taskgate)',
    better: 'lower',
    value: of('direct stdio', (r) => r?.latencyP50Ms),
  },
  {
    id: 'control-http-p50-ms',
    label: 'control: direct HTTP p50 ms (no taskgate)',
    better: 'lower',
    value: of('direct HTTP', (r) => r?.latencyP50Ms),
  },
];

/** @param {string[]} args @param {string} cwd */
const git = (args, cwd = ROOT) =>
  execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
/** Runs a command with its output on stderr (stdout is the report). @param {string} command @param {string[]} args @param {string} cwd */
const run = (command, args, cwd) => {
  const where = path.relative(ROOT, cwd);
  log(`${where.startsWith('..') ? cwd : where || '.'}: ${command} ${args.join(' ')}`);
  execFileSync(command, args, { cwd, stdio: ['ignore', 2, 2] });
};

/** A commit's subject, cut at 100 characters. @param {string} sha */
const subject = (sha) => {
  const line = git(['log', '-1', '--format=%s', sha]);
  return line.length > 100 ? `${line.slice(0, 99)}…` : line;
};

/**
 * A build of `spec`: this checkout (undefined), another checkout (a directory) or a commit (built once in
 * a scratch directory).
 * @param {string | undefined} spec @returns {Side}
 */
function prepare(spec) {
  if (spec === undefined || existsSync(path.join(path.resolve(spec), 'package.json'))) {
    const dir = spec === undefined ? ROOT : path.resolve(spec);
    run('npm', ['run', 'build'], dir);
    return {
      spec: spec ?? 'this checkout',
      commit: commit(dir),
      dir,
      cli: path.join(dir, 'dist/cli.js'),
      built: 'built in place',
    };
  }
  const sha = git(['rev-parse', '--verify', `${spec}^{commit}`]);
  const name = `${sha.slice(0, 7)} (${subject(sha)})`;
  const dir = path.join(os.tmpdir(), `taskgate-ab-${sha.slice(0, 12)}`);
  const cli = path.join(dir, 'dist/cli.js');
  const marker = path.join(dir, '.taskgate-ab-built');
  if (existsSync(marker) && existsSync(cli) && readFileSync(marker, 'utf8').trim() === sha) {
    log(`${spec}: reusing the build in ${dir}`);
    return { spec, commit: name, dir, cli, built: `reused the build in ${dir}` };
  }
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const tar = `${dir}.tar`;
  run('git', ['archive', '--format=tar', '-o', tar, sha], ROOT);
  run('tar', ['-xf', tar, '-C', dir], ROOT);
  rmSync(tar);
  let sameLock = false;
  try {
    git(['diff', '--quiet', sha, 'HEAD', '--', 'package-lock.json']);
    sameLock = existsSync(fromRoot('node_modules'));
  } catch {
    // the lockfiles differ
  }
  if (sameLock) symlinkSync(realpathSync(fromRoot('node_modules')), path.join(dir, 'node_modules'));
  // --ignore-scripts: only tsc and taskgate's runtime dependencies are used; none needs an install script.
  else run('npm', ['ci', '--no-audit', '--no-fund', '--ignore-scripts'], dir);
  run('npm', ['run', 'build'], dir);
  writeFileSync(marker, `${sha}\n`);
  return {
    spec,
    commit: name,
    dir,
    cli,
    built: `built in ${dir} (git archive; ${sameLock ? "this checkout's node_modules, the same lockfile" : 'npm ci, its own lockfile'})`,
  };
}

/** The build must accept the config the harness gives every taskgate. @param {Side} side */
function checkConfig(side) {
  try {
    execFileSync(process.execPath, [side.cli, 'check-config', TASKGATE_CONFIG], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
  } catch (error) {
    const stderr = String(/** @type {{ stderr?: Buffer }} */ (error).stderr ?? '');
    throw new Error(
      `${side.commit} refuses ${path.relative(ROOT, TASKGATE_CONFIG)}: ${stderr.trim().slice(0, 500)}`,
      { cause: error },
    );
  }
}

/**
 * One session of a side: every target but the peers (the same on both sides), fresh, one round.
 * @param {Side} side @param {typeof SETTINGS} settings
 */
async function session(side, settings) {
  const t0 = performance.now();
  const load = os.loadavg()[0] ?? NaN;
  const { up, skipped } = await startAll(targetsOf(side.cli).filter((t) => t.kind !== 'peer'));
  /** @type {Record<string, any>} */
  let samples;
  try {
    if (Object.keys(skipped).length > 0) throw new Error(`${side.commit}: ${JSON.stringify(skipped)}`);
    ({ samples } = await alternate(up, settings));
  } finally {
    for (const { running } of up) await running.stop();
  }
  const results = summarize(samples, up);
  const verdicts = evaluate({ results, settings });
  return {
    load: round(load),
    seconds: round((performance.now() - t0) / 1000),
    values: Object.fromEntries(FIGURES.map((f) => [f.id, round(f.value(results, verdicts))])),
    results,
  };
}

/**
 * The median of a side's rounds, the mean of the two middle ones when they are even in number (stats.js's
 * nearest-rank median would take the lower one, which reads as worse for a figure where higher is better).
 * @param {number[]} values
 */
const middle = (values) => {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b);
  const half = Math.floor(sorted.length / 2);
  if (sorted.length % 2 === 1 || sorted.length === 0) return median(sorted);
  return ((sorted[half - 1] ?? NaN) + (sorted[half] ?? NaN)) / 2;
};

/** @param {number[]} values @returns {[number, number] | null} */
const range = (values) => {
  const finite = values.filter(Number.isFinite);
  return finite.length === 0 ? null : [round(Math.min(...finite)), round(Math.max(...finite))];
};

/** @param {Figure} figure @param {number[]} before @param {number[]} after */
function compare(figure, before, after) {
  const beforeMedian = middle(before);
  const afterMedian = middle(after);
  const perRound = after.map((a, i) => ratio(a, /** @type {number} */ (before[i])));
  const b = range(before);
  let verdict = 'not measured';
  if (b && before.filter(Number.isFinite).length < 2) verdict = 'no spread (1 round)';
  else if (b && Number.isFinite(afterMedian)) {
    const [low, high] = b;
    const worse = figure.better === 'lower' ? afterMedian > high : afterMedian < low;
    const better = figure.better === 'lower' ? afterMedian < low : afterMedian > high;
    verdict = worse ? 'worse beyond spread' : better ? 'better beyond spread' : 'within spread';
  }
  return {
    id: figure.id,
    label: figure.label,
    better: figure.better,
    before,
    after,
    beforeMedian: round(beforeMedian),
    beforeRange: b,
    afterMedian: round(afterMedian),
    afterRange: range(after),
    afterOverBefore: { median: round(middle(perRound)), range: range(perRound) },
    verdict,
  };
}

/** @param {number} value @param {number[] | null} minMax */
const span = (value, minMax, digits = 2) =>
  minMax
    ? `${fmt(value, digits)} (${fmt(/** @type {number} */ (minMax[0]), digits)}–${fmt(/** @type {number} */ (minMax[1]), digits)})`
    : 'n/a';

/** @param {any} report */
function markdown(report) {
  const lines = [];
  const { before, after } = report;
  lines.push(`# taskgate A/B benchmark, ${report.date}`);
  lines.push('');
  lines.push(
    `${report.quick ? '**Quick run (not a result).** ' : ''}Before: ${before.commit}, ${before.built}. After: ${after.commit}, ${after.built}. ` +
      `Node ${report.node}, ${report.platform}; load average ${report.loadAverageBefore.join(' ')} before, ${report.loadAverageAfter.join(' ')} after; ${report.durationSeconds} s. ` +
      `Command: \`${report.command}\` (harness in [\`bench/\`](..), bench/ab.js).`,
  );
  lines.push('');
  const s = report.settings;
  lines.push(
    `${report.rounds} round${report.rounds === 1 ? '' : 's'}, before then after in each. A side's session starts every target afresh (direct stdio, raw relay, taskgate stdio→stdio, direct HTTP, taskgate HTTP→stdio, taskgate sidecar HTTP→HTTP; the taskgate ones run that side's dist/cli.js with \`${path.relative(ROOT, TASKGATE_CONFIG)}\` of this checkout), warms them up and runs one round of \`npm run bench\`'s calls: ` +
      `${s.latencyCalls} sequential echo calls per target in interleaved blocks of 25, ${s.throughputCalls} with ${s.inFlight} in flight, ${s.blobCalls} results of ${s.blobBytes / 1024} KiB, ${s.taskCalls} task-augmented calls each followed by a plain one. ` +
      'Ratios are to the direct call over the same transport in the same session. Per figure: the median over rounds of each side with its smallest and largest round, after ÷ before round by round, and the verdict: **worse beyond spread** when after’s median is worse than before’s worst round, **better beyond spread** when it is better than before’s best, within spread otherwise.' +
      (report.rounds < 3
        ? ' With fewer than 3 rounds the spread is hardly one: the verdicts say little.'
        : ''),
  );
  lines.push('');
  const table = (/** @type {any[]} */ figures) => {
    lines.push(
      '| figure | better | before: median (range) | after: median (range) | after ÷ before, per round | verdict |',
    );
    lines.push('| --- | --- | --- | --- | --- | --- |');
    for (const f of figures) {
      const digits = f.id.endsWith('-s') ? 0 : f.id.endsWith('-ms') ? 3 : 2;
      const mark = f.verdict === 'worse beyond spread' ? `**${f.verdict}**` : f.verdict;
      lines.push(
        `| ${f.label} | ${f.better} | ${span(f.beforeMedian, f.beforeRange, digits)} | ${span(f.afterMedian, f.afterRange, digits)} | ${span(f.afterOverBefore.median, f.afterOverBefore.range)} | ${mark} |`,
      );
    }
    lines.push('');
  };
  lines.push("## Issue 9's ratios");
  lines.push('');
  table(report.figures.slice(0, RATIOS.length));
  lines.push('## The figures behind them, and the controls');
  lines.push('');
  lines.push('The controls run no taskgate: a difference there is the machine, not the build.');
  lines.push('');
  table(report.figures.slice(RATIOS.length));
  lines.push('## Sessions');
  lines.push('');
  lines.push('| round | side | load average (1 min) at start | seconds |');
  lines.push('| --- | --- | --- | --- |');
  for (const x of report.sessions)
    lines.push(`| ${x.round} | ${x.side} | ${fmt(x.load)} | ${fmt(x.seconds, 0)} |`);
  lines.push('');
  return lines.join('\n');
}

async function main() {
  const { values } = parseArgs({
    options: { before: { type: 'string' }, after: { type: 'string' }, rounds: { type: 'string' } },
  });
  const rounds = Number(values.rounds ?? 5);
  if (!Number.isInteger(rounds) || rounds < 1)
    throw new Error(`--rounds ${values.rounds}: a whole number ≥ 1`);
  const before = prepare(values.before ?? DEFAULT_BEFORE);
  const after = prepare(values.after);
  for (const side of [before, after]) checkConfig(side);
  const settings = { ...SETTINGS, rounds: 1, minRounds: 1 };
  const loadBefore = os.loadavg();
  log(
    `${QUICK ? 'quick' : 'full'} A/B, ${rounds} round${rounds === 1 ? '' : 's'}: before ${before.commit}, after ${after.commit}; load average ${loadBefore.map((l) => l.toFixed(2)).join(' ')}`,
  );

  /** @type {{ round: number, side: 'before' | 'after', load: number, seconds: number, values: Record<string, number>, results: any }[]} */
  const sessions = [];
  for (let r = 1; r <= rounds; r++) {
    for (const [name, side] of /** @type {const} */ ([
      ['before', before],
      ['after', after],
    ])) {
      const result = await session(side, settings);
      sessions.push({ round: r, side: name, ...result });
      log(`round ${r}/${rounds} ${name} done (${result.seconds} s)`);
    }
  }
  const valuesOf = (/** @type {string} */ side, /** @type {string} */ id) =>
    sessions.filter((x) => x.side === side).map((x) => /** @type {number} */ (x.values[id]));
  const figures = FIGURES.map((f) => compare(f, valuesOf('before', f.id), valuesOf('after', f.id)));

  const argv = process.argv.slice(2);
  const report = {
    ...runFacts(loadBefore, started, QUICK),
    command: `${QUICK ? 'BENCH_QUICK=1 ' : ''}npm run bench:ab${argv.length > 0 ? ` -- ${argv.join(' ')}` : ''}`,
    before,
    after,
    config: path.relative(ROOT, TASKGATE_CONFIG),
    rounds,
    settings: { ...settings, blobBytes: BLOB_BYTES },
    figures,
    sessions,
  };
  const text = markdown(report);
  process.stdout.write(text);
  if (!QUICK) {
    const stamp = `${report.date.slice(0, 16).replace(':', '')}-ab`;
    mkdirSync(fromRoot('bench/results'), { recursive: true });
    writeFileSync(fromRoot(`bench/results/${stamp}.json`), JSON.stringify(report, null, 2) + '\n');
    writeFileSync(fromRoot(`bench/results/${stamp}.md`), text);
    log(`wrote bench/results/${stamp}.json and ${stamp}.md`);
  }
}

await main();

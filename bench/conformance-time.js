// @ts-check
/**
 * How long the official conformance suite takes through taskgate as a sidecar against directly (issue 34:
 * "no sidecar run takes more than 1.5× its direct time"). Per round and per target, one suite run
 * (0.2.0-alpha.12 `--requirements 2025-11-25`, on the Node 22 of test/conformance) against the fixture's
 * own HTTP mode, and one through taskgate `--upstream-url` in front of a fresh fixture of the same kind;
 * which of the two goes first alternates round by round. Each scenario is timed from the line the suite
 * prints as it starts it to the next one (the last to the suite's exit), so that the ratio can also be
 * given without `server-sse-polling`, where taskgate honours the server's `retry: 5000` (a MUST of the
 * 2025-11-25 Streamable HTTP transport) and the suite's own client does not.
 *
 * The everything-like fixture runs twice a round: on time, and with its standalone GET stream opened
 * 300 ms late (FIXTURE_GET_DELAY_MS, as conformance-servers-sidecar.test.ts runs it, to make the old race
 * certain). Each is compared with a direct run of the same fixture with the same delay: directly the
 * suite's client does not wait for its GET stream, loses the server's requests sent on it and waits out
 * the suite's per-scenario timeout (30 s) in each asking scenario, which the checks columns show; taskgate
 * waits for its upstream GET stream before it forwards a request (issue 34's fix 1), so each of its
 * sessions takes the 300 ms. The SDK 1.x fixture runs the same suite; the SDK v2 fixture its 2026-07-28
 * scenarios (a direct run waits out the task scenarios it fails, so there the sidecar may well be faster).
 * Per run also the CPU each process spent while the suite ran, and what the rest of the machine spent
 * meanwhile: a run slower than its like with its own CPU unchanged was kept waiting by other work.
 *
 *   npm run build && node bench/conformance-time.js    writes bench/results/<UTC date>T<hhmm>-conformance-time.md
 *   BENCH_ROUNDS=N (3 unless told)                     BENCH_QUICK=1: one round that writes nothing
 *   BENCH_ONLY=<text>                                  only the targets whose name contains it
 */
import { execFile } from 'node:child_process';
import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
  existsSync,
} from 'node:fs';
import os, { tmpdir } from 'node:os';
import { join } from 'node:path';
import { commit } from './lib/commit.js';
import { runFacts } from './lib/machine.js';
import { cpuSeconds, machineCpuSeconds, reapedChildrenCpuSeconds, startWithUrl } from './lib/procs.js';
import { median, ratio, round } from './lib/stats.js';
import { NODE, TASKGATE, fromRoot, startOnPort } from './lib/targets.js';
import { TASK_POLICY_2026 } from '../test/conformance/task-policy.js';

const NODE_22 = fromRoot('test/conformance/node_modules/node/bin/node');
const SUITE = fromRoot('test/conformance/node_modules/conformance-2026/dist/index.js');
const SELECTION = ['--requirements', '2025-11-25'];
/**
 * The SDK v2 fixture's run: its 2026-07-28 scenarios, each bounded by the 5 s its direct test gives them,
 * and the task policy its sidecar test gives taskgate.
 */
const SELECTION_2026 = ['--requirements', '2026-07-28', '--timeout', '5000'];
/** A suite run still going after this is stopped (and reported so). */
const RUN_BOUND_MS = 240_000;
/** The scenario the spec's `retry` MUST makes slower through taskgate. */
const POLLING = 'server-sse-polling';
/**
 * The first scenario: through the sidecar it meets a taskgate whose code paths are still cold (its era
 * probe, made at start-up since issue 34, is done or under way by then).
 */
const FIRST = 'server-initialize';
const STARTED = /^=== Running scenario: (\S+) ===$/;

/**
 * Each target runs directly and through the sidecar, against the same fixture with the same settings.
 * `env`: the fixture's; the delayed one opens each standalone GET stream 300 ms late, as
 * conformance-servers-sidecar.test.ts runs it (directly the suite's client loses the server's requests
 * sent on it, and waits out the suite's timeout in each asking scenario).
 */
const TARGETS = [
  {
    name: 'everything-like (`conformance-everything.js`)',
    fixture: 'test/fixtures/conformance-everything.js',
    env: {},
  },
  {
    name: 'everything-like (`conformance-everything.js`), its standalone GET 300 ms late',
    fixture: 'test/fixtures/conformance-everything.js',
    env: { FIXTURE_GET_DELAY_MS: '300' },
  },
  {
    name: 'SDK 1.x fixture (`conformance-server.js`)',
    fixture: 'test/fixtures/conformance-server.js',
    env: {},
  },
  {
    name: 'SDK v2 fixture (`conformance-modern-server.js`), 2026-07-28',
    fixture: 'test/fixtures/conformance-modern-server.js',
    env: {},
    selection: SELECTION_2026,
    flags: TASK_POLICY_2026,
  },
];

/**
 * The CPU seconds spent while the suite ran: by the suite, by the fixture, by taskgate (0 directly), and by
 * everything else on the machine (other work, and this bench); `steal`, the hypervisor's. A run slower
 * than its like with the same CPU of its own waited for something: the machine, most often.
 * @param {{ fixture: number, taskgate?: number }} pids
 */
function cpuWhile(pids) {
  const read = () => ({
    machine: machineCpuSeconds(),
    suite: reapedChildrenCpuSeconds(),
    fixture: cpuSeconds(pids.fixture),
    taskgate: pids.taskgate === undefined ? 0 : cpuSeconds(pids.taskgate),
  });
  const before = read();
  return () => {
    const after = read();
    const suite = after.suite - before.suite;
    const fixture = after.fixture - before.fixture;
    const taskgate = after.taskgate - before.taskgate;
    const others = after.machine.busy - before.machine.busy - suite - fixture - taskgate;
    return { suite, fixture, taskgate, others, steal: after.machine.steal - before.machine.steal };
  };
}

/**
 * One suite run against `url`: its wall time, each scenario's time, the checks that passed and failed, and
 * the CPU spent meanwhile.
 * @param {string} url @param {string[]} selection the suite's flags that choose its scenarios
 * @param {{ fixture: number, taskgate?: number }} pids
 */
function runSuite(url, selection, pids) {
  const outputDir = mkdtempSync(join(tmpdir(), 'taskgate-bench-conformance-'));
  /** @type {{ name: string, at: number }[]} */
  const starts = [];
  const cpu = cpuWhile(pids);
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = execFile(
      NODE_22,
      [SUITE, 'server', '--url', url, ...selection, '-o', outputDir],
      { timeout: RUN_BOUND_MS, maxBuffer: 64 * 1024 * 1024 },
      (error, _stdout, stderr) => {
        const ended = performance.now();
        const spent = cpu();
        const stopped = error?.killed === true;
        if (error && error.code !== 1 && !stopped) {
          rmSync(outputDir, { recursive: true, force: true });
          reject(new Error(`the conformance suite failed (${error.message}): ${stderr.slice(-2000)}`));
          return;
        }
        /** @type {Record<string, number>} */
        const scenarioMs = {};
        starts.forEach(({ name, at }, i) => (scenarioMs[name] = (starts[i + 1]?.at ?? ended) - at));
        const checks = countChecks(outputDir);
        rmSync(outputDir, { recursive: true, force: true });
        resolve({
          totalMs: ended - started,
          scenarioMs,
          stopped,
          ...checks,
          scenarios: starts.length,
          cpu: spent,
        });
      },
    );
    let partial = '';
    child.stdout?.setEncoding('utf8').on('data', (/** @type {string} */ chunk) => {
      const at = performance.now();
      partial += chunk;
      const lines = partial.split('\n');
      partial = /** @type {string} */ (lines.pop());
      for (const line of lines) {
        const name = STARTED.exec(line)?.[1];
        if (name !== undefined) starts.push({ name, at });
      }
    });
  });
}

/** The checks the suite saved, passed and failed. @param {string} outputDir */
function countChecks(outputDir) {
  let passed = 0;
  let failed = 0;
  for (const dir of readdirSync(outputDir)) {
    const file = join(outputDir, dir, 'checks.json');
    if (!existsSync(file)) continue;
    for (const check of JSON.parse(readFileSync(file, 'utf8'))) {
      if (check.status === 'SUCCESS') passed++;
      if (check.status === 'FAILURE') failed++;
    }
  }
  return { passed, failed };
}

/**
 * Starts the fixture (and taskgate in front of it when `through`), runs the suite, stops them.
 * @param {{ fixture: string, env: Record<string, string>, selection?: string[], flags?: string[] }} target
 * @param {boolean} through
 */
async function measure(target, through) {
  const { selection = SELECTION, flags = [] } = target;
  /** @type {import('./lib/procs.js').Proc[]} */
  const procs = [];
  try {
    // env(1) execs the fixture with its settings added (startWithUrl passes this process's environment).
    const settings = Object.entries(target.env).map(([name, value]) => `${name}=${value}`);
    const fixture = await startWithUrl(
      target.fixture,
      ['env', ...settings, NODE, fromRoot(target.fixture), '--http', '0'],
      /^listening (http:\/\/\S+)$/,
    );
    procs.push(fixture.proc);
    let url = fixture.url;
    /** @type {{ fixture: number, taskgate?: number }} */
    const pids = { fixture: fixture.proc.pid };
    if (through) {
      const gate = await startOnPort('taskgate sidecar', (port) => [
        NODE,
        TASKGATE,
        '--log-level',
        'warn',
        '--shutdown-grace',
        '1000',
        ...flags,
        '--listen',
        `127.0.0.1:${port}`,
        '--upstream-url',
        fixture.url,
      ]);
      procs.push(gate.proc);
      url = gate.url;
      pids.taskgate = gate.proc.pid;
    }
    return await runSuite(url, selection, pids);
  } finally {
    for (const proc of procs.reverse()) await proc.stop();
  }
}

/**
 * Per round and target: the direct run and the sidecar's, which goes first alternating round by round.
 * @param {number} rounds @param {(line: string) => void} log
 */
async function conformanceTime(rounds, log) {
  /** @type {{ round: number, target: string, direct: any, through: any, load: number }[]} */
  const runs = [];
  for (let r = 0; r < rounds; r++) {
    for (const target of TARGETS.filter(({ name }) => name.includes(process.env['BENCH_ONLY'] ?? ''))) {
      const load = round(/** @type {number} */ (os.loadavg()[0]));
      /** @type {Map<boolean, any>} */
      const got = new Map();
      for (const through of r % 2 === 0 ? [false, true] : [true, false]) {
        const run = await measure(target, through);
        got.set(through, run);
        log(
          `round ${r + 1}, ${target.name}, ${through ? 'sidecar' : 'direct'}: ${round(run.totalMs / 1000)} s`,
        );
      }
      runs.push({ round: r + 1, target: target.name, direct: got.get(false), through: got.get(true), load });
    }
  }
  return runs;
}

/** A time in seconds, or a dash for a scenario the run did not have. */
const seconds = (/** @type {number} */ ms) => (Number.isFinite(ms) ? `${round(ms / 1000)} s` : '—');
const withoutPolling = (/** @type {any} */ run) => run.totalMs - (run.scenarioMs[POLLING] ?? 0);
const withoutFirst = (/** @type {any} */ run) => withoutPolling(run) - (run.scenarioMs[FIRST] ?? 0);
const slowest = (/** @type {any} */ direct, /** @type {any} */ through) =>
  Object.entries(through.scenarioMs)
    .map(([name, ms]) => ({ name, extra: ms - (direct.scenarioMs[name] ?? 0) }))
    .sort((a, b) => b.extra - a.extra);

const ownCpu = (/** @type {any} */ run) =>
  [run.cpu.suite, run.cpu.fixture, ...(run.cpu.taskgate > 0 ? [run.cpu.taskgate] : [])]
    .map((s) => round(s))
    .join(' + ');
const othersCpu = (/** @type {any} */ run) => `${round(run.cpu.others)} (${round(run.cpu.steal)})`;

/** @param {any[]} runs */
function lines(runs) {
  const out = [
    `| round | target | load (1 min) at start | direct | sidecar | ratio | \`${POLLING}\` direct / sidecar | ratio without it | ratio without it and \`${FIRST}\` | checks passed–failed direct / sidecar | CPU s direct / sidecar: suite + fixture + taskgate | others' CPU s (steal) direct / sidecar |`,
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
  ];
  for (const { round: r, target, direct, through, load } of runs) {
    out.push(
      `| ${r} | ${target} | ${load} | ${seconds(direct.totalMs)}${direct.stopped ? ' (stopped)' : ''} | ${seconds(through.totalMs)}${through.stopped ? ' (stopped)' : ''} | ${round(ratio(through.totalMs, direct.totalMs))} | ${seconds(direct.scenarioMs[POLLING] ?? NaN)} / ${seconds(through.scenarioMs[POLLING] ?? NaN)} | ${round(ratio(withoutPolling(through), withoutPolling(direct)))} | ${round(ratio(withoutFirst(through), withoutFirst(direct)))} | ${direct.passed}–${direct.failed} / ${through.passed}–${through.failed} | ${ownCpu(direct)} / ${ownCpu(through)} | ${othersCpu(direct)} / ${othersCpu(through)} |`,
    );
  }
  out.push(
    '',
    `| target | median ratio | median ratio without \`${POLLING}\` | median ratio without it and \`${FIRST}\` | median sidecar − direct per other scenario |`,
    '| --- | --- | --- | --- | --- |',
  );
  for (const name of new Set(runs.map((run) => run.target))) {
    const mine = runs.filter((run) => run.target === name);
    const perScenario = mine.map(({ direct, through }) => {
      const others = Object.keys(through.scenarioMs).filter((name) => name !== POLLING);
      const extra = others.reduce(
        (sum, name) => sum + through.scenarioMs[name] - (direct.scenarioMs[name] ?? 0),
        0,
      );
      return extra / Math.max(1, others.length);
    });
    out.push(
      `| ${name} | ${round(median(mine.map(({ direct, through }) => ratio(through.totalMs, direct.totalMs))))} | ${round(median(mine.map(({ direct, through }) => ratio(withoutPolling(through), withoutPolling(direct)))))} | ${round(median(mine.map(({ direct, through }) => ratio(withoutFirst(through), withoutFirst(direct)))))} | ${round(median(perScenario))} ms |`,
    );
  }
  out.push(
    '',
    'The scenarios that took longest through the sidecar beyond their direct time, per run (ms):',
    '',
  );
  for (const { round: r, target, direct, through } of runs) {
    const top = slowest(direct, through)
      .slice(0, 4)
      .map(({ name, extra }) => `${name} +${Math.round(extra)}`);
    out.push(`- round ${r}, ${target}: ${top.join(', ')}`);
  }
  return out;
}

async function main() {
  const quick = process.env['BENCH_QUICK'] === '1';
  const rounds = quick ? 1 : Number(process.env['BENCH_ROUNDS'] ?? 3);
  const started = performance.now();
  const loadBefore = os.loadavg();
  const log = (/** @type {string} */ line) => process.stderr.write(`[bench conformance-time] ${line}\n`);
  const runs = await conformanceTime(rounds, log);
  const facts = { ...runFacts(loadBefore, started, quick), commit: commit() };
  const md = [
    '# The conformance suite through a taskgate sidecar against directly (issue 34)',
    '',
    `${quick ? '**Quick run (not a result).** ' : ''}Commit ${facts.commit}; Node ${facts.node} (taskgate and the fixtures), the suite on test/conformance's Node 22; ${facts.platform}; load average ${facts.loadAverageBefore.join(' ')} before, ${facts.loadAverageAfter.join(' ')} after; ${facts.durationSeconds} s. Command: \`npm run build && node bench/conformance-time.js\` (${rounds} rounds). The machine is shared with other work: the load says how busy it was.`,
    '',
    `Each cell is one run of the suite (0.2.0-alpha.12 \`${SELECTION.join(' ')}\`; the SDK v2 fixture \`${SELECTION_2026.join(' ')}\`, taskgate with the task policy of its test), from its start to its exit; the direct run and the sidecar's run one after the other, which goes first alternating each round, each against a fresh fixture of the same settings. CPU: seconds of user + system time while the suite ran, of the suite, the fixture and taskgate; "others": the rest of the machine meanwhile (other work, this bench), with the hypervisor's steal. taskgate: \`--upstream-url FIXTURE --shutdown-grace 1000 --log-level warn\`. A scenario's time runs from the suite's line that starts it to the next one's.`,
    '',
    ...lines(runs),
    '',
  ].join('\n');
  process.stdout.write(md);
  if (quick) return;
  const stamp = facts.date.slice(0, 16).replace(':', '');
  mkdirSync(fromRoot('bench/results'), { recursive: true });
  writeFileSync(fromRoot(`bench/results/${stamp}-conformance-time.md`), md);
  log(`wrote bench/results/${stamp}-conformance-time.md`);
}

await main();

// @ts-check
/**
 * Big results through stdio (issue 33): 256 KiB and 4 MiB `large` results from the stdio fixture, direct,
 * through the raw relay, and through taskgate — this checkout's build and, with --before, another build's
 * cli.js — alternated round by round (the order rotates), each target started afresh per round.
 *
 *   npm run build && node bench/bytes.js [--before DIR/dist/cli.js] [--rounds N] [--calls N] [--big-calls N]
 *                                        [--in-flight N] [--held-relay]
 *
 * Per target and size: results per second (median over rounds, and the range), the median of the per-round
 * ratios × direct, and for the proxies the main-thread and other-thread CPU of their process per result
 * (/proc/PID/task/*). With --in-flight N (64 in issue 33's target), also N 4 MiB results asked for at once:
 * the peak RSS of the proxy's process while they are in flight (sampled every 20 ms), against the bytes in
 * flight. For taskgate's builds, also the 4 MiB result held as a task and fetched with `tasks/result` at
 * once (issue 33's target: ≤ 1.2× the plain call), as the median of the per-round ratios of its time to the
 * same build's plain 4 MiB call. A build for --before: `npm run bench:ab -- --before COMMIT` leaves one in
 * <tmpdir>/taskgate-ab-<sha>. With --http, the same over Streamable HTTP in place of stdio: the fixture
 * served directly, taskgate HTTP→stdio and the sidecar HTTP→HTTP (each of this build and of --before's),
 * as ratios to the direct HTTP server; no task figure then. With --held-relay (stdio), also the relay that
 * hands each line on only once its newline has come (bench/relay.js --hold-lines): what holding a line
 * costs by itself, which a proxy that must not pass on a line that is not JSON cannot avoid.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { rssBytes } from './lib/procs.js';
import { median } from './lib/stats.js';
import { FIXTURE, NODE, TASKGATE, TASKGATE_FLAGS, fromRoot, overStdio, targetsOf } from './lib/targets.js';
import * as load from './lib/workloads.js';

const { values } = parseArgs({
  options: {
    before: { type: 'string' },
    rounds: { type: 'string', default: '5' },
    calls: { type: 'string', default: '40' },
    'big-calls': { type: 'string', default: '6' },
    'in-flight': { type: 'string', default: '0' },
    http: { type: 'boolean', default: false },
    'held-relay': { type: 'boolean', default: false },
  },
});
const rounds = Number(values.rounds);
const inFlight = Number(values['in-flight']);
const IN_FLIGHT_BYTES = 4 * 1024 * 1024;
const SIZES = [
  { label: '256 KiB', bytes: 256 * 1024, calls: Number(values.calls) },
  { label: '4 MiB', bytes: 4 * 1024 * 1024, calls: Number(values['big-calls']) },
];

/** @typedef {Awaited<ReturnType<typeof overStdio>>} Running */
/** @param {string[]} argv @returns {() => Promise<Running>} */
const stdio = (argv) => () => overStdio(argv);
/** One of bench/lib/targets.js's HTTP targets of the build `cli`. @param {string} cli @param {string} name */
const http = (cli, name) =>
  /** @type {() => Promise<Running>} */ (targetsOf(cli).find((t) => t.name === name)?.start);

/** @type {{ name: string, start: () => Promise<Running> }[]} The first is what the others are compared to. */
const targets = values.http
  ? [
      { name: 'direct', start: http(TASKGATE, 'direct HTTP') },
      ...(values.before
        ? [
            { name: 'before', start: http(values.before, 'taskgate HTTP→stdio') },
            { name: 'before sidecar', start: http(values.before, 'taskgate sidecar HTTP→HTTP') },
          ]
        : []),
      { name: 'taskgate', start: http(TASKGATE, 'taskgate HTTP→stdio') },
      { name: 'sidecar', start: http(TASKGATE, 'taskgate sidecar HTTP→HTTP') },
    ]
  : [
      { name: 'direct', start: stdio([NODE, FIXTURE]) },
      { name: 'relay', start: stdio([NODE, fromRoot('bench/relay.js'), '--', NODE, FIXTURE]) },
      ...(values['held-relay']
        ? [
            {
              name: 'relay held',
              start: stdio([NODE, fromRoot('bench/relay.js'), '--hold-lines', '--', NODE, FIXTURE]),
            },
          ]
        : []),
      ...(values.before
        ? [{ name: 'before', start: stdio([NODE, values.before, ...TASKGATE_FLAGS, '--', NODE, FIXTURE]) }]
        : []),
      { name: 'taskgate', start: stdio([NODE, TASKGATE, ...TASKGATE_FLAGS, '--', NODE, FIXTURE]) },
    ];

/** CPU ms so far of the main thread and of the other threads of `pid`. @param {number} pid */
function threads(pid) {
  let main = 0;
  let other = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ms = (Number(fields[11]) + Number(fields[12])) * 10;
    if (Number(tid) === pid) main += ms;
    else other += ms;
  }
  return { main, other };
}

/** @typedef {{ perSecond: number, mainUs: number, otherUs: number }} Figure */
/** @type {Record<string, Record<string, Figure[]>>} target → size → one per round */
const results = Object.fromEntries(
  targets.map((t) => [t.name, Object.fromEntries(SIZES.map((s) => [s.label, []]))]),
);

/** @type {Record<string, number[]>} taskgate build → 4 MiB task time ÷ plain call time, one per round */
const taskRatios = Object.fromEntries(targets.map((t) => [t.name, []]));
const TASK_BYTES = 4 * 1024 * 1024;

/** @type {Record<string, number[]>} target → peak RSS in MiB, one per round */
const peaks = Object.fromEntries(targets.map((t) => [t.name, []]));

/**
 * `inFlight` 4 MiB results asked for at once; the peak RSS of `pid` meanwhile, in MiB.
 * @param {Awaited<ReturnType<typeof overStdio>>['client']} client @param {number} pid
 */
async function peakInFlight(client, pid) {
  let peak = rssBytes(pid);
  const sampler = setInterval(() => (peak = Math.max(peak, rssBytes(pid))), 20);
  try {
    await Promise.all(
      Array.from({ length: inFlight }, () => load.call(client, 'large', { bytes: IN_FLIGHT_BYTES })),
    );
  } finally {
    clearInterval(sampler);
  }
  return Math.max(peak, rssBytes(pid)) / 2 ** 20;
}

const log = (/** @type {string} */ line) => process.stderr.write(`[bytes] ${line}\n`);
const load1 = () => readFileSync('/proc/loadavg', 'utf8').split(' ')[0];
log(`load average ${load1()} at the start`);
for (let round = 0; round < rounds; round++) {
  const order = targets.map((_, i) => targets[(i + round) % targets.length]);
  for (const target of order) {
    if (!target) continue;
    const running = await target.start();
    // The relay's and taskgate's own process is the measured one: the client's child.
    const pid = running.pid;
    await load.blobs(running.client, 3, 256 * 1024);
    for (const size of SIZES) {
      await load.blobs(running.client, 1, size.bytes);
      const before = threads(pid);
      const seconds = await load.blobs(running.client, size.calls, size.bytes);
      const after = threads(pid);
      results[target.name]?.[size.label]?.push({
        perSecond: size.calls / seconds,
        mainUs: ((after.main - before.main) * 1000) / size.calls,
        otherUs: ((after.other - before.other) * 1000) / size.calls,
      });
    }
    if (!values.http && (target.name === 'before' || target.name === 'taskgate')) {
      const calls = Number(values['big-calls']);
      await load.taskBlobs(running.client, 1, TASK_BYTES);
      // Plain and task calls alternate within the round too, so that each ratio is of the same moment.
      let plain = 0;
      let tasks = 0;
      for (let i = 0; i < calls; i++) {
        plain += await load.blobs(running.client, 1, TASK_BYTES);
        tasks += await load.taskBlobs(running.client, 1, TASK_BYTES);
      }
      taskRatios[target.name]?.push(tasks / plain);
    }
    if (inFlight > 0) peaks[target.name]?.push(await peakInFlight(running.client, pid));
    await running.stop();
  }
  log(`round ${round + 1} of ${rounds} done (load ${load1()})`);
}

const fmt = (/** @type {number} */ n, digits = 0) => n.toFixed(digits);
/** @param {number[]} values */
const range = (values, digits = 1) =>
  `${fmt(Math.min(...values), digits)}–${fmt(Math.max(...values), digits)}`;
process.stdout.write(`${rounds} rounds, load average ${load1()} at the end\n`);
for (const size of SIZES) {
  process.stdout.write(`\n${size.label} results (${size.calls} per target per round)\n`);
  const direct = results.direct?.[size.label] ?? [];
  for (const target of targets) {
    const figures = results[target.name]?.[size.label] ?? [];
    const perSecond = figures.map((f) => f.perSecond);
    const ratios = figures.map((f, i) => f.perSecond / (direct[i]?.perSecond ?? NaN));
    const cpu =
      target.name === 'direct'
        ? ''
        : `  CPU per result: main ${fmt(median(figures.map((f) => f.mainUs)))} µs, other threads ${fmt(median(figures.map((f) => f.otherUs)))} µs`;
    process.stdout.write(
      `  ${target.name.padEnd(14)} ${fmt(median(perSecond), 1).padStart(7)}/s (${range(perSecond)})  ${fmt(median(ratios), 2)}× direct (${range(ratios, 2)})${cpu}\n`,
    );
  }
}
if (!values.http) {
  process.stdout.write(
    `\n4 MiB result as a task, tasks/result at once: time ÷ the plain call's (per round)\n`,
  );
}
for (const name of ['before', 'taskgate']) {
  const ratios = taskRatios[name] ?? [];
  if (ratios.length === 0) continue;
  process.stdout.write(`  ${name.padEnd(9)} ${fmt(median(ratios), 2)}× (${range(ratios, 2)})\n`);
}
if (inFlight > 0) {
  const mib = (inFlight * IN_FLIGHT_BYTES) / 2 ** 20;
  process.stdout.write(`\n${inFlight} × 4 MiB results in flight (${mib} MiB): peak RSS of the process\n`);
  for (const target of targets) {
    const figures = peaks[target.name] ?? [];
    process.stdout.write(
      `  ${target.name.padEnd(14)} ${fmt(median(figures))} MiB (${range(figures, 0)}), ${fmt(median(figures) / mib, 2)}× the bytes in flight\n`,
    );
  }
}

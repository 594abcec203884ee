// @ts-check
/**
 * The benchmark (issue 9). An SDK Client drives every target in turn, A B C … A B C …, rotating the order
 * each round, so that drift on a shared machine hits every target alike; figures are reported as ratios
 * to the direct call over the same transport, taken round by round. Then the task workloads, against a
 * taskgate process (bench/tasks.js) and against the store alone (bench/tasks-inproc.js). Last, the
 * 2026-07-28 workloads (bench/modern.js): the modern path against the 2025 one through taskgate, and the
 * SDK v2 client through taskgate against it direct (bench/sdk-v2.js). Then the shared upstreams
 * (bench/sharing.js): many sessions on one server, or on a pool, against peers. Last, routing among several
 * servers (bench/aggregate.js): ten behind one endpoint against one, and what a caller's own servers cost.
 *
 *   npm run bench                 everything; writes bench/results/<date>T<hhmm>.json and .md (UTC)
 *   BENCH_QUICK=1 npm run bench   a short run to check the harness; writes nothing
 *   BENCH_ONLY=a,b                only the targets whose names contain a or b (and writes nothing);
 *                                 BENCH_ONLY=modern: only the 2026-07-28 workloads; BENCH_ONLY=sdk-v2:
 *                                 only the SDK v2 client; BENCH_ONLY=sharing: only the shared upstreams;
 *                                 BENCH_ONLY=aggregate: only routing among several servers
 *   BENCH_CPU_PROF=DIR            taskgate targets run with node --cpu-prof into DIR (and writes nothing)
 *
 * Every process it starts is on 127.0.0.1 and stopped at the end; every loop is bounded in count.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { pathToFileURL } from 'node:url';
import { commit } from './lib/commit.js';
import { runFacts } from './lib/machine.js';
import { evaluate, markdown } from './lib/report.js';
import { cpuSeconds } from './lib/procs.js';
import { median, quantile, ratio, round } from './lib/stats.js';
import { TARGETS, fromRoot } from './lib/targets.js';
import * as load from './lib/workloads.js';
import * as tasks from './tasks.js';
import { MODERN_SETTINGS, modern } from './modern.js';
import { SDK_V2_SETTINGS, sdkV2 } from './sdk-v2.js';
import { SHARING_SETTINGS, sharing } from './sharing.js';
import { AGGREGATE_SETTINGS, aggregate } from './aggregate.js';

const QUICK = process.env.BENCH_QUICK === '1';
const ONLY = process.env.BENCH_ONLY?.split(',').filter(Boolean);

export const SETTINGS = QUICK
  ? {
      rounds: 2,
      minRounds: 2,
      latencyCalls: 100,
      throughputCalls: 400,
      inFlight: 64,
      blobCalls: 4,
      taskCalls: 40,
    }
  : {
      rounds: 8,
      minRounds: 3,
      latencyCalls: 250,
      throughputCalls: 1200,
      inFlight: 64,
      blobCalls: 10,
      taskCalls: 100,
    };
/**
 * Seconds the alternating rounds may take: on a busy machine fewer rounds are run (never fewer than
 * minRounds), so that `npm run bench` stays within 15 minutes from a fresh clone (bench/modern.js has a
 * budget of its own). BENCH_ROUNDS_BUDGET overrides it.
 */
const ROUNDS_BUDGET_S = Number(process.env['BENCH_ROUNDS_BUDGET'] ?? (QUICK ? 120 : 300));
export const BLOB_BYTES = 256 * 1024;
/** Sequential calls per block, and task/plain pairs per block (see alternate()). */
const BLOCK = 25;
const TASK_BLOCK = 10;
const TASK_SETTINGS = QUICK
  ? { storm: { requests: 5000, rounds: 2, inFlight: 64 }, held: 2000, holdSeconds: 2, waiters: 2000 }
  : { storm: { requests: 40_000, rounds: 3, inFlight: 64 }, held: 10_000, holdSeconds: 6, waiters: 10_000 };

const started = performance.now();
const log = (/** @type {string} */ line) =>
  process.stderr.write(
    `[bench ${((performance.now() - started) / 1000).toFixed(0).padStart(3)} s] ${line}\n`,
  );

/**
 * @typedef {import('./lib/targets.js').Target} Target
 * @typedef {import('./lib/targets.js').Running} Running
 * @typedef {{ latency: number[][], throughput: number[], blob: number[], task: number[][], taskPlain: number[][],
 *   cpu: { throughput: number, throughputCalls: number, latency: number, latencyCalls: number } }} Samples
 */

/**
 * Starts each target and checks that it answers as the fixture does; records why one cannot run.
 * @param {Target[]} targets
 */
export async function startAll(targets = TARGETS) {
  /** @type {{ target: Target, running: Running }[]} */
  const up = [];
  /** @type {Record<string, string>} */
  const skipped = {};
  for (const target of targets) {
    if (ONLY && !ONLY.some((part) => target.name.includes(part))) continue;
    const why = target.unavailable?.();
    if (why) {
      skipped[target.name] = why;
      log(`${target.name}: skipped: ${why}`);
      continue;
    }
    try {
      const running = await target.start();
      try {
        await load.check(running.client, BLOB_BYTES);
      } catch (error) {
        await running.stop();
        throw error;
      }
      up.push({ target, running });
      log(`${target.name}: up (pid ${running.pid})`);
    } catch (error) {
      skipped[target.name] = `failed: ${/** @type {Error} */ (error).message.slice(0, 500)}`;
      log(`${target.name}: ${skipped[target.name]}`);
    }
  }
  return { up, skipped };
}

/**
 * Warms every target up, then measures them in alternating rounds (bench/ab.js: one round a call).
 * @param {{ target: Target, running: Running }[]} up @param {typeof SETTINGS} settings
 */
export async function alternate(up, settings = SETTINGS) {
  /** @type {Record<string, Samples>} */
  const samples = {};
  for (const { target } of up) {
    samples[target.name] = {
      latency: [],
      throughput: [],
      blob: [],
      task: [],
      taskPlain: [],
      cpu: { throughput: 0, throughputCalls: 0, latency: 0, latencyCalls: 0 },
    };
  }
  const of = (/** @type {Target} */ target) => /** @type {Samples} */ (samples[target.name]);
  for (const { target, running } of up) {
    await load.latency(running.client, settings.latencyCalls, []);
    await load.throughput(running.client, settings.throughputCalls / 2, settings.inFlight);
    await load.blobs(running.client, 4, BLOB_BYTES);
    if (target.tasks) for (let i = 0; i < settings.taskCalls / 2; i++) await load.timedTask(running.client);
  }
  log('warmed up');
  const roundsStarted = performance.now();
  let rounds = 0;
  for (let round_ = 0; round_ < settings.rounds; round_++) {
    const elapsed = (performance.now() - roundsStarted) / 1000;
    if (round_ >= settings.minRounds && elapsed + elapsed / round_ > ROUNDS_BUDGET_S) {
      log(`stopping after ${round_} rounds: another would pass the ${ROUNDS_BUDGET_S} s budget`);
      break;
    }
    rounds++;
    const order = up.map((_, i) => /** @type {(typeof up)[number]} */ (up[(i + round_) % up.length]));

    // Sequential latency in short blocks, target after target (A×25 B×25 … A×25 B×25 …), so that whatever
    // the machine does meanwhile falls on every target alike; each block starts with an untimed call, as a
    // process that sat idle while the others were called answers its first call late. Only the called
    // target works, so each one's CPU delta is its own.
    const latencies = order.map(() => /** @type {number[]} */ ([]));
    const cpuBefore = order.map(({ running }) => cpuSeconds(running.pid));
    const untimed = order.map(() => 0);
    for (let done = 0; done < settings.latencyCalls; done += BLOCK) {
      for (const [k, { running }] of order.entries()) {
        await load.timedCall(running.client);
        untimed[k] = (untimed[k] ?? 0) + 1;
        for (let i = 0; i < Math.min(BLOCK, settings.latencyCalls - done); i++)
          latencies[k]?.push(await load.timedCall(running.client));
      }
    }
    for (const [k, { target, running }] of order.entries()) {
      of(target).cpu.latency += cpuSeconds(running.pid) - /** @type {number} */ (cpuBefore[k]);
      of(target).cpu.latencyCalls += settings.latencyCalls + /** @type {number} */ (untimed[k]);
      of(target).latency.push(/** @type {number[]} */ (latencies[k]));
    }

    // Throughput and 256 KiB results, target by target.
    for (const { target, running } of order) {
      const cpu = cpuSeconds(running.pid);
      const seconds = await load.throughput(running.client, settings.throughputCalls, settings.inFlight);
      of(target).cpu.throughput += cpuSeconds(running.pid) - cpu;
      of(target).cpu.throughputCalls += settings.throughputCalls;
      of(target).throughput.push(settings.throughputCalls / seconds);
    }
    for (const { target, running } of order) {
      const seconds = await load.blobs(running.client, settings.blobCalls, BLOB_BYTES);
      of(target).blob.push((settings.blobCalls * BLOB_BYTES) / seconds);
    }

    // Task create → result against a plain call on the same taskgate: in blocks, like the latency, each
    // block an untimed plain call and then pairs (a task call, then a plain call).
    const taskTargets = order.filter(({ target }) => target.tasks);
    const tasks = taskTargets.map(() => ({
      task: /** @type {number[]} */ ([]),
      plain: /** @type {number[]} */ ([]),
    }));
    for (let done = 0; done < settings.taskCalls; done += TASK_BLOCK) {
      for (const [k, { running }] of taskTargets.entries()) {
        await load.timedCall(running.client);
        for (let i = 0; i < Math.min(TASK_BLOCK, settings.taskCalls - done); i++) {
          tasks[k]?.task.push(await load.timedTask(running.client));
          tasks[k]?.plain.push(await load.timedCall(running.client));
        }
      }
    }
    for (const [k, { target }] of taskTargets.entries()) {
      of(target).task.push(/** @type {number[]} */ (tasks[k]?.task));
      of(target).taskPlain.push(/** @type {number[]} */ (tasks[k]?.plain));
    }
    log(`round ${round_ + 1}/${settings.rounds} done`);
  }
  return { samples, rounds };
}

/**
 * Figures per target: pooled p50/p99, medians of rounds, and ratios to the baseline taken round by round.
 * @param {Record<string, Samples>} samples @param {{ target: Target }[]} up
 */
export function summarize(samples, up) {
  const baselineOf = (/** @type {Target} */ t) => (t.transport === 'stdio' ? 'direct stdio' : 'direct HTTP');
  /** Per-round ratios. @param {number[]} a @param {number[]} b */
  const perRound = (a, b) => a.map((value, i) => ratio(value, /** @type {number} */ (b[i])));
  /** Median over rounds of a per-round ratio. @param {number[]} a @param {number[]} b */
  const paired = (a, b) => median(perRound(a, b));
  /** Smallest and largest per-round ratio. @param {number[]} a @param {number[]} b */
  const range = (a, b) => {
    const values = perRound(a, b).filter(Number.isFinite);
    return values.length === 0 ? null : [round(Math.min(...values)), round(Math.max(...values))];
  };
  /** @type {Record<string, any>} */
  const results = {};
  for (const { target } of up) {
    const s = /** @type {Samples} */ (samples[target.name]);
    const base = samples[baselineOf(target)];
    const latencyMedians = s.latency.map(median);
    const all = s.latency.flat();
    const tasks = s.task.flat();
    results[target.name] = {
      transport: target.transport,
      kind: target.kind,
      baseline: baseLineName(target, base),
      calls: all.length,
      latencyP50Ms: round(median(all)),
      latencyP99Ms: round(quantile(all, 0.99)),
      callsPerSecond: round(median(s.throughput)),
      blobMBps: round(median(s.blob) / 1e6),
      latencyRatio: base ? round(paired(latencyMedians, base.latency.map(median))) : NaN,
      throughputRatio: base ? round(paired(s.throughput, base.throughput)) : NaN,
      blobRatio: base ? round(paired(s.blob, base.blob)) : NaN,
      perRoundRange: base
        ? {
            latencyRatio: range(latencyMedians, base.latency.map(median)),
            throughputRatio: range(s.throughput, base.throughput),
            blobRatio: range(s.blob, base.blob),
          }
        : null,
      serverCpuUsPerCall: {
        sequential: round((s.cpu.latency / s.cpu.latencyCalls) * 1e6),
        inFlight: round((s.cpu.throughput / s.cpu.throughputCalls) * 1e6),
      },
      ...(target.tasks
        ? {
            task: {
              createToResultP50Ms: round(median(tasks)),
              createToResultP99Ms: round(quantile(tasks, 0.99)),
              plainCallP50Ms: round(median(s.taskPlain.flat())),
              ratioToPlainCall: round(paired(s.task.map(median), s.taskPlain.map(median))),
            },
          }
        : {}),
    };
  }
  return results;

  /** @param {Target} target @param {Samples | undefined} base */
  function baseLineName(target, base) {
    return base ? baselineOf(target) : null;
  }
}

/** Runs bench/tasks-inproc.js in its own process, with --expose-gc. @param {number} count */
function inProcess(count) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--expose-gc', fromRoot('bench/tasks-inproc.js'), String(count)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk) => (out += chunk));
    child.once('exit', (code) =>
      code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`tasks-inproc.js exited ${code}`)),
    );
  });
}

/** Runs one task workload; a failure is recorded, not fatal. @template T @param {string} name @param {() => Promise<T>} run */
async function attempt(name, run) {
  try {
    const value = await run();
    log(`${name} done`);
    return value;
  } catch (error) {
    log(`${name} failed: ${/** @type {Error} */ (error).message}`);
    return { error: /** @type {Error} */ (error).message };
  }
}

async function main() {
  log(
    `${QUICK ? 'quick' : 'full'} run on ${os.cpus().length} cores, load average ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  const loadBefore = os.loadavg();
  const { up, skipped } = await startAll(TARGETS);
  /** @type {Record<string, Samples>} */
  let samples;
  let rounds;
  try {
    ({ samples, rounds } = await alternate(up));
  } finally {
    for (const { running } of up) await running.stop();
  }
  const results = summarize(samples, up);

  const taskWorkloads = ONLY
    ? {}
    : {
        storm: await attempt('tasks/get storm', () => tasks.storm(TASK_SETTINGS.storm)),
        held: await attempt('10 000 held tasks', () =>
          tasks.held({
            count: TASK_SETTINGS.held,
            resultBytes: 1024,
            holdSeconds: TASK_SETTINGS.holdSeconds,
          }),
        ),
        waiters: await attempt('10 000 waiters end to end', () =>
          tasks.waiters({ count: TASK_SETTINGS.waiters, leadMs: 10_000 }),
        ),
        inProcess: await attempt('store in-process', () => inProcess(TASK_SETTINGS.held)),
      };

  // The 2026-07-28 workloads (bench/modern.js): with everything, or alone with BENCH_ONLY=modern.
  const modernWorkloads =
    !ONLY || ONLY.includes('modern')
      ? await attempt('2026-07-28 workloads', () =>
          modern(QUICK ? MODERN_SETTINGS.quick : MODERN_SETTINGS.full, log),
        )
      : undefined;
  // The SDK v2 client (bench/sdk-v2.js): with everything, or alone with BENCH_ONLY=sdk-v2.
  const sdkV2Workloads =
    !ONLY || ONLY.includes('sdk-v2')
      ? await attempt('SDK v2 client', () => sdkV2(QUICK ? SDK_V2_SETTINGS.quick : SDK_V2_SETTINGS.full, log))
      : undefined;
  // The shared upstreams (bench/sharing.js, a budget of its own): with everything, or BENCH_ONLY=sharing.
  const sharingWorkloads =
    !ONLY || ONLY.includes('sharing')
      ? await attempt('shared upstreams', () =>
          sharing(QUICK ? SHARING_SETTINGS.quick : SHARING_SETTINGS.full, log),
        )
      : undefined;

  // Routing among several servers (bench/aggregate.js): with everything, or alone with BENCH_ONLY=aggregate.
  const aggregateWorkloads =
    !ONLY || ONLY.includes('aggregate')
      ? await attempt('routing among servers', () =>
          aggregate(QUICK ? AGGREGATE_SETTINGS.quick : AGGREGATE_SETTINGS.full, log),
        )
      : undefined;

  const report = {
    ...runFacts(loadBefore, started, QUICK),
    commit: commit(),
    settings: { ...SETTINGS, rounds, blobBytes: BLOB_BYTES, tasks: TASK_SETTINGS },
    skipped,
    results,
    tasks: taskWorkloads,
    ...(modernWorkloads ? { modern: modernWorkloads } : {}),
    ...(sdkV2Workloads ? { sdkV2: sdkV2Workloads } : {}),
    ...(sharingWorkloads ? { sharing: sharingWorkloads } : {}),
    ...(aggregateWorkloads ? { aggregate: aggregateWorkloads } : {}),
  };
  const evaluation = evaluate(report);
  const full = { ...report, targets: evaluation };
  const text = markdown(full);
  process.stdout.write(text);
  if (!QUICK && !ONLY && !process.env['BENCH_CPU_PROF']) {
    // Date and UTC time (2026-11-30T0512): several runs a day each keep their own record.
    const stamp = report.date.slice(0, 16).replace(':', '');
    mkdirSync(fromRoot('bench/results'), { recursive: true });
    writeFileSync(fromRoot(`bench/results/${stamp}.json`), JSON.stringify(full, null, 2) + '\n');
    writeFileSync(fromRoot(`bench/results/${stamp}.md`), text);
    writeFileSync(fromRoot('bench/results/latest.md'), text);
    log(`wrote bench/results/${stamp}.json, ${stamp}.md and latest.md`);
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main();

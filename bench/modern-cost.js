// @ts-check
/**
 * What one kind of operation costs one taskgate HTTP→stdio (in front of bench/fixture.js), alone: for
 * profiling where bench/modern.js finds the 2026-07-28 path dearer than the 2025 one.
 *
 *   node bench/modern-cost.js KIND[,KIND…] [COUNT] [--in-flight N] [--rounds R] [--before DIR]
 *                             [--prof DIR [--prof-interval US]]
 *
 * KIND: `modern` (2026-07-28 echo, no extension), `legacy` (2025 echo in a session), `v2task`
 * (tools/call → tasks/get until completed), `v1task` (tools/call with task → tasks/result). Several kinds
 * are measured in turn, each on a taskgate started afresh, R rounds; `modern,legacy` ends with the ratio
 * of their main-thread CPU per op, round by round (each round's pair ran back to back on the same load):
 *
 *   node bench/modern-cost.js modern,legacy 3000 --rounds 5 [--in-flight 64]
 *
 * `interleaved`: modern and legacy plain calls on one taskgate, in alternate blocks of B (--block, 250),
 * with the ratio of the main thread's CPU over all blocks and the median of the blocks' ratios; the steadiest
 * figure on a shared machine:
 *
 *   node bench/modern-cost.js interleaved 6000 --rounds 3 [--in-flight 64] [--before DIR]
 *
 * --in-flight N  operations outstanding at once (default 1: sequential, with a p50)
 * --before DIR   also a checkout built before a change (its dist/cli.js), alternated with this one round by
 *                round (which goes first rotates), and the ratio given for each
 * --prof DIR     taskgate under node --cpu-prof into DIR; the measured window is printed in ms from the
 *                profile's start, for `node bench/profile.js FILE --from A --to B --per COUNT`
 * --prof-interval US  the profile's sampling interval (default 100 µs; node's own 1 000 µs gives a few
 *                hundred samples in a window, too few to tell a 2 µs step from noise)
 * --callgrind DIR  (interleaved) taskgate under valgrind's callgrind, its counts in DIR: each block's
 *                instructions on the main thread, counted only in the blocks (the warm-up runs uninstrumented),
 *                so the ratio does not depend on the machine's load:
 *
 *   node bench/modern-cost.js interleaved 2000 --block 500 --callgrind /tmp/cg [--in-flight 64] [--before DIR]
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { LegacyHttpClient, ModernHttpClient } from './lib/http-client.js';
import { Proc, freePort, waitForPort } from './lib/procs.js';
import { median, pipelined, sleep } from './lib/stats.js';
import { BENCH_FIXTURE, NODE, fromRoot } from './lib/targets.js';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    prof: { type: 'string' },
    'prof-interval': { type: 'string', default: '100' },
    'in-flight': { type: 'string', default: '1' },
    rounds: { type: 'string', default: '1' },
    block: { type: 'string', default: '250' },
    before: { type: 'string' },
    strace: { type: 'boolean', default: false },
    callgrind: { type: 'string' },
  },
});
const [kindsArg, countArg] = positionals;
const kinds = (kindsArg ?? '').split(',');
const count = Number(countArg ?? 3000);
const inFlight = Number(values['in-flight']);
const rounds = Number(values.rounds);
const KINDS = ['modern', 'legacy', 'v2task', 'v1task', 'interleaved'];
if (!kinds.every((kind) => KINDS.includes(kind))) {
  process.stderr.write(
    'usage: node bench/modern-cost.js modern|legacy|v2task|v1task|interleaved[,…] [COUNT] [--in-flight N] [--rounds R] [--block B] [--before DIR] [--prof DIR]\n',
  );
  process.exit(2);
}
/** The builds measured, by name: this checkout's, and the one before a change when given. */
const builds = [
  { build: 'after', cli: fromRoot('dist/cli.js') },
  ...(values.before === undefined ? [] : [{ build: 'before', cli: resolve(values.before, 'dist/cli.js') }]),
];

/** CPU ms so far of the main thread and of the other threads of `pid`. @param {number} pid */
function threads(pid) {
  let main = 0;
  let other = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    // schedstat's first field: ns on a CPU (stat's utime and stime count 10 ms ticks, too coarse for a block).
    const ns = Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    if (Number(tid) === pid) main += ns / 1e6;
    else other += ns / 1e6;
  }
  return { main, other };
}

/** A taskgate (`cli`) in front of bench/fixture.js, started, and the pid whose CPU is counted. @param {string} cli */
async function startGate(cli) {
  const port = await freePort();
  const startedAt = performance.now(); // about when taskgate starts, and its profile with it
  const straceOut = `/tmp/taskgate-bench-strace-${process.pid}.txt`;
  const callgrind = values.callgrind === undefined ? undefined : resolve(values.callgrind);
  let config = fromRoot('bench/taskgate.yaml');
  if (callgrind !== undefined) {
    mkdirSync(callgrind, { recursive: true });
    // A block of the other era takes minutes under callgrind: the idle 2025 session must outlive it.
    config = `${callgrind}/taskgate.yaml`;
    writeFileSync(
      config,
      `${readFileSync(fromRoot('bench/taskgate.yaml'), 'utf8')}http:\n  abandonedSessionTimeout: 3600000\n`,
    );
  }
  const gate = new Proc('taskgate', [
    ...(values.strace ? ['strace', '-c', '-f', '-e', 'trace=read,write,writev', '-o', straceOut] : []),
    ...(callgrind === undefined
      ? []
      : [
          'valgrind',
          '--tool=callgrind',
          '--instr-atstart=no',
          '--separate-threads=yes',
          `--callgrind-out-file=${callgrind}/callgrind.%p`,
        ]),
    NODE,
    ...(values.prof
      ? ['--cpu-prof', `--cpu-prof-dir=${values.prof}`, `--cpu-prof-interval=${values['prof-interval']}`]
      : []),
    cli,
    '--config',
    config,
    '--log-level',
    'warn',
    '--listen',
    `127.0.0.1:${port}`,
    '--',
    NODE,
    BENCH_FIXTURE,
  ]);
  await waitForPort(port, callgrind === undefined ? 30_000 : 300_000, () => gate.exited);
  // Under strace the process started is strace: taskgate is its first child.
  const pid = values.strace
    ? Number(readFileSync(`/proc/${gate.pid}/task/${gate.pid}/children`, 'utf8').trim().split(' ')[0])
    : gate.pid;
  const stop = async () => {
    // Under strace, taskgate is stopped first, so that strace exits on its own with the counts written.
    if (values.strace) process.kill(pid, 'SIGTERM');
    await gate.stop();
    if (values.strace) process.stdout.write(readFileSync(straceOut, 'utf8'));
  };
  return { url: `http://127.0.0.1:${port}/mcp`, pid, startedAt, stop, callgrind };
}

/**
 * Under callgrind: `dump` writes the counts since the last one (and zeros them); the main thread's
 * instructions of that dump are read back. @param {number} pid @param {string} dir
 */
function instructions(pid, dir) {
  let dumps = 0;
  const control = (/** @type {string[]} */ ...args) =>
    execFileSync('callgrind_control', [...args, String(pid)], { stdio: 'ignore' });
  return {
    start() {
      control('-i', 'on');
      control('-z');
    },
    /** The main thread's instructions since the last call. */
    dump() {
      control('-d');
      dumps++;
      const totals = readFileSync(`${dir}/callgrind.${pid}.${dumps}-01`, 'utf8').match(/^totals: (\d+)/m);
      if (totals === null) throw new Error(`no totals in dump ${dumps} of ${pid}`);
      return Number(totals[1]);
    },
  };
}

const ECHO = { name: 'echo', arguments: { text: 'ping' } };

/**
 * `modern` and `legacy` on one taskgate, in alternate blocks of `block` plain calls (which goes first
 * rotates): both meet the same process, JIT and load, block by block, so the ratio of their CPU per call
 * holds on a machine too busy for separate runs to resolve a few per cent.
 * @param {string} cli @param {number} block
 */
async function interleaved(cli, block) {
  const { url, pid, stop, callgrind } = await startGate(cli);
  const counted = callgrind === undefined ? undefined : instructions(pid, callgrind);
  const modern = new ModernHttpClient(url, { tasks: false });
  const legacy = new LegacyHttpClient(url);
  try {
    await legacy.initialize();
    /** @param {ModernHttpClient | LegacyHttpClient} client @param {number} n */
    const calls = (client, n) => pipelined(n, inFlight, () => client.request('tools/call', ECHO));
    await calls(modern, 1000); // warm-up
    await calls(legacy, 1000);
    await sleep(500);
    const cpu = { modern: 0, legacy: 0 };
    const ir = { modern: 0, legacy: 0 };
    const ratios = /** @type {number[]} */ ([]);
    counted?.start();
    for (let done = 0, pair = 0; done < count; done += block, pair++) {
      const order =
        pair % 2 === 0
          ? /** @type {const} */ (['modern', 'legacy'])
          : /** @type {const} */ (['legacy', 'modern']);
      const spent = { modern: 0, legacy: 0 };
      for (const kind of order) {
        const before = threads(pid).main;
        await calls(kind === 'modern' ? modern : legacy, block);
        spent[kind] = threads(pid).main - before;
        cpu[kind] += spent[kind];
        if (counted !== undefined) ir[kind] += counted.dump();
      }
      if (spent.legacy > 0) ratios.push(spent.modern / spent.legacy);
    }
    const calledEach = Math.ceil(count / block) * block;
    return {
      kind: 'interleaved',
      count: calledEach,
      block,
      inFlight,
      cpuUsPerOp: {
        modern: Math.round((cpu.modern * 1000) / calledEach),
        legacy: Math.round((cpu.legacy * 1000) / calledEach),
      },
      modernOverLegacy: {
        total: Number((cpu.modern / cpu.legacy).toFixed(3)),
        medianOfBlocks: Number(median(ratios).toFixed(3)),
      },
      ...(counted === undefined
        ? {}
        : {
            instructionsPerOp: {
              modern: Math.round(ir.modern / calledEach),
              legacy: Math.round(ir.legacy / calledEach),
            },
            instructionsModernOverLegacy: Number((ir.modern / ir.legacy).toFixed(3)),
          }),
    };
  } finally {
    await Promise.all([modern.close(), legacy.close()]);
    await stop();
  }
}

/**
 * One kind measured on a taskgate (`cli`) started for it: its line of figures.
 * @param {string} kind @param {string} cli
 */
async function measure(kind, cli) {
  const { url, pid, startedAt, stop } = await startGate(cli);
  const client =
    kind === 'legacy' || kind === 'v1task'
      ? new LegacyHttpClient(url)
      : new ModernHttpClient(url, { tasks: kind === 'v2task' });
  if (client instanceof LegacyHttpClient) await client.initialize();

  const op = async () => {
    if (kind === 'v1task') {
      const { task } = await client.request('tools/call', { ...ECHO, task: {} });
      return client.request('tasks/result', { taskId: task.taskId });
    }
    const first = await client.request('tools/call', ECHO);
    if (kind !== 'v2task') return first;
    for (;;) {
      const task = await client.request('tasks/get', { taskId: first.taskId });
      if (task.status === 'completed') return task;
    }
  };

  /** @param {number} n @param {number[]} into */
  async function run(n, into) {
    await pipelined(n, inFlight, async () => {
      const start = performance.now();
      await op();
      into.push(performance.now() - start);
    });
  }

  try {
    await run(Math.min(count, 1000), []); // warm-up
    await sleep(1500); // an idle gap, to find the window in a profile
    const from = performance.now() - startedAt;
    const requests = client.requests;
    const before = threads(pid);
    const times = /** @type {number[]} */ ([]);
    const wallStart = performance.now();
    await run(count, times);
    const wallMs = performance.now() - wallStart;
    const after = threads(pid);
    const to = performance.now() - startedAt;
    const perOp = (/** @type {number} */ ms) => Math.round((ms * 1000) / count);
    const figures = {
      kind,
      count,
      inFlight,
      p50Ms: Number(median(times).toFixed(3)),
      opsPerSecond: Math.round(count / (wallMs / 1000)),
      requestsPerOp: Number(((client.requests - requests) / count).toFixed(2)),
      cpuUsPerOp: {
        mainThread: perOp(after.main - before.main),
        otherThreads: perOp(after.other - before.other),
      },
      ...(values.prof ? { profileWindowMs: { from: Math.round(from), to: Math.round(to) } } : {}),
    };
    if (values.prof) await sleep(1500);
    return figures;
  } finally {
    await client.close();
    await stop();
  }
}

/** Main-thread µs per op, by build and kind, one entry a round. @type {Map<string, number[]>} */
const mainThread = new Map();
for (let round = 0; round < rounds; round++) {
  // Which build goes first rotates, so that neither always meets the machine as the other left it.
  const order = round % 2 === 0 ? builds : [...builds].reverse();
  for (const { build, cli } of order) {
    for (const kind of kinds) {
      const key = `${build} ${kind}`;
      const figures =
        kind === 'interleaved' ? await interleaved(cli, Number(values.block)) : await measure(kind, cli);
      const us =
        'instructionsModernOverLegacy' in figures
          ? figures.instructionsModernOverLegacy
          : 'modernOverLegacy' in figures
            ? figures.modernOverLegacy.total
            : figures.cpuUsPerOp.mainThread;
      mainThread.set(key, [...(mainThread.get(key) ?? []), us]);
      const label = builds.length > 1 ? { build } : {};
      process.stdout.write(JSON.stringify({ ...label, round: round + 1, ...figures }) + '\n');
    }
  }
}
if (kinds.includes('interleaved')) {
  for (const { build } of builds) {
    const ratios = mainThread.get(`${build} interleaved`) ?? [];
    process.stdout.write(
      JSON.stringify({
        build,
        inFlight,
        interleavedModernOverLegacy: {
          median: median(ratios),
          min: Math.min(...ratios),
          max: Math.max(...ratios),
        },
      }) + '\n',
    );
  }
}
if (kinds.includes('modern') && kinds.includes('legacy')) {
  for (const { build } of builds) {
    const modern = mainThread.get(`${build} modern`) ?? [];
    const legacy = mainThread.get(`${build} legacy`) ?? [];
    const ratios = modern.map((us, i) => Number((us / (legacy[i] ?? Number.NaN)).toFixed(3)));
    process.stdout.write(
      JSON.stringify({
        build,
        inFlight,
        modernOverLegacyMainThread: {
          median: Number(median(ratios).toFixed(3)),
          min: Math.min(...ratios),
          max: Math.max(...ratios),
          rounds: ratios,
        },
        medianUsPerOp: { modern: median(modern), legacy: median(legacy) },
      }) + '\n',
    );
  }
}

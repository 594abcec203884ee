// @ts-check
/**
 * What one kind of operation costs one stdio target, alone: for profiling a miss found by run.js.
 *
 *   node bench/cost.js TARGET KIND [COUNT] [--prof DIR] [--strace]
 *
 *   TARGET  direct | relay | taskgate            (the stdio fixture, bench/relay.js, or taskgate stdio→stdio)
 *   KIND    call | task | blob | inflight         (a sequential echo, a task-augmented echo then tasks/result,
 *                                                  a 256 KiB result, echo with 64 in flight)
 *   --prof DIR   run the target under node --cpu-prof into DIR; the measured window is printed in ms from
 *                the profile's start, for `node bench/profile.js FILE --from A --to B --per COUNT`
 *   --strace     run the target under `strace -c -e trace=read,write,writev` and print its syscall counts
 *                (over its whole life: start-up and warm-up included)
 *
 * Prints the p50, and the CPU the target's process used per operation, split into its main thread and
 * its other threads (V8's GC helpers, libuv), from /proc/PID/task/TID/stat.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { Client, StdioClientTransport } from './sdk.js';
import { median, sleep } from './lib/stats.js';
import { FIXTURE, NODE, TASKGATE, TASKGATE_FLAGS, fromRoot } from './lib/targets.js';
import * as load from './lib/workloads.js';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { prof: { type: 'string' }, strace: { type: 'boolean', default: false } },
});
const [target = '', kind = '', countArg] = positionals;
const count = Number(countArg ?? (kind === 'blob' ? 200 : kind === 'task' ? 2000 : 5000));
/** @type {Record<string, string[]>} */
const targets = {
  direct: [FIXTURE],
  relay: [fromRoot('bench/relay.js'), '--', NODE, FIXTURE],
  taskgate: [TASKGATE, ...TASKGATE_FLAGS, '--', NODE, FIXTURE],
};
const script = targets[target];
if (!script || !['call', 'task', 'blob', 'inflight'].includes(kind) || !(count > 0)) {
  process.stderr.write(
    'usage: node bench/cost.js direct|relay|taskgate call|task|blob|inflight [COUNT] [--prof DIR] [--strace]\n',
  );
  process.exit(2);
}
const straceOut = `/tmp/taskgate-bench-strace-${process.pid}.txt`;
const argv = [
  ...(values.strace ? ['strace', '-c', '-e', 'trace=read,write,writev', '-o', straceOut] : []),
  NODE,
  ...(values.prof ? ['--cpu-prof', `--cpu-prof-dir=${values.prof}`] : []),
  ...script,
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

const client = new Client(
  { name: 'taskgate-bench-cost', version: '1' },
  { capabilities: { tasks: { requests: {} } } },
);
const transport = new StdioClientTransport({
  command: /** @type {string} */ (argv[0]),
  args: argv.slice(1),
  stderr: 'inherit',
});
const startedAt = performance.now(); // about when the target starts, and its profile with it
await client.connect(transport);
// Under strace the transport's pid is strace's: the node process is its only child.
const pid = values.strace
  ? Number(readFileSync(`/proc/${transport.pid}/task/${transport.pid}/children`, 'utf8').trim().split(' ')[0])
  : /** @type {number} */ (transport.pid);

/** @param {number} n @param {number[]} into */
async function run(n, into) {
  if (kind === 'call') for (let i = 0; i < n; i++) into.push(await load.timedCall(client));
  if (kind === 'task') for (let i = 0; i < n; i++) into.push(await load.timedTask(client));
  if (kind === 'blob') await load.blobs(client, n, 256 * 1024);
  if (kind === 'inflight') await load.throughput(client, n, 64);
}

await run(Math.min(count, kind === 'blob' ? 20 : 1000), []); // warm-up
await sleep(1500); // an idle gap, to find the window in a profile
const from = performance.now() - startedAt;
const before = threads(pid);
const times = /** @type {number[]} */ ([]);
const wallStart = performance.now();
await run(count, times);
const wallMs = performance.now() - wallStart;
const after = threads(pid);
const to = performance.now() - startedAt;
await sleep(1500);
await client.close();
await sleep(500);

const perOp = (/** @type {number} */ ms) => Math.round((ms * 1000) / count);
process.stdout.write(
  JSON.stringify({
    target,
    kind,
    count,
    p50Ms: times.length ? Number(median(times).toFixed(3)) : null,
    opsPerSecond: Math.round(count / (wallMs / 1000)),
    cpuUsPerOp: {
      mainThread: perOp(after.main - before.main),
      otherThreads: perOp(after.other - before.other),
    },
    ...(values.prof ? { profileWindowMs: { from: Math.round(from), to: Math.round(to) } } : {}),
  }) + '\n',
);
if (values.strace) process.stdout.write(readFileSync(straceOut, 'utf8'));

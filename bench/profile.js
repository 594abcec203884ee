// @ts-check
/**
 * Reads a V8 .cpuprofile (from `node --cpu-prof`, e.g. `BENCH_CPU_PROF=DIR npm run bench`) and prints
 * where the CPU went: self time per function (name, file:line) and per file, as shares of the busy
 * (non-idle) time and in ms, optionally in a window of the profile.
 *
 *   node bench/profile.js FILE.cpuprofile [--top 25] [--from MS] [--to MS] [--timeline] [--per N]
 *                                         [--inclusive NAME,NAME…]
 *
 * --timeline prints busy % per 250 ms of the profile first, to choose a window (ms from its start).
 * --per N adds µs per operation, for a window in which N operations (calls) ran.
 * --inclusive NAME,… adds the time of the samples with a frame of each function NAME on their stack (its
 *   callees included, each sample counted once per NAME), e.g. `--inclusive checkModernHeaders,requestDigest`.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    top: { type: 'string', default: '25' },
    from: { type: 'string' },
    to: { type: 'string' },
    timeline: { type: 'boolean', default: false },
    per: { type: 'string' },
    inclusive: { type: 'string' },
  },
});
const file = positionals[0];
if (!file) {
  process.stderr.write(
    'usage: node bench/profile.js FILE.cpuprofile [--top N] [--from MS] [--to MS] [--timeline]\n',
  );
  process.exit(2);
}

/**
 * @typedef {{ id: number, callFrame: { functionName: string, url: string, lineNumber: number },
 *   children?: number[] }} ProfileNode
 * @type {{ nodes: ProfileNode[], samples: number[], timeDeltas: number[], startTime: number }}
 */
const profile = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
// (program) is native work outside JS (libuv, stream internals): busy. (idle) is the loop waiting.
const IDLE = new Set(['(idle)']);

// Sample times in ms from the start of the profile.
const times = /** @type {number[]} */ ([]);
let t = 0;
for (const delta of profile.timeDeltas) times.push((t += delta) / 1000);

if (values.timeline) {
  const buckets = new Map();
  profile.samples.forEach((id, i) => {
    const bucket = Math.floor(/** @type {number} */ (times[i]) / 250);
    const entry = buckets.get(bucket) ?? { busy: 0, all: 0 };
    entry.all++;
    if (!IDLE.has(byId.get(id)?.callFrame.functionName ?? '')) entry.busy++;
    buckets.set(bucket, entry);
  });
  for (const [bucket, { busy, all }] of [...buckets].sort((a, b) => a[0] - b[0])) {
    process.stdout.write(
      `${String(bucket * 250).padStart(7)} ms  ${'#'.repeat(Math.round((busy / all) * 40)).padEnd(40)} ${Math.round((busy / all) * 100)}%\n`,
    );
  }
  process.stdout.write('\n');
}

const from = values.from === undefined ? -Infinity : Number(values.from);
const to = values.to === undefined ? Infinity : Number(values.to);
// Each sample stands for the time until the next one (ms); shares and sums are of that time.
/** @type {Map<string, number>} */
const selfByFunction = new Map();
/** @type {Map<string, number>} */
const selfByFile = new Map();
const inclusiveNames = (values.inclusive ?? '').split(',').filter(Boolean);
/** @type {Map<string, number>} */
const inclusive = new Map(inclusiveNames.map((name) => [name, 0]));
/** @type {Map<number, number>} */
const parentOf = new Map();
for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
/** The function names on the stack of a sample's node (itself included). @param {number} id */
function stackNames(id) {
  const names = new Set();
  for (let at = /** @type {number | undefined} */ (id); at !== undefined; at = parentOf.get(at))
    names.add(byId.get(at)?.callFrame.functionName);
  return names;
}
let busy = 0;
let total = 0;
profile.samples.forEach((id, i) => {
  const at = /** @type {number} */ (times[i]);
  if (at < from || at > to) return;
  const weight = /** @type {number} */ (profile.timeDeltas[i + 1] ?? 0) / 1000;
  total += weight;
  const frame = byId.get(id)?.callFrame;
  if (!frame) return;
  if (IDLE.has(frame.functionName)) return;
  busy += weight;
  const where = frame.url ? `${shorten(frame.url)}:${frame.lineNumber + 1}` : '';
  const key = `${frame.functionName || '(anonymous)'} ${where}`.trim();
  selfByFunction.set(key, (selfByFunction.get(key) ?? 0) + weight);
  const fileKey = frame.url ? shorten(frame.url) : frame.functionName;
  selfByFile.set(fileKey, (selfByFile.get(fileKey) ?? 0) + weight);
  if (inclusiveNames.length > 0) {
    const names = stackNames(id);
    for (const name of inclusiveNames)
      if (names.has(name)) inclusive.set(name, (inclusive.get(name) ?? 0) + weight);
  }
});

/** @param {string} url */
function shorten(url) {
  const path = url.replace(/^file:\/\//, '');
  const modules = path.lastIndexOf('/node_modules/');
  if (modules !== -1) return path.slice(modules + 1);
  const dist = path.indexOf('/dist/');
  return dist !== -1 ? path.slice(dist + 1) : path;
}

const top = Number(values.top);
const per = values.per === undefined ? undefined : Number(values.per);
const pct = (/** @type {number} */ ms) =>
  `${((ms / Math.max(1e-9, busy)) * 100).toFixed(1).padStart(5)}% ${ms.toFixed(0).padStart(6)} ms` +
  (per ? ` ${((ms * 1000) / per).toFixed(1).padStart(6)} µs/op` : '');
process.stdout.write(
  `${file}: ${total.toFixed(0)} ms in the window, ${busy.toFixed(0)} ms busy (${((busy / Math.max(1e-9, total)) * 100).toFixed(0)}%)` +
    (per ? `, ${((busy * 1000) / per).toFixed(1)} µs busy per op over ${per} ops` : '') +
    '; shares are of busy time\n\nself time by function\n',
);
for (const [key, n] of [...selfByFunction].sort((a, b) => b[1] - a[1]).slice(0, top)) {
  process.stdout.write(`${pct(n)}  ${key}\n`);
}
process.stdout.write('\nself time by file\n');
for (const [key, n] of [...selfByFile].sort((a, b) => b[1] - a[1]).slice(0, top)) {
  process.stdout.write(`${pct(n)}  ${key}\n`);
}
if (inclusiveNames.length > 0) {
  process.stdout.write('\ninclusive time (the function and its callees)\n');
  for (const [key, n] of inclusive) process.stdout.write(`${pct(n)}  ${key}\n`);
}

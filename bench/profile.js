// @ts-check
/**
 * Reads a V8 .cpuprofile (from `node --cpu-prof`, e.g. `BENCH_CPU_PROF=DIR npm run bench`) and prints
 * where the CPU went: self time per function (name, file:line) and per file, as shares of the busy
 * (non-idle) samples, optionally in a window of the profile.
 *
 *   node bench/profile.js FILE.cpuprofile [--top 25] [--from MS] [--to MS] [--timeline]
 *
 * --timeline prints busy % per 250 ms of the profile first, to choose a window (ms from its start).
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
const IDLE = new Set(['(idle)', '(program)']);

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
/** @type {Map<string, number>} */
const selfByFunction = new Map();
/** @type {Map<string, number>} */
const selfByFile = new Map();
let busy = 0;
let total = 0;
profile.samples.forEach((id, i) => {
  const at = /** @type {number} */ (times[i]);
  if (at < from || at > to) return;
  total++;
  const frame = byId.get(id)?.callFrame;
  if (!frame) return;
  if (IDLE.has(frame.functionName)) return;
  busy++;
  const where = frame.url ? `${shorten(frame.url)}:${frame.lineNumber + 1}` : '';
  const key = `${frame.functionName || '(anonymous)'} ${where}`.trim();
  selfByFunction.set(key, (selfByFunction.get(key) ?? 0) + 1);
  const fileKey = frame.url ? shorten(frame.url) : frame.functionName;
  selfByFile.set(fileKey, (selfByFile.get(fileKey) ?? 0) + 1);
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
const pct = (/** @type {number} */ n) => `${((n / Math.max(1, busy)) * 100).toFixed(1).padStart(5)}%`;
process.stdout.write(
  `${file}: ${total} samples in the window, ${busy} busy (${((busy / Math.max(1, total)) * 100).toFixed(0)}%); shares are of busy samples\n\nself time by function\n`,
);
for (const [key, n] of [...selfByFunction].sort((a, b) => b[1] - a[1]).slice(0, top)) {
  process.stdout.write(`${pct(n)}  ${key}\n`);
}
process.stdout.write('\nself time by file\n');
for (const [key, n] of [...selfByFile].sort((a, b) => b[1] - a[1]).slice(0, top)) {
  process.stdout.write(`${pct(n)}  ${key}\n`);
}

// @ts-check
/**
 * What OpenTelemetry costs taskgate per call (issue 30). Five taskgate stdio→stdio processes in front of
 * the fixture: telemetry off; traces only, every trace sampled (OTEL_METRICS_EXPORTER=none); traces at
 * 100 % and at 1 % with the conventions' metrics (OTEL_TRACES_SAMPLER parentbased_traceidratio; the client
 * sends no trace context, so each call is a root the ratio decides); and metrics only
 * (OTEL_TRACES_EXPORTER=none). Metrics are exported every OTEL_METRIC_EXPORT_INTERVAL=10 s. All export
 * with the default http/protobuf exporters to a collector stand-in in this process that takes every
 * export at once. They alternate block by block, the order rotated each round, so that drift on a
 * shared machine hits each alike. Per variant and round: the p50 of sequential echo calls, and taskgate's
 * CPU per call (utime+stime of its process over calls with 64 in flight, the exports included); on ÷ off,
 * round by round, then the median over rounds and its range.
 *
 *   npm run bench:telemetry       writes bench/results/<UTC date>T<hhmm>-telemetry.json and .md
 *   BENCH_QUICK=1 node bench/telemetry.js   a short run to check the harness; writes nothing
 */
import { once } from 'node:events';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import os from 'node:os';
import { commit } from './lib/commit.js';
import { runFacts } from './lib/machine.js';
import { cpuSeconds } from './lib/procs.js';
import { median, quantile, ratio, round } from './lib/stats.js';
import { FIXTURE, NODE, TASKGATE, TASKGATE_FLAGS, fromRoot, overStdio } from './lib/targets.js';
import * as load from './lib/workloads.js';

const QUICK = process.env.BENCH_QUICK === '1';
const SETTINGS = QUICK
  ? { rounds: 2, warmup: 200, latencyCalls: 200, cpuCalls: 2000, inFlight: 64 }
  : { rounds: 12, warmup: 1000, latencyCalls: 500, cpuCalls: 8000, inFlight: 64 };
const started = performance.now();
const log = (/** @type {string} */ line) =>
  process.stderr.write(
    `[telemetry ${((performance.now() - started) / 1000).toFixed(0).padStart(3)} s] ${line}\n`,
  );

/** Takes what the exporter posts and answers 200 at once, counting exports and bytes. */
async function collector() {
  const received = { exports: 0, bytes: 0, metricExports: 0 };
  const server = createServer((req, res) => {
    req.on('data', (chunk) => (received.bytes += chunk.length));
    req.on('end', () => {
      received.exports++;
      if (req.url === '/v1/metrics') received.metricExports++;
      res.writeHead(200, { 'content-type': 'application/x-protobuf' });
      res.end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = /** @type {import('node:net').AddressInfo} */ (server.address());
  return { url: `http://127.0.0.1:${port}`, received, close: () => server.close() };
}

/** @param {string} endpoint */
const VARIANTS = (endpoint) => {
  const on = {
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
    OTEL_METRIC_EXPORT_INTERVAL: '10000',
  };
  return [
    { name: 'off', env: {} },
    { name: 'traces 100 %', env: { ...on, OTEL_TRACES_SAMPLER_ARG: '1', OTEL_METRICS_EXPORTER: 'none' } },
    { name: 'traces 100 % + metrics', env: { ...on, OTEL_TRACES_SAMPLER_ARG: '1' } },
    { name: 'traces 1 % + metrics', env: { ...on, OTEL_TRACES_SAMPLER_ARG: '0.01' } },
    { name: 'metrics only', env: { ...on, OTEL_TRACES_EXPORTER: 'none' } },
  ];
};

const loadBefore = os.loadavg();
const sink = await collector();
/** @type {{ name: string, env: Record<string, string>, running: import('./lib/targets.js').Running, p50: number[], cpuUs: number[] }[]} */
const variants = [];
for (const variant of VARIANTS(sink.url)) {
  const running = await overStdio([NODE, TASKGATE, ...TASKGATE_FLAGS, '--', NODE, FIXTURE], variant.env);
  await load.check(running.client, 1024);
  await load.latency(running.client, SETTINGS.warmup, []);
  variants.push({
    ...variant,
    running,
    p50: /** @type {number[]} */ ([]),
    cpuUs: /** @type {number[]} */ ([]),
  });
}
log(`started ${variants.map((v) => v.name).join(', ')}; ${SETTINGS.rounds} rounds`);
for (let r = 0; r < SETTINGS.rounds; r++) {
  const order = variants.map((_, i) => variants[(i + r) % variants.length]);
  for (const variant of order) {
    if (variant === undefined) continue;
    const { client, pid } = variant.running;
    const latencies = /** @type {number[]} */ ([]);
    await load.latency(client, SETTINGS.latencyCalls, latencies);
    variant.p50.push(quantile(latencies, 0.5));
    const cpuBefore = cpuSeconds(pid);
    await load.throughput(client, SETTINGS.cpuCalls, SETTINGS.inFlight);
    variant.cpuUs.push(((cpuSeconds(pid) - cpuBefore) / SETTINGS.cpuCalls) * 1e6);
  }
  log(
    `round ${r + 1}: ${variants.map((v) => `${v.name} ${v.p50.at(-1)?.toFixed(3)} ms ${v.cpuUs.at(-1)?.toFixed(0)} µs`).join(' | ')}`,
  );
}
for (const variant of variants) await variant.running.stop();
sink.close();

const [off] = variants;
if (off === undefined) throw new Error('no variants');
/** @param {number[]} values */
const spread = (values) => ({
  median: round(median(values)),
  min: round(Math.min(...values)),
  max: round(Math.max(...values)),
});
const report = {
  ...runFacts(loadBefore, started, QUICK),
  commit: commit(),
  settings: SETTINGS,
  exported: {
    posts: sink.received.exports,
    metricPosts: sink.received.metricExports,
    kib: round(sink.received.bytes / 1024),
  },
  variants: variants.map((variant) => ({
    name: variant.name,
    p50Ms: spread(variant.p50),
    cpuUsPerCall: spread(variant.cpuUs),
    p50VsOff: spread(variant.p50.map((value, i) => ratio(value, off.p50[i] ?? NaN))),
    cpuVsOff: spread(variant.cpuUs.map((value, i) => ratio(value, off.cpuUs[i] ?? NaN))),
  })),
};

/** @param {{ median: number, min: number, max: number }} s @param {string} unit */
const cell = (s, unit) => `${s.median}${unit} (${s.min}–${s.max})`;
const md = [
  `# taskgate with OpenTelemetry, ${report.date}`,
  '',
  `Commit ${report.commit}; Node ${report.node}, ${report.platform}; load average ${report.loadAverageBefore.join(' ')} before, ${report.loadAverageAfter.join(' ')} after; ${report.durationSeconds} s. Command: \`npm run bench:telemetry\` ([\`bench/telemetry.js\`](../telemetry.js)).`,
  '',
  `taskgate stdio→stdio in front of the fixture, ${variants.length} processes alternated block by block over ${SETTINGS.rounds} rounds (order rotated): ${SETTINGS.latencyCalls} sequential echo calls for the p50, then ${SETTINGS.cpuCalls} with ${SETTINGS.inFlight} in flight for taskgate's CPU per call (its process's utime+stime, the exports included). On: OTLP http/protobuf to a collector stand-in that answers at once, OTEL_TRACES_SAMPLER=parentbased_traceidratio, the client sending no trace context; metrics (the MCP conventions' histograms) exported every 10 s, left out with OTEL_METRICS_EXPORTER=none, traces left out with OTEL_TRACES_EXPORTER=none. Median over rounds (range); ratios to off taken round by round. ${report.exported.posts} exports (${report.exported.metricPosts} of metrics), ${report.exported.kib} KiB in all.`,
  '',
  '| telemetry | p50 latency | × off | CPU per call | × off |',
  '| --- | --- | --- | --- | --- |',
  ...report.variants.map(
    (v) =>
      `| ${v.name} | ${cell(v.p50Ms, ' ms')} | ${cell(v.p50VsOff, '×')} | ${cell(v.cpuUsPerCall, ' µs')} | ${cell(v.cpuVsOff, '×')} |`,
  ),
  '',
].join('\n');
process.stdout.write(md);
if (!QUICK) {
  const stamp = report.date.slice(0, 16).replace(':', '');
  mkdirSync(fromRoot('bench/results'), { recursive: true });
  writeFileSync(fromRoot(`bench/results/${stamp}-telemetry.json`), JSON.stringify(report, null, 2) + '\n');
  writeFileSync(fromRoot(`bench/results/${stamp}-telemetry.md`), md);
  log(`wrote bench/results/${stamp}-telemetry.json and .md`);
}

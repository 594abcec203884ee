// @ts-check
/**
 * The benchmark: an SDK Client drives each target in turn (A B A B …, so drift on a shared machine hits
 * every target alike) and the figures are reported as ratios to the direct call.
 *
 *   npm run bench                 all workloads, writes bench/results/<date>.json and .md
 *   BENCH_QUICK=1 npm run bench   a short run, to check the harness
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';

const root = (/** @type {string} */ path) => fileURLToPath(new URL(`../${path}`, import.meta.url));
const FIXTURE = root('test/fixtures/legacy-server.js');
const TASKGATE = root('dist/cli.js');
const QUICK = process.env.BENCH_QUICK === '1';
const ROUNDS = QUICK ? 2 : 10;
const CALLS_PER_ROUND = QUICK ? 200 : 1000;
const IN_FLIGHT = 16;
const THROUGHPUT_CALLS = QUICK ? 500 : 4000;
const BLOB_BYTES = 256 * 1024;
const BLOB_CALLS = QUICK ? 20 : 100;

/** @type {Record<string, string[]>} */
const TARGETS = {
  direct: [process.execPath, FIXTURE],
  'taskgate stdio→stdio': [
    process.execPath,
    TASKGATE,
    '--log-level',
    'warn',
    '--',
    process.execPath,
    FIXTURE,
  ],
};

/** @param {string[]} argv */
async function open(argv) {
  const [command, ...args] = argv;
  const client = new Client({ name: 'bench', version: '1' }, { capabilities: { tasks: { requests: {} } } });
  await client.connect(
    new StdioClientTransport({ command: /** @type {string} */ (command), args, stderr: 'inherit' }),
  );
  return client;
}

/** @param {Client} client @param {string} name @param {Record<string, unknown>} args */
const call = (client, name, args) =>
  client.request({ method: 'tools/call', params: { name, arguments: args } }, CallToolResultSchema);

/** @param {number[]} values @param {number} q */
const quantile = (values, q) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
};

/** Sequential latency of one small call, in ms. @param {Client} client @param {number[]} into */
async function latencyRound(client, into) {
  for (let i = 0; i < CALLS_PER_ROUND; i++) {
    const start = performance.now();
    await call(client, 'echo', { text: 'ping' });
    into.push(performance.now() - start);
  }
}

/** Calls per second with IN_FLIGHT calls outstanding. @param {Client} client */
async function throughput(client) {
  let next = 0;
  const start = performance.now();
  const worker = async () => {
    while (next++ < THROUGHPUT_CALLS) await call(client, 'echo', { text: 'ping' });
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  return THROUGHPUT_CALLS / ((performance.now() - start) / 1000);
}

/** MB/s of 256 KiB results. @param {Client} client */
async function blobs(client) {
  const start = performance.now();
  for (let i = 0; i < BLOB_CALLS; i++) await call(client, 'large', { bytes: BLOB_BYTES });
  return (BLOB_CALLS * BLOB_BYTES) / 1e6 / ((performance.now() - start) / 1000);
}

/** Latency of create → tasks/result for a zero-work tool, in ms. @param {Client} client @param {number[]} into */
async function taskRound(client, into) {
  for (let i = 0; i < CALLS_PER_ROUND / 4; i++) {
    const start = performance.now();
    const { task } = await client.request(
      { method: 'tools/call', params: { name: 'echo', arguments: { text: 'ping' }, task: {} } },
      CreateTaskResultSchema,
    );
    await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    into.push(performance.now() - start);
  }
}

async function main() {
  /** @type {Record<string, Client>} */
  const clients = {};
  for (const [name, argv] of Object.entries(TARGETS)) clients[name] = await open(argv);
  /** @type {Record<string, {latency: number[], throughput: number[], blobs: number[]}>} */
  const samples = {};
  for (const name of Object.keys(clients)) samples[name] = { latency: [], throughput: [], blobs: [] };

  for (const client of Object.values(clients)) await latencyRound(client, []); // warm-up
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, client] of Object.entries(clients)) {
      const sample = /** @type {NonNullable<typeof samples[string]>} */ (samples[name]);
      await latencyRound(client, sample.latency);
      sample.throughput.push(await throughput(client));
      sample.blobs.push(await blobs(client));
    }
  }
  const taskLatency = /** @type {number[]} */ ([]);
  const plainLatency = /** @type {number[]} */ ([]);
  const gate = /** @type {Client} */ (clients['taskgate stdio→stdio']);
  for (let round = 0; round < ROUNDS; round++) {
    await taskRound(gate, taskLatency);
    await latencyRound(gate, plainLatency);
  }
  for (const client of Object.values(clients)) await client.close();

  const direct = /** @type {NonNullable<typeof samples[string]>} */ (samples.direct);
  const median = (/** @type {number[]} */ values) => quantile(values, 0.5);
  const results = Object.fromEntries(
    Object.entries(samples).map(([name, s]) => [
      name,
      {
        latencyP50Ms: median(s.latency),
        latencyP99Ms: quantile(s.latency, 0.99),
        latencyRatio: median(s.latency) / median(direct.latency),
        callsPerSecond: median(s.throughput),
        throughputRatio: median(s.throughput) / median(direct.throughput),
        blobMBps: median(s.blobs),
        blobRatio: median(s.blobs) / median(direct.blobs),
      },
    ]),
  );
  const report = {
    date: new Date().toISOString(),
    node: process.version,
    quick: QUICK,
    callsPerTarget: ROUNDS * CALLS_PER_ROUND,
    results,
    taskPath: {
      createToResultP50Ms: median(taskLatency),
      plainCallP50Ms: median(plainLatency),
      ratio: median(taskLatency) / median(plainLatency),
    },
  };
  const lines = [
    `# Benchmark ${report.date} (${report.node}${QUICK ? ', quick' : ''})`,
    '',
    `${report.callsPerTarget} sequential calls per target, ${IN_FLIGHT} in flight for throughput, ${BLOB_BYTES / 1024} KiB results.`,
    '',
    '| target | p50 ms | p99 ms | latency × direct | calls/s | throughput × direct | 256 KiB MB/s | × direct |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
    ...Object.entries(results).map(
      ([name, r]) =>
        `| ${name} | ${r.latencyP50Ms.toFixed(3)} | ${r.latencyP99Ms.toFixed(3)} | ${r.latencyRatio.toFixed(2)} | ${r.callsPerSecond.toFixed(0)} | ${r.throughputRatio.toFixed(2)} | ${r.blobMBps.toFixed(1)} | ${r.blobRatio.toFixed(2)} |`,
    ),
    '',
    `Task path through taskgate: create → tasks/result p50 ${report.taskPath.createToResultP50Ms.toFixed(3)} ms, ` +
      `${report.taskPath.ratio.toFixed(2)} × a plain call (${report.taskPath.plainCallP50Ms.toFixed(3)} ms).`,
    '',
  ];
  process.stdout.write(lines.join('\n'));
  if (!QUICK) {
    const stamp = report.date.slice(0, 10);
    writeFileSync(root(`bench/results/${stamp}.json`), JSON.stringify(report, null, 2) + '\n');
    writeFileSync(root(`bench/results/${stamp}.md`), lines.join('\n'));
  }
}

await main();

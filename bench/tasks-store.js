// @ts-check
/**
 * What the task store costs a client, through taskgate: the latency of tasks/get and tasks/result with
 * the Redis store against the memory store, in the same run (rounds alternate between the two, so drift
 * on a shared machine hits both alike), and, with Redis only, tasks/result served by another replica.
 *
 *   npm run bench:store                 writes bench/results/<date>-store.json and .md
 *   BENCH_QUICK=1 npm run bench:store   a short run, to check the script (writes nothing)
 *
 * Redis: REDIS_URL, default redis://127.0.0.1:6379; every key lives under a fresh prefix, deleted at the end.
 *
 * - tasks/get: of a completed task, sequentially.
 * - tasks/result, done: of a completed task (a read of the stored result).
 * - create → tasks/result: a task-augmented `echo`, then tasks/result at once, which usually blocks until
 *   the task completes: the whole task path, wake-up included.
 * - across replicas (Redis): `echo` created on gateway A, tasks/result asked of gateway B (HTTP fronts).
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { Redis } from 'ioredis';
// The root's SDK, by path: bench/ has a node_modules of its own, with an older SDK a bare import would find.
import { Client } from '../node_modules/@modelcontextprotocol/sdk/dist/esm/client/index.js';
import { StdioClientTransport } from '../node_modules/@modelcontextprotocol/sdk/dist/esm/client/stdio.js';
import { StreamableHTTPClientTransport } from '../node_modules/@modelcontextprotocol/sdk/dist/esm/client/streamableHttp.js';
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
} from '../node_modules/@modelcontextprotocol/sdk/dist/esm/types.js';
import { FIXTURE, TASKGATE, fromRoot } from './lib/targets.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const QUICK = process.env.BENCH_QUICK === '1';
const ROUNDS = QUICK ? 2 : 10;
const PER_ROUND = QUICK ? 50 : 200;
const WARMUP = QUICK ? 20 : 200;
const PREFIX = `taskgate-bench:${randomUUID()}:`;
const ENV = { ...process.env, TASKGATE_STORE_CURSOR_SECRET: 'bench cursor secret, 32 bytes long' };

const STORE_FLAGS = ['--store', REDIS_URL, '--store-key-prefix', PREFIX];
const CAPABILITIES = { capabilities: { tasks: { requests: {}, cancel: {}, list: {} } } };

/** @param {string[]} flags */
async function overStdio(flags) {
  const client = new Client({ name: 'bench-store', version: '1' }, CAPABILITIES);
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [TASKGATE, '--log-level', 'warn', ...flags, '--', process.execPath, FIXTURE],
      env: /** @type {Record<string, string>} */ (ENV),
      stderr: 'inherit',
    }),
  );
  return client;
}

/** A gateway process on a free port, and its URL once it listens. @param {string[]} flags */
function gateway(flags) {
  const child = spawn(
    process.execPath,
    [TASKGATE, '--listen', '127.0.0.1:0', ...flags, '--', process.execPath, FIXTURE],
    { stdio: ['ignore', 'ignore', 'pipe'], env: ENV },
  );
  return new Promise((resolve, reject) => {
    let log = '';
    child.stderr.on('data', (/** @type {Buffer} */ chunk) => {
      log += chunk.toString();
      const found = /"url":"([^"]+)"/.exec(log);
      if (found) resolve({ child, url: new URL(/** @type {string} */ (found[1])) });
    });
    child.once('exit', (code) => reject(new Error(`gateway exited (${code}): ${log}`)));
  });
}

/** @param {URL} url */
async function overHttp(url) {
  const client = new Client({ name: 'bench-store', version: '1' }, CAPABILITIES);
  await client.connect(new StreamableHTTPClientTransport(url));
  return client;
}

/** @param {Client} client */
const createEcho = async (client) =>
  (
    await client.request(
      { method: 'tools/call', params: { name: 'echo', arguments: { text: 'x'.repeat(200) }, task: {} } },
      CreateTaskResultSchema,
    )
  ).task.taskId;

/** @param {Client} client @param {string} taskId */
const result = (client, taskId) => client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);

/** @param {() => Promise<unknown>} operation @param {number} times @param {number[]} into */
async function timed(operation, times, into) {
  for (let i = 0; i < times; i++) {
    const start = performance.now();
    await operation();
    into.push(performance.now() - start);
  }
}

/** @param {number[]} values @param {number} q */
const quantile = (values, q) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
};

const MEASURES = /** @type {const} */ (['tasks/get', 'tasks/result, done', 'create → tasks/result']);

async function main() {
  const load = loadavg().map((value) => Number(value.toFixed(2)));
  /** @type {Record<string, Client>} */
  const targets = { memory: await overStdio([]), redis: await overStdio(STORE_FLAGS) };
  /** @type {Record<string, Record<string, number[]>>} */
  const samples = {};
  /** @type {Record<string, string>} */
  const done = {};
  for (const [name, client] of Object.entries(targets)) {
    samples[name] = Object.fromEntries(MEASURES.map((measure) => [measure, []]));
    done[name] = await createEcho(client);
    await result(client, /** @type {string} */ (done[name]));
    await timed(() => client.experimental.tasks.getTask(/** @type {string} */ (done[name])), WARMUP, []);
  }
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, client] of Object.entries(targets)) {
      const taskId = /** @type {string} */ (done[name]);
      const sample = /** @type {Record<string, number[]>} */ (samples[name]);
      await timed(() => client.experimental.tasks.getTask(taskId), PER_ROUND, sample['tasks/get'] ?? []);
      await timed(() => result(client, taskId), PER_ROUND, sample['tasks/result, done'] ?? []);
      await timed(
        async () => result(client, await createEcho(client)),
        PER_ROUND / 4,
        sample['create → tasks/result'] ?? [],
      );
    }
  }
  for (const client of Object.values(targets)) await client.close();

  // Across replicas: two gateways on the one Redis; create on A, tasks/result on B.
  const replicas = await Promise.all([gateway(STORE_FLAGS), gateway(STORE_FLAGS)]);
  const [onA, onB] = await Promise.all(replicas.map(({ url }) => overHttp(url)));
  const across = /** @type {number[]} */ ([]);
  const sameReplica = /** @type {number[]} */ ([]);
  const a = /** @type {Client} */ (onA);
  const b = /** @type {Client} */ (onB);
  await timed(async () => result(b, await createEcho(a)), WARMUP / 4, []);
  for (let round = 0; round < ROUNDS; round++) {
    await timed(async () => result(b, await createEcho(a)), PER_ROUND / 4, across);
    await timed(async () => result(a, await createEcho(a)), PER_ROUND / 4, sameReplica);
  }
  await Promise.all([a.close(), b.close()]);
  for (const { child } of replicas) child.kill('SIGTERM');

  const figures = Object.fromEntries(
    Object.entries(samples).map(([name, byMeasure]) => [
      name,
      Object.fromEntries(
        Object.entries(byMeasure).map(([measure, values]) => [
          measure,
          { p50Ms: quantile(values, 0.5), p99Ms: quantile(values, 0.99), n: values.length },
        ]),
      ),
    ]),
  );
  const report = {
    date: new Date().toISOString(),
    node: process.version,
    cpus: cpus().length,
    loadAverageAtStart: load,
    quick: QUICK,
    redis: REDIS_URL.replace(/\/\/[^@/]*@/, '//'),
    front: 'stdio (one client, one taskgate, legacy fixture behind it)',
    results: figures,
    acrossReplicas: {
      front: 'Streamable HTTP, two gateways sharing the Redis',
      createOnAResultOnB: { p50Ms: quantile(across, 0.5), p99Ms: quantile(across, 0.99), n: across.length },
      createOnAResultOnA: {
        p50Ms: quantile(sameReplica, 0.5),
        p99Ms: quantile(sameReplica, 0.99),
        n: sameReplica.length,
      },
    },
  };
  const cell = (/** @type {{p50Ms: number, p99Ms: number}} */ f) =>
    `${f.p50Ms.toFixed(3)} / ${f.p99Ms.toFixed(3)}`;
  const memory = /** @type {Record<string, {p50Ms: number, p99Ms: number}>} */ (figures.memory);
  const redis = /** @type {Record<string, {p50Ms: number, p99Ms: number}>} */ (figures.redis);
  const lines = [
    `# Task store through taskgate, ${report.date} (${report.node}${QUICK ? ', quick' : ''})`,
    '',
    `Sequential requests from one SDK client through taskgate (stdio) to the legacy fixture; Redis at ${report.redis}; ` +
      `${report.cpus} CPUs, load average ${load.join(' ')} at the start (a shared machine: compare the columns, not runs).`,
    `${ROUNDS} rounds alternating memory and Redis; ${ROUNDS * PER_ROUND} tasks/get and tasks/result each, ` +
      `${(ROUNDS * PER_ROUND) / 4} create → tasks/result per store. Times in ms, p50 / p99.`,
    '',
    '| request | memory store | Redis store | Redis − memory (p50) |',
    '| --- | --- | --- | --- |',
    ...MEASURES.map((measure) => {
      const m = /** @type {{p50Ms: number, p99Ms: number}} */ (memory[measure]);
      const r = /** @type {{p50Ms: number, p99Ms: number}} */ (redis[measure]);
      return `| ${measure} | ${cell(m)} | ${cell(r)} | +${(r.p50Ms - m.p50Ms).toFixed(3)} |`;
    }),
    '',
    `Across replicas (two HTTP gateways on the Redis, ${across.length} tasks each): create on A → tasks/result on B ` +
      `${cell(report.acrossReplicas.createOnAResultOnB)}; create on A → tasks/result on A ${cell(report.acrossReplicas.createOnAResultOnA)}.`,
    '',
  ];
  process.stdout.write(lines.join('\n'));
  if (!QUICK) {
    const stamp = report.date.slice(0, 10);
    writeFileSync(fromRoot(`bench/results/${stamp}-store.json`), JSON.stringify(report, null, 2) + '\n');
    writeFileSync(fromRoot(`bench/results/${stamp}-store.md`), lines.join('\n'));
  }
}

try {
  await main();
} finally {
  const raw = new Redis(REDIS_URL);
  for await (const keys of raw.scanStream({ match: `${PREFIX}*`, count: 1_000 })) {
    if (keys.length > 0) await raw.unlink(...keys);
  }
  await raw.quit();
}

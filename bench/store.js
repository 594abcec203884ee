// @ts-check
/**
 * What the task store itself costs, memory against Redis in one run: the latency of `get` (what
 * tasks/get does) on a completed task, and the time from a completion on one replica to the wake-up of a
 * waiter on another (what tasks/result waits for), sequentially, after a warm-up.
 *
 *   npm run build && node bench/store.js           REDIS_URL (default redis://127.0.0.1:6379)
 *   STORE_BENCH_GETS=1000 node bench/store.js      fewer samples, to check the script
 *
 * The Redis keys live under a fresh prefix that is deleted at the end.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';

const URL_ = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const GETS = Number(process.env.STORE_BENCH_GETS ?? 10_000);
const WAKES = Math.max(100, Math.floor(GETS / 10));
const WARMUP = 1_000;

// Imported from the build by a computed path, so the type checker does not pull dist/ in.
const load = (/** @type {string} */ path) => import(new URL(`../dist/${path}`, import.meta.url).href);
const { MemoryTaskStore } = await load('tasks/memory-store.js');
const { RedisTaskStore } = await load('tasks/redis-store.js');

const limits = { maxTasks: 100_000, maxResultBytes: 64 * 1024 * 1024 };
const prefix = `taskgate-bench:${randomUUID()}:`;
const redisOptions = {
  url: URL_,
  keyPrefix: prefix,
  cursorSecret: 'bench cursor secret, 32 bytes..',
  ...limits,
};
const task = { owner: 'bench', sessionId: 'bench', toolName: 'echo', ttl: 600_000, pollInterval: 1_000 };
const outcome = { result: { content: [{ type: 'text', text: 'x'.repeat(200) }] } };
const done = { status: 'completed', outcome, outcomeBytes: Buffer.byteLength(JSON.stringify(outcome)) };

/** @param {number[]} values @param {number} q */
const quantile = (values, q) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
};
/** @param {number[]} samples */
const summary = (samples) =>
  `median ${(quantile(samples, 0.5) * 1000).toFixed(1)} µs, p99 ${(quantile(samples, 0.99) * 1000).toFixed(1)} µs (n=${samples.length})`;

/** Sequential get() latency of one completed task, in ms. @param {any} store */
async function getLatency(store) {
  const { taskId } = await store.create(task);
  await store.update(taskId, done);
  for (let i = 0; i < WARMUP; i++) await store.get(taskId);
  const samples = [];
  for (let i = 0; i < GETS; i++) {
    const start = performance.now();
    await store.get(taskId);
    samples.push(performance.now() - start);
  }
  return samples;
}

/** From update() on `ender` to the waiter on `waiter` resolving, in ms. @param {any} waiter @param {any} ender */
async function wakeLatency(waiter, ender) {
  const samples = [];
  for (let i = 0; i < WAKES + 50; i++) {
    const { taskId } = await ender.create(task);
    const waiting = waiter.waitForTerminal(taskId);
    // Let the waiter's first read come back, so that only the wake-up is timed.
    await waiter.get(taskId);
    const start = performance.now();
    await ender.update(taskId, done);
    await waiting;
    if (i >= 50) samples.push(performance.now() - start);
  }
  return samples;
}

const memory = new MemoryTaskStore(limits);
const a = new RedisTaskStore(redisOptions);
const b = new RedisTaskStore(redisOptions);
try {
  await Promise.all([a.ready(), b.ready()]);
  console.log(`task store, ${GETS} sequential get() of a completed task (200-byte result), Redis at ${URL_}`);
  console.log(`  memory: ${summary(await getLatency(memory))}`);
  console.log(`  redis:  ${summary(await getLatency(a))}`);
  console.log(`completion → waiter woken, ${WAKES} times`);
  console.log(`  memory, same store:        ${summary(await wakeLatency(memory, memory))}`);
  console.log(`  redis, other replica:      ${summary(await wakeLatency(a, b))}`);
} finally {
  await Promise.all([memory.close(), a.close(), b.close()]);
  const raw = new Redis(URL_);
  for await (const keys of raw.scanStream({ match: `${prefix}*`, count: 1_000 })) {
    if (keys.length > 0) await raw.unlink(...keys);
  }
  await raw.quit();
}

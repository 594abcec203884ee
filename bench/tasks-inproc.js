// @ts-check
/**
 * The task store measured inside one process, against the real MemoryTaskStore from dist/ (the store
 * taskgate runs by default), with nothing else around it. Run by run.js as
 *
 *   node --expose-gc bench/tasks-inproc.js [count]      prints one JSON object on stdout
 *
 * - memory: bytes per held task (working, and completed with a 1 KiB result), as the growth of
 *   heapUsed + external after two full GCs (gc() from --expose-gc) before and after creating `count`
 *   tasks. A forced full GC makes the figure exact and independent of when the process would give memory
 *   back to the OS; RSS is reported too, but only as an upper bound (Node keeps peak RSS for a while).
 *   Each result is parsed from its own JSON text, as taskgate gets it from the upstream, so no two tasks
 *   share a string.
 * - waiters: `count` waitForTerminal() waiters (what tasks/result blocks on), then every task completed
 *   in a loop; the time from the first completion to the last waiter released, and each waiter's delay
 *   after its own task's completion.
 */
import { rssBytes } from './lib/procs.js';
import { quantile, round } from './lib/stats.js';

const COUNT = Number(process.argv[2] ?? 10_000);
const { MemoryTaskStore } = await import(new URL('../dist/tasks/memory-store.js', import.meta.url).href);

const gc = /** @type {() => void} */ (/** @type {any} */ (globalThis).gc);
if (typeof gc !== 'function') throw new Error('run with node --expose-gc');

const newStore = () => new MemoryTaskStore({ maxTasks: COUNT * 4, maxResultBytes: 1024 * 1024 * 1024 });
const newTask = {
  owner: 'bench-session',
  sessionId: 'bench-session',
  toolName: 'echo',
  ttl: 3_600_000,
  pollInterval: 1000,
};

/** A completed outcome with a 1 KiB text, parsed from its own JSON like an upstream answer. @param {number} i */
function outcome(i) {
  const text = `${String(i).padStart(8, '0')}${'x'.repeat(1024 - 8)}`;
  const json = JSON.stringify({ content: [{ type: 'text', text }] });
  return { outcome: { result: JSON.parse(json) }, outcomeBytes: Buffer.byteLength(json) };
}

function settled() {
  gc();
  gc();
  const { heapUsed, external } = process.memoryUsage();
  return { heap: heapUsed + external, rss: rssBytes(process.pid) };
}

/** @param {'working' | 'completed'} kind */
async function memory(kind) {
  // Warm up the code paths on a store that is then dropped.
  const warm = newStore();
  for (let i = 0; i < 1000; i++) {
    const record = await warm.create(newTask);
    if (kind === 'completed') await warm.update(record.taskId, { status: 'completed', ...outcome(i) });
  }
  await warm.close();
  const store = newStore();
  const before = settled();
  let resultBytes = 0;
  for (let i = 0; i < COUNT; i++) {
    const record = await store.create(newTask);
    if (kind === 'completed') {
      const done = outcome(i);
      resultBytes += done.outcomeBytes;
      await store.update(record.taskId, { status: 'completed', ...done });
    }
  }
  const after = settled();
  const perTask = (after.heap - before.heap) / COUNT;
  const resultPerTask = resultBytes / COUNT;
  const heldBy = store.size; // keeps the store alive until after the measurement
  await store.close();
  return {
    tasks: heldBy.live + heldBy.terminal,
    heapBytesPerTask: round(perTask),
    resultBytesPerTask: round(resultPerTask),
    overheadBytesPerTask: round(perTask - resultPerTask),
    rssBytesPerTaskUpperBound: round((after.rss - before.rss) / COUNT),
  };
}

async function waiters() {
  const store = newStore();
  const ids = [];
  for (let i = 0; i < COUNT; i++) ids.push((await store.create(newTask)).taskId);
  const completedAt = new Float64Array(COUNT);
  const releasedAt = new Float64Array(COUNT);
  const released = ids.map((id, i) =>
    store.waitForTerminal(id).then(() => {
      releasedAt[i] = performance.now();
    }),
  );
  const done = outcome(0);
  const first = performance.now();
  for (let i = 0; i < COUNT; i++) {
    completedAt[i] = performance.now();
    await store.update(/** @type {string} */ (ids[i]), { status: 'completed', ...done });
  }
  const lastCompletion = performance.now();
  await Promise.all(released);
  const last = Math.max(...releasedAt);
  const delays = Array.from(releasedAt, (at, i) => at - /** @type {number} */ (completedAt[i]));
  await store.close();
  return {
    waiters: COUNT,
    allReleasedMs: round(last - first),
    completionLoopMs: round(lastCompletion - first),
    lastReleasedAfterLastCompletionMs: round(last - lastCompletion),
    delayAfterOwnCompletionMs: {
      p50: round(quantile(delays, 0.5)),
      p99: round(quantile(delays, 0.99)),
      max: round(Math.max(...delays)),
    },
  };
}

const report = {
  count: COUNT,
  completed1KiB: await memory('completed'),
  working: await memory('working'),
  waiters: await waiters(),
};
process.stdout.write(JSON.stringify(report) + '\n');

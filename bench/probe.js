// @ts-check
/**
 * Preloaded (`node --expose-gc --import ./bench/probe.js dist/cli.js ...`) into the one taskgate process
 * that holds 10 000 tasks, to look inside it without touching src/: it watches event-loop delay
 * (perf_hooks.monitorEventLoopDelay, 1 ms resolution) and, on each SIGUSR2, writes one line to stderr:
 *
 *   BENCH-PROBE {"eld":{p50,p99,max,mean} in ms since the last report, "memory": process.memoryUsage()
 *                after two full GCs}
 *
 * and starts a new event-loop-delay window. stdout is untouched (it carries MCP).
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';

const histogram = monitorEventLoopDelay({ resolution: 1 });
histogram.enable();

process.on('SIGUSR2', () => {
  const ms = (/** @type {number} */ ns) => ns / 1e6;
  const eld = {
    p50: ms(histogram.percentile(50)),
    p99: ms(histogram.percentile(99)),
    max: ms(histogram.max),
    mean: ms(histogram.mean),
    samples: histogram.count,
  };
  const gc = /** @type {(() => void) | undefined} */ (/** @type {any} */ (globalThis).gc);
  if (gc) {
    gc();
    gc();
  }
  const memory = process.memoryUsage();
  process.stderr.write(`BENCH-PROBE ${JSON.stringify({ eld, memory, gc: gc !== undefined })}\n`);
  histogram.reset();
});

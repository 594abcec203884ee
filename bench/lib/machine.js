// @ts-check
/** What every bench report opens with: when, on what, how loaded the machine was, how long it took. */
import os from 'node:os';
import { round } from './stats.js';

/**
 * @param {number[]} loadBefore os.loadavg() when the run began
 * @param {number} startedMs performance.now() when the run began
 * @param {boolean} quick the run used the quick settings
 */
export function runFacts(loadBefore, startedMs, quick) {
  return {
    date: new Date().toISOString(),
    node: process.version,
    platform: `${os.platform()} ${os.release()}, ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}`,
    loadAverageBefore: loadBefore.map((l) => round(l)),
    loadAverageAfter: os.loadavg().map((l) => round(l)),
    quick,
    durationSeconds: round((performance.now() - startedMs) / 1000),
  };
}

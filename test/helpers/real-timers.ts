/**
 * The unit files share their workers (`isolate: false`): a file that leaves a timer global other than
 * Node's own makes every timer of the next files in that worker never fire, so they hang on their first
 * wait. vitest's fake timers left installed are one way; another, which `vi.isFakeTimers()` does not see,
 * is a spy set on a fake `setTimeout` and restored after `vi.useRealTimers()`: it puts back the fake one of
 * a clock already uninstalled. Such a file fails here, by name, and the globals are made Node's again for
 * the files after it.
 */
import * as timers from 'node:timers';
import { performance } from 'node:perf_hooks';
import { afterAll, vi } from 'vitest';

const NODE_GLOBALS = {
  setTimeout: timers.setTimeout,
  clearTimeout: timers.clearTimeout,
  setInterval: timers.setInterval,
  clearInterval: timers.clearInterval,
  setImmediate: timers.setImmediate,
  clearImmediate: timers.clearImmediate,
  performance,
} as const;

afterAll(() => {
  const faked = vi.isFakeTimers();
  vi.useRealTimers();
  const replaced = Object.entries(NODE_GLOBALS).filter(
    ([name, own]) => (globalThis as Record<string, unknown>)[name] !== own,
  );
  for (const [name, own] of replaced) (globalThis as Record<string, unknown>)[name] = own;
  if (faked)
    throw new Error('this file left fake timers installed (vi.useFakeTimers without vi.useRealTimers)');
  if (replaced.length > 0) {
    throw new Error(
      `this file left ${replaced.map(([name]) => name).join(', ')} replaced (a spy on a fake timer restored after vi.useRealTimers?)`,
    );
  }
});

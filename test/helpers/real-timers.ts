/**
 * The unit files share their workers (`isolate: false`): a file that leaves vitest's fake timers installed
 * makes every timer of the next files in that worker never fire, so they hang on their first wait. Such a
 * file fails here, by name, and the timers are made real again for the files after it.
 */
import { afterAll, vi } from 'vitest';

afterAll(() => {
  if (!vi.isFakeTimers()) return;
  vi.useRealTimers();
  throw new Error('this file left fake timers installed (vi.useFakeTimers without vi.useRealTimers)');
});

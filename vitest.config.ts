import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

/** Long runs under load: in CI with the rest, out of the way of a quick check. */
const SOAK = ['test/integration/load.test.ts', 'test/integration/fuzz.test.ts'];
/** The projects that start processes: dist/ built fresh first, and nothing they started left running after. */
const PROCESSES = ['test/helpers/fresh-build.ts', 'test/helpers/no-leftovers.ts'];

export default defineConfig({
  test: {
    // Vitest's own default is one worker fewer than the cores: on a 2-core machine, one file at a time.
    // The integration files mostly wait (on the processes they start, on timers), so the cores get one more
    // file than there are of them: on the 2-core machine the suite used 1.3 cores with one file per core.
    maxWorkers: availableParallelism() + 1,
    testTimeout: 30_000,
    hookTimeout: 30_000,
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts', 'src/**/*.test.ts'],
          setupFiles: ['test/helpers/real-timers.ts'],
          // Each file importing the SDK, zod and the core afresh cost more CPU than its tests (import 60 s of
          // 100 s); in-process tests keep their state in what they open, so a worker's files share modules.
          isolate: false,
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          exclude: SOAK,
          globalSetup: PROCESSES,
        },
      },
      { extends: true, test: { name: 'soak', include: SOAK, globalSetup: PROCESSES } },
    ],
  },
});

/** Full garbage collections in the test's own process, with a turn between so WeakRefs may be cleared. */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

export async function collectGarbage(): Promise<void> {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  await new Promise((resolve) => setImmediate(resolve));
  gc();
  await new Promise((resolve) => setImmediate(resolve));
  gc();
}

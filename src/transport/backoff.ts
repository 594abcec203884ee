/**
 * The delay before the next attempt after `failures` failures in a row: `firstMs`, doubled for each one
 * more, never above `maxMs`. For every reconnect and restart, so that none of them spins.
 */
export function backoffDelay(firstMs: number, maxMs: number, failures: number): number {
  // The exponent is capped so that a first delay of 0 never meets Infinity (0 * Infinity is NaN).
  return Math.min(firstMs * 2 ** Math.min(failures, 30), maxMs);
}

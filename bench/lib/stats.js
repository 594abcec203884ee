// @ts-check
/** Small statistics for the bench: quantiles of samples, medians of rounds; and the in-flight loop they time. */

/** @param {number[]} values @param {number} q 0..1 (nearest rank) */
export function quantile(values, q) {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  return /** @type {number} */ (
    sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]
  );
}

/** @param {number[]} values */
export const median = (values) => quantile(values, 0.5);

/** @param {number} a @param {number} b */
export const ratio = (a, b) => (Number.isFinite(a) && Number.isFinite(b) && b !== 0 ? a / b : NaN);

/** @param {number} ms */
export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Rounds a number for the JSON report (keeps 4 significant digits, never turns NaN into null silently:
 * NaN stays NaN and JSON.stringify writes null, which the report reads as "not measured").
 * @param {number} value
 */
export const round = (value) => (Number.isFinite(value) ? Number(value.toPrecision(4)) : NaN);

/**
 * Runs `count` operations made by `make(i)` (i = 0 … count − 1, in the order started), at most
 * `inFlight` outstanding: that many workers each start the next one as their last ends. Resolves when
 * all are done (rejects on the first error). The one "N operations, K in flight" loop of the bench.
 * @param {number} count @param {number} inFlight @param {(i: number) => Promise<unknown>} make
 */
export async function pipelined(count, inFlight, make) {
  let next = 0;
  const worker = async () => {
    while (next < count) await make(next++);
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, count) }, worker));
}

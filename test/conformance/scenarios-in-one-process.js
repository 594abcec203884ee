// @ts-check
/**
 * Runs server scenarios of one conformance CLI one after the other in this one process, each as the CLI's
 * own `server --url URL --scenario NAME FLAGS -o DIR`: the scenarios no `--suite` selects (the tasks
 * extension's) would otherwise each cost a Node 22 start of the CLI (about 1 s of CPU), ten per target.
 *
 * The CLI parses `process.argv` when its module is evaluated and calls `process.exit` once the scenario is
 * over, so each scenario evaluates a fresh instance of the module (a query string makes it a new one) with
 * its own argv, and its `process.exit` only marks that scenario as over. Within one process the scenarios
 * run as `--suite` runs them (`server` resets its per-scenario state before each). Like `--suite`, this
 * prints `=== Running scenario: NAME ===` as each starts.
 *
 * Usage (on Node 22): `node scenarios-in-one-process.js CLI URL OUTPUT_DIR FLAGS_JSON SCENARIO...`.
 */
import { pathToFileURL } from 'node:url';

const [cli, url, outputDir, flagsJson, ...scenarios] = process.argv.slice(2);
if (cli === undefined || url === undefined || outputDir === undefined || flagsJson === undefined) {
  console.error('usage: scenarios-in-one-process.js CLI URL OUTPUT_DIR FLAGS_JSON SCENARIO...');
  process.exit(2);
}
const flags = /** @type {string[]} */ (JSON.parse(flagsJson));
const exit = process.exit.bind(process);

/** Ends the scenario running now; a second call from the same scenario's code finds it already ended. */
let endScenario = () => {};
process.exit = /** @type {typeof process.exit} */ (() => endScenario());

for (const [index, scenario] of scenarios.entries()) {
  console.log(`\n=== Running scenario: ${scenario} ===`);
  const ended = new Promise((resolve) => (endScenario = () => resolve(undefined)));
  process.argv = [process.argv[0] ?? '', cli, 'server', '--url', url, '--scenario', scenario, ...flags];
  process.argv.push('-o', outputDir);
  await import(`${pathToFileURL(cli).href}?scenario=${index}`);
  await ended;
}
// What a scenario left running (one that ran out of its time) ends with the process, as with the CLI's own.
exit(0);

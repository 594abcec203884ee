// @ts-check
/**
 * How long a client without tasks waits, after the upstream task has finished, for its plain call to
 * return (issue 3). A client without tasks → taskgate (unwrap) → the native fixture's task-required
 * `sleep-required` (pollInterval 1000 ms; the SDK announces the end with notifications/tasks/status, or
 * the fixture drops those). The wait is the call's time
 * minus the sleep: with a status notification taskgate learns of the end at once; without, at its next
 * poll.
 *
 *   npm run build && node bench/unwrap-latency.js
 */
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const root = (/** @type {string} */ path) => fileURLToPath(new URL(`../${path}`, import.meta.url));
const TASKGATE = root('dist/cli.js');
const FIXTURE = root('test/fixtures/native-server.js');
const CALLS = Number(process.env.CALLS ?? 40);
const SLEEP_MS = 200;

/** @param {boolean} notifications whether the upstream announces the end of its tasks */
async function measure(notifications) {
  const client = new Client({ name: 'bench', version: '1' });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [TASKGATE, '--log-level', 'warn', '--', process.execPath, FIXTURE],
      env: {
        .../** @type {Record<string, string>} */ (process.env),
        FIXTURE_POLL_INTERVAL_MS: '1000',
        FIXTURE_MISBEHAVE: notifications ? '' : 'no-status-notifications',
      },
    }),
  );
  await client.listTools();
  const waits = [];
  for (let i = 0; i < CALLS; i++) {
    const start = performance.now();
    await client.callTool({ name: 'sleep-required', arguments: { ms: SLEEP_MS } });
    waits.push(performance.now() - start - SLEEP_MS);
  }
  await client.close();
  waits.sort((a, b) => a - b);
  return {
    median: waits[Math.floor(waits.length / 2)] ?? NaN,
    p90: waits[Math.floor(waits.length * 0.9)] ?? NaN,
  };
}

const withNotifications = await measure(true);
const withoutNotifications = await measure(false);
process.stdout.write(
  `${CALLS} unwrapped calls of a ${SLEEP_MS} ms task each, upstream pollInterval 1000 ms\n` +
    `wait after the upstream task ended, with status notifications:    median ${withNotifications.median.toFixed(1)} ms, p90 ${withNotifications.p90.toFixed(1)} ms\n` +
    `wait after the upstream task ended, without status notifications: median ${withoutNotifications.median.toFixed(1)} ms, p90 ${withoutNotifications.p90.toFixed(1)} ms\n`,
);

// @ts-check
/**
 * A 2026-07-28 client as people will run it (the TS SDK v2 Client, pinned to 2026-07-28) through taskgate
 * and straight to a 2026-07-28 server (issue 19): what taskgate costs that client in front of a 2025 server
 * and in front of a 2026-07-28 one, against the same client direct to the 2026-07-28 server over HTTP.
 *
 * Targets, all echo tools/call over Streamable HTTP from one SDK v2 client each:
 * - `direct v2 HTTP`: test/fixtures/modern-server.js `--http` (the SDK v2 createMcpHandler);
 * - `taskgate → v2 stdio`: taskgate HTTP→stdio in front of that server over stdio (the translator);
 * - `taskgate sidecar → v2 HTTP`: taskgate HTTP→HTTP in front of the `--http` server (the modern HTTP hop);
 * - `taskgate → 2025 stdio`: taskgate HTTP→stdio in front of bench/fixture.js (the bridge to a 2025 Session).
 * Per round, in an order rotated each round: sequential calls in blocks interleaved across the targets
 * (each block after one untimed call), then, target by target, calls with many in flight. CPU per call is
 * utime+stime of the target's processes (taskgate and its server; the server alone for the direct one) over
 * the in-flight phase. Ratios are to the direct target, taken round by round.
 *
 *   node bench/sdk-v2.js     one quick run (unless BENCH_QUICK=0), JSON on stdout
 */
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { cpuSeconds, startWithUrl } from './lib/procs.js';
import { median, pipelined, quantile, ratio, round } from './lib/stats.js';
import { sdkV2Lines } from './lib/report.js';
import { BENCH_FIXTURE, NODE, fetchWithoutPostSignal, fromRoot, startOnPort } from './lib/targets.js';

const V2_SERVER = fromRoot('test/fixtures/modern-server.js');
const TASKGATE = fromRoot('dist/cli.js');

export const SDK_V2_SETTINGS = {
  quick: { rounds: 2, calls: 60, block: 10, throughputCalls: 300, inFlight: 32, budgetS: 60 },
  full: { rounds: 5, calls: 150, block: 15, throughputCalls: 800, inFlight: 32, budgetS: 90 },
};

/** @typedef {{ name: string, url: string, pids: () => number[], stop: () => Promise<void> }} Started */

/** The pids of `pid`'s children (its server), from /proc. @param {number} pid */
function childrenOf(pid) {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

/** CPU seconds of all `pids` so far; a process that is gone counts 0. @param {number[]} pids */
function cpuOf(pids) {
  let total = 0;
  for (const pid of pids) {
    try {
      total += cpuSeconds(pid);
    } catch {
      // gone
    }
  }
  return total;
}

/** The v2 server over HTTP. @returns {Promise<{ proc: import('./lib/procs.js').Proc, url: string }>} */
const startV2Http = () =>
  startWithUrl('v2 server (HTTP)', [NODE, V2_SERVER, '--http', '0'], /^listening (\S+)$/);

/** taskgate on a free port, in front of `upstream` (what follows --listen). @param {string} label @param {string[]} upstream */
const startGate = (label, upstream) =>
  startOnPort(label, (port) => [
    NODE,
    TASKGATE,
    '--log-level',
    'warn',
    '--listen',
    `127.0.0.1:${port}`,
    ...upstream,
  ]);

/** @returns {Promise<Started>[]} */
function startTargets() {
  return [
    startV2Http().then(({ proc, url }) => ({
      name: 'direct v2 HTTP',
      url,
      pids: () => [proc.pid],
      stop: () => proc.stop(),
    })),
    startGate('taskgate → v2 stdio', ['--', NODE, V2_SERVER]).then(({ proc, url }) => ({
      name: 'taskgate → v2 stdio',
      url,
      pids: () => [proc.pid, ...childrenOf(proc.pid)],
      stop: () => proc.stop(),
    })),
    startV2Http().then(async (server) => {
      const gate = await startGate('taskgate sidecar → v2 HTTP', ['--upstream-url', server.url]).catch(
        async (/** @type {unknown} */ error) => {
          await server.proc.stop();
          throw error;
        },
      );
      return {
        name: 'taskgate sidecar → v2 HTTP',
        url: gate.url,
        pids: () => [gate.proc.pid, server.proc.pid],
        stop: async () => {
          await gate.proc.stop();
          await server.proc.stop();
        },
      };
    }),
    startGate('taskgate → 2025 stdio', ['--', NODE, BENCH_FIXTURE]).then(({ proc, url }) => ({
      name: 'taskgate → 2025 stdio',
      url,
      pids: () => [proc.pid, ...childrenOf(proc.pid)],
      stop: () => proc.stop(),
    })),
  ];
}

/** An SDK v2 client pinned to 2026-07-28. @param {string} url */
async function v2Client(url) {
  const client = new Client(
    { name: 'taskgate-bench-v2', version: '1' },
    { capabilities: {}, versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { fetch: fetchWithoutPostSignal }));
  return client;
}

/** One echo, checked. @param {Client} client */
async function echo(client) {
  const result = await client.callTool({ name: 'echo', arguments: { text: 'ping' } });
  const first = /** @type {{ type: string, text?: string }[]} */ (result.content)[0];
  if (first?.text !== 'ping') throw new Error(`echo answered ${JSON.stringify(result)}`);
}

/**
 * @param {typeof SDK_V2_SETTINGS.full} s
 * @param {(line: string) => void} log
 */
export async function sdkV2(s, log = () => undefined) {
  const settled = await Promise.allSettled(startTargets());
  const targets = settled.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  /** @type {{ target: Started, client: Client }[]} */
  const up = [];
  try {
    const failed = settled.find((result) => result.status === 'rejected');
    if (failed) throw /** @type {PromiseRejectedResult} */ (failed).reason;
    for (const target of targets) up.push({ target, client: await v2Client(target.url) });
    for (const { client } of up) {
      for (let i = 0; i < 50; i++) await echo(client);
      await pipelined(s.throughputCalls / 2, s.inFlight, () => echo(client));
    }
    log('sdk-v2: warmed up');

    const names = up.map(({ target }) => target.name);
    /** @type {Record<string, { p50: number[], p99: number[], perSecond: number[], cpu: number, cpuCalls: number }>} */
    const samples = Object.fromEntries(
      names.map((name) => [name, { p50: [], p99: [], perSecond: [], cpu: 0, cpuCalls: 0 }]),
    );
    const started = performance.now();
    let rounds = 0;
    for (let r = 0; r < s.rounds; r++) {
      const elapsed = (performance.now() - started) / 1000;
      if (r >= 2 && elapsed + elapsed / r > s.budgetS) {
        log(`sdk-v2: stopping after ${r} rounds: another would pass the ${s.budgetS} s budget`);
        break;
      }
      rounds++;
      const order = up.map((_, i) => /** @type {(typeof up)[number]} */ (up[(i + r) % up.length]));
      /** @type {Record<string, number[]>} */
      const times = Object.fromEntries(names.map((name) => [name, []]));
      for (let done = 0; done < s.calls; done += s.block) {
        for (const { target, client } of order) {
          await echo(client);
          for (let i = 0; i < Math.min(s.block, s.calls - done); i++) {
            const start = performance.now();
            await echo(client);
            times[target.name]?.push(performance.now() - start);
          }
        }
      }
      for (const { target, client } of order) {
        const sample = /** @type {(typeof samples)[string]} */ (samples[target.name]);
        const ms = /** @type {number[]} */ (times[target.name]);
        sample.p50.push(quantile(ms, 0.5));
        sample.p99.push(quantile(ms, 0.99));
        const pids = target.pids();
        const cpu = cpuOf(pids);
        const start = performance.now();
        await pipelined(s.throughputCalls, s.inFlight, () => echo(client));
        sample.perSecond.push(s.throughputCalls / ((performance.now() - start) / 1000));
        sample.cpu += cpuOf(pids) - cpu;
        sample.cpuCalls += s.throughputCalls;
      }
      log(`sdk-v2: round ${r + 1}/${s.rounds} done`);
    }
    return summarize(samples, { ...s, rounds });
  } finally {
    for (const { client } of up) await client.close().catch(() => undefined);
    for (const target of targets) await target.stop().catch(() => undefined);
  }
}

const DIRECT = 'direct v2 HTTP';

/** @param {Record<string, { p50: number[], p99: number[], perSecond: number[], cpu: number, cpuCalls: number }>} samples @param {typeof SDK_V2_SETTINGS.full} settings */
function summarize(samples, settings) {
  const direct = /** @type {(typeof samples)[string]} */ (samples[DIRECT]);
  const spread = (/** @type {number[]} */ values) => [
    round(median(values)),
    round(Math.min(...values)),
    round(Math.max(...values)),
  ];
  const targets = Object.entries(samples).map(([name, sample]) => ({
    name,
    p50Ms: round(median(sample.p50)),
    p99Ms: round(median(sample.p99)),
    perSecond: round(median(sample.perSecond)),
    cpuUsPerCall: round((sample.cpu / sample.cpuCalls) * 1e6),
    p50Ratio: spread(sample.p50.map((p50, r) => ratio(p50, /** @type {number} */ (direct.p50[r])))),
    perSecondRatio: spread(
      sample.perSecond.map((perSecond, r) => ratio(perSecond, /** @type {number} */ (direct.perSecond[r]))),
    ),
  }));
  return { settings, targets };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const settings = process.env['BENCH_QUICK'] === '0' ? SDK_V2_SETTINGS.full : SDK_V2_SETTINGS.quick;
  const report = await sdkV2(settings, (line) => process.stderr.write(`${line}\n`));
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  process.stderr.write(`${sdkV2Lines(report).join('\n')}\n`);
}

// @ts-check
/**
 * What a caller's own set of servers costs (issue 32), a part of bench/aggregate.js. Over the HTTP front
 * each 2025 session (as each 2026-07-28 caller, by the same code: aggregate/http-sessions.ts `serve`) gets
 * an aggregator and a Session per entry of `upstreams`, each server a process of its own (`sharing:
 * session`). Two taskgates, one with one legacy fixture as `upstreams`, one with ten; sessions opened on
 * them alternately, the order swapped each time, each open timed (initialize, which every server answers
 * first, + notifications/initialized). Then, with every session open, taskgate's heap (after forced full
 * GCs over the inspector, from its /metrics) and RSS, and the RSS of its servers' processes, each against
 * the same with no session open: ÷ sessions. RSS and heap do not depend on the machine's load; the open
 * times do (the run says the load).
 */
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from '../node_modules/undici/index.js';
import { LegacyHttpClient, ModernHttpClient } from './lib/http-client.js';
import { cpuSeconds, descendants, freePort, rssOf, waitForPort } from './lib/procs.js';
import { median, round, sleep } from './lib/stats.js';
import { FIXTURE, NODE, fromRoot, startOnPort } from './lib/targets.js';
import { inspector, metrics } from './sharing.js';

export const CALLER_SETTINGS = {
  quick: { sessions: 2, settleMs: 500 },
  full: { sessions: 6, settleMs: 1500 },
};

/** How long the servers of a closed session get to exit before the memory is read without them. */
const EXIT_WITHIN_MS = 15_000;

/**
 * A taskgate on the HTTP front with `servers` legacy fixtures as `upstreams`, its /metrics on an admin
 * port and its inspector open (for forced GCs).
 * @param {number} servers
 */
async function startGate(servers) {
  const config = join(tmpdir(), `taskgate-bench-callers-${process.pid}-${servers}.json`);
  /** @type {Record<string, object>} */
  const upstreams = {};
  for (let i = 0; i < servers; i++) upstreams[`s${i}`] = { command: NODE, args: [FIXTURE] };
  writeFileSync(config, JSON.stringify({ upstreams }));
  const [adminPort, inspectPort] = [await freePort(), await freePort()];
  const gate = await startOnPort(`taskgate, ${servers} servers`, (port) => [
    NODE,
    `--inspect=127.0.0.1:${inspectPort}`,
    fromRoot('dist/cli.js'),
    '--config',
    config,
    '--log-level',
    'warn',
    '--listen',
    `127.0.0.1:${port}`,
    '--admin-listen',
    String(adminPort),
  ]);
  try {
    await waitForPort(adminPort, 10_000, () => gate.proc.exited);
    const gc = await inspector(inspectPort);
    return { servers, gate, gc, adminPort, config };
  } catch (error) {
    await gate.proc.stop();
    rmSync(config, { force: true });
    throw error;
  }
}
/** @typedef {Awaited<ReturnType<typeof startGate>>} Gate */
/** @typedef {{ heapUsed: number, rss: number, serversRss: number, processes: number }} Memory */

/**
 * taskgate's heap after two full GCs, its RSS, and its servers' (its descendants') RSS and count.
 * @param {Gate} g @returns {Promise<Memory>}
 */
async function memory(g) {
  for (let k = 0; k < 2; k++) await g.gc.call('HeapProfiler.collectGarbage');
  const m = await metrics(g.adminPort);
  const children = descendants(g.gate.proc.pid);
  return {
    heapUsed: m['nodejs_heap_size_used_bytes'] ?? NaN,
    rss: rssOf(g.gate.proc.pid),
    serversRss: children.reduce((sum, pid) => sum + rssOf(pid), 0),
    processes: children.length,
  };
}

/**
 * Resolves once taskgate has `left` server processes or fewer (the closed sessions' have exited), or
 * after EXIT_WITHIN_MS.
 * @param {Gate} g @param {number} left
 */
async function serversLeft(g, left) {
  const deadline = Date.now() + EXIT_WITHIN_MS;
  while (descendants(g.gate.proc.pid).length > left && Date.now() < deadline) await sleep(100);
}

/** @typedef {(url: string, n: number) => Promise<{ close(): Promise<void> }>} Opener what to close */

/** A 2025 session: initialize + notifications/initialized. @type {Opener} */
async function openSession(url) {
  const client = new LegacyHttpClient(url, { connections: 1 });
  await client.initialize();
  return client;
}

/**
 * The `n`th 2026-07-28 caller: its first request (server/discover), from a loopback address of its own
 * (127.0.0.N), since a caller without identity is its address. @type {Opener}
 */
async function openCaller(url, n) {
  const pool = new Pool(new URL(url).origin, { connections: 1, localAddress: `127.0.0.${n + 2}` });
  try {
    await new ModernHttpClient(url, { pool }).request('server/discover');
  } catch (error) {
    await pool.close();
    throw error;
  }
  return { close: () => pool.close() };
}

/**
 * `sessions` callers of `kind` opened on each gate, alternately (the order swapped each time), each open
 * timed, and taskgate's CPU over them; the memory with all of them open against none, ÷ sessions. They
 * are closed at the end.
 * @param {Gate[]} gates @param {string} kind @param {Opener} opener
 * @param {{ sessions: number, settleMs: number }} s @param {(line: string) => void} log
 */
async function phase(gates, kind, opener, s, log) {
  /** @type {{ close(): Promise<void> }[]} */
  const open = [];
  try {
    await sleep(s.settleMs);
    const before = await Promise.all(gates.map(memory));
    const cpuBefore = gates.map((g) => cpuSeconds(g.gate.proc.pid));
    /** @type {number[][]} */
    const openMs = gates.map(() => []);
    for (let i = 0; i < s.sessions; i++) {
      for (const index of i % 2 === 0 ? [0, 1] : [1, 0]) {
        const g = /** @type {Gate} */ (gates[index]);
        const start = performance.now();
        open.push(await opener(g.gate.url, i));
        openMs[index]?.push(performance.now() - start);
      }
      log(`a caller's servers: ${kind} ${i + 1} of ${s.sessions} open on each`);
    }
    const cpu = gates.map((g, index) => cpuSeconds(g.gate.proc.pid) - (cpuBefore[index] ?? NaN));
    await sleep(s.settleMs);
    const after = await Promise.all(gates.map(memory));
    const per = (/** @type {number} */ index, /** @type {keyof Memory} */ key) =>
      ((after[index]?.[key] ?? NaN) - (before[index]?.[key] ?? NaN)) / s.sessions;
    return Object.fromEntries(
      gates.map((g, index) => [
        `upstreams: ${g.servers}`,
        {
          openMs: round(median(openMs[index] ?? [])),
          openMsEach: (openMs[index] ?? []).map(round),
          cpuMsPerOpen: round(((cpu[index] ?? NaN) * 1000) / s.sessions),
          heapUsedKiB: round(per(index, 'heapUsed') / 1024),
          rssKiB: round(per(index, 'rss') / 1024),
          serversRssMiB: round(per(index, 'serversRss') / 2 ** 20),
          serverProcesses: round(per(index, 'processes')),
          memory: { before: before[index], after: after[index] },
        },
      ]),
    );
  } finally {
    await Promise.all(open.map((one) => one.close()));
  }
}

/**
 * @param {{ sessions: number, settleMs: number }} s
 * @param {(line: string) => void} [log]
 */
export async function callers(s, log = () => undefined) {
  /** @type {Gate[]} */
  const gates = [];
  try {
    for (const servers of [1, 10]) gates.push(await startGate(servers));
    // A caller of each kind first, on each: code loaded, pools warm. A 2026-07-28 caller has no session to
    // end: its servers stay until it is idle (http.sessionIdleTimeout), in every reading alike, so it
    // comes after the 2025 session's have exited, and its phase comes last.
    for (const g of gates) await (await openSession(g.gate.url, 0)).close();
    for (const g of gates) await serversLeft(g, 0);
    for (const g of gates) await (await openCaller(g.gate.url, 250)).close();
    const sessions = await phase(gates, '2025 session', openSession, s, log);
    for (const g of gates) await serversLeft(g, g.servers);
    const modern = await phase(gates, '2026-07-28 caller', openCaller, s, log);
    return { settings: s, perSession: { '2025 session': sessions, '2026-07-28 caller': modern } };
  } finally {
    for (const g of gates) {
      g.gc.close();
      await g.gate.proc.stop();
      rmSync(g.config, { force: true });
    }
  }
}

/** The part of bench/aggregate.js's report. @param {any} x the result of callers() @param {number} level */
export function callersLines(x, level) {
  const lines = ['', `${'#'.repeat(level)} A caller's own servers (bench/aggregate-callers.js)`, ''];
  if (x.error) return [...lines, `Not run: ${x.error}`];
  lines.push(
    `Over the HTTP front each 2025 session and each 2026-07-28 caller gets an aggregator and a Session per server, each server a process of its own. Two taskgates, with 1 and 10 legacy fixtures as \`upstreams\`; ${x.settings.sessions} callers of each kind opened on each, alternately (a 2025 session: initialize + notifications/initialized; a 2026-07-28 caller: its first request, server/discover, from an address of its own). Open: median wall time (load-bound), and taskgate's own CPU (its process, not the servers'; /proc, 10 ms ticks) ÷ opens. Memory with every caller of the kind open against none, ÷ callers; taskgate's heap after forced full GCs.`,
    '',
    "| caller | setup | open ms | taskgate CPU ms / open | taskgate heap KiB / caller | taskgate RSS KiB / caller | servers' RSS MiB / caller | server processes / caller |",
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
  );
  for (const [kind, setups] of Object.entries(x.perSession))
    for (const [name, p] of Object.entries(/** @type {Record<string, any>} */ (setups)))
      lines.push(
        `| ${kind} | ${name} | ${p.openMs} | ${p.cpuMsPerOpen} | ${p.heapUsedKiB} | ${p.rssKiB} | ${p.serversRssMiB} | ${p.serverProcesses} |`,
      );
  lines.push('');
  return lines;
}

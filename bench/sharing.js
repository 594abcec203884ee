// @ts-check
/**
 * Shared upstreams (issue 18, with issue 19's bench): what `--upstream-sharing shared|pool` buys over the
 * HTTP front, against bench/fixture.js (a 2025 stdio server without tasks: every task is taskgate's).
 *
 * 1. Concurrent sessions: N client sessions (1 000) each make `calls` (10) task-augmented echo calls at
 *    once (tools/call with `task`, then tasks/result), in `shared`, `pool` (4) and `session` mode. Every
 *    result is checked and counted; the RSS of taskgate and of all its children is sampled every 100 ms.
 *    `session` mode keeps http.maxSessions at 100 (or fewer): the rest are refused (503) and counted.
 *    The clients share one undici Pool of `connections` keep-alive connections, as a load balancer or a
 *    client library would: one connection per request in flight (10 000) overflows the listen queue (see
 *    bench/PROFILING.md, "Shared upstreams").
 * 2. Idle sessions: in `shared` mode, taskgate's memory (from its /metrics on --admin-listen, and /proc)
 *    before and after opening N sessions that only initialize.
 * 3. Calls/s at `peers.sessions` (100) sessions through taskgate shared and pool, supergateway (stateful
 *    and stateless) and mcp-proxy, all in front of bench/fixture.js, in alternating rounds whose order
 *    rotates, each target's phase bounded in calls and in seconds.
 *
 *   node bench/sharing.js        quick settings, JSON on stdout (BENCH_QUICK=0: the full ones)
 *   npm run bench:sharing        full settings; writes bench/results/<UTC date>T<hhmm>-sharing.json and .md
 *   BENCH_SHARING_PER_SESSION_POOLS=1   workload 1 with an undici Pool per session (the old client), to
 *                                       show the connect timeouts; shared mode only
 *   BENCH_SHARING_ONLY=concurrent,idle,peers   only those workloads
 *   BENCH_SHARING_MODES=shared,pool,session    workload 1 in only those modes
 *   BENCH_SHARING_HEAP_DIR=DIR   heap snapshots of taskgate before and after the idle sessions, into DIR
 *                                (compare them with node bench/lib/heap-diff.js A B)
 *
 * Every process is on 127.0.0.1 and stopped at the end, on failure too; every loop is bounded.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { pathToFileURL } from 'node:url';
import { Pool, WebSocket } from '../node_modules/undici/index.js';
import { LegacyHttpClient } from './lib/http-client.js';
import {
  AcceptQueueSampler,
  TreeSampler,
  cpuSeconds,
  descendants,
  freePort,
  listenCounters,
  rssOf,
  waitForPort,
} from './lib/procs.js';
import { sharingMarkdown } from './lib/report.js';
import { median, pipelined, quantile, round, sleep } from './lib/stats.js';
import { commit } from './lib/commit.js';
import { runFacts } from './lib/machine.js';
import {
  BENCH_FIXTURE,
  MCP_PROXY,
  NODE,
  SUPERGATEWAY,
  fromRoot,
  startMcpProxy,
  startOnPort,
  startSupergateway,
} from './lib/targets.js';

const PROFILE = process.env['BENCH_CPU_PROF'];
/** BENCH_SHARING_HEAP_DIR=DIR: heap snapshots of taskgate before and after the idle sessions, into DIR. */
const HEAP_DIR = process.env['BENCH_SHARING_HEAP_DIR'];

export const SHARING_SETTINGS = {
  quick: {
    concurrent: { sessions: 200, calls: 10, sleepMs: 2, connections: 128, sessionModeMax: 20, deadlineS: 60 },
    idle: { sessions: 200, samples: 5, sampleEveryMs: 300, settleMs: 1500 },
    peers: { sessions: 20, rounds: 2, phaseCalls: 400, phaseSeconds: 3, statelessInFlight: 10 },
    budgetS: 100,
  },
  full: {
    concurrent: {
      sessions: 1000,
      calls: 10,
      sleepMs: 2,
      connections: 128,
      sessionModeMax: 100,
      deadlineS: 120,
    },
    idle: { sessions: 1000, samples: 7, sampleEveryMs: 500, settleMs: 3000 },
    peers: { sessions: 100, rounds: 4, phaseCalls: 3000, phaseSeconds: 4, statelessInFlight: 10 },
    budgetS: 240,
  },
};
/** @typedef {typeof SHARING_SETTINGS.full} Settings */

/** An Error's short name for counting failures by kind. @param {unknown} error */
const kindOf = (error) => {
  const e = /** @type {any} */ (error);
  const text = `${e?.code ?? e?.name ?? 'Error'}: ${String(e?.message ?? e)}`;
  // Ids and ports vary from one failure to the next; HTTP statuses (3 digits) are kept.
  return text.replace(/\d{4,}/g, 'N').slice(0, 120);
};

/** @param {Record<string, number>} into @param {unknown} error */
const count = (into, error) => {
  const kind = kindOf(error);
  into[kind] = (into[kind] ?? 0) + 1;
};

/**
 * taskgate HTTP→stdio in front of bench/fixture.js in `sharing` mode.
 * @param {'session' | 'shared' | 'pool'} sharing @param {number} maxSessions @param {string[]} [extra] its flags
 * @param {string[]} [nodeFlags]
 */
function startGate(sharing, maxSessions, extra = [], nodeFlags = []) {
  return startOnPort(`taskgate ${sharing}`, (port) => [
    NODE,
    ...(PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE}`] : []),
    ...nodeFlags,
    fromRoot('dist/cli.js'),
    '--config',
    fromRoot('bench/taskgate.yaml'),
    '--log-level',
    'warn',
    '--listen',
    `127.0.0.1:${port}`,
    '--upstream-sharing',
    sharing,
    ...(sharing === 'pool' ? ['--upstream-pool-size', '4'] : []),
    '--max-sessions',
    String(maxSessions),
    ...extra,
    '--',
    NODE,
    BENCH_FIXTURE,
  ]);
}

/** @param {any} result @param {string} want */
function checkText(result, want) {
  const text = result?.content?.[0]?.text;
  if (text !== want) throw new Error(`expected ${JSON.stringify(want)}, got ${JSON.stringify(result)}`);
}

/** One task-augmented echo, then tasks/result; rejects unless the result is exactly `text`. */
async function taskCall(/** @type {LegacyHttpClient} */ client, /** @type {string} */ text, sleepMs = 0) {
  const args = sleepMs > 0 ? { text, sleep_ms: sleepMs } : { text };
  const created = await client.request('tools/call', { name: 'echo', arguments: args, task: {} });
  const taskId = created?.task?.taskId;
  if (typeof taskId !== 'string') throw new Error(`tools/call answered ${JSON.stringify(created)}`);
  checkText(await client.request('tasks/result', { taskId }), text);
}

/** Settles `tasks` with at most `limit` running at once. @template T @param {(() => Promise<T>)[]} tasks @param {number} limit */
async function bounded(tasks, limit) {
  /** @type {PromiseSettledResult<T>[]} */
  const settled = [];
  await pipelined(tasks.length, limit, async (i) => {
    try {
      settled[i] = { status: 'fulfilled', value: await /** @type {() => Promise<T>} */ (tasks[i])() };
    } catch (reason) {
      settled[i] = { status: 'rejected', reason };
    }
  });
  return settled;
}

/**
 * Workload 1 in one mode: open `sessions` sessions at once, then every session's `calls` task calls at
 * once, then end them all (DELETE). Counts what was opened, refused, right, wrong and failed.
 * @param {'session' | 'shared' | 'pool'} sharing @param {Settings['concurrent']} s @param {boolean} perSessionPools
 * @param {{ peak?: Peak }} rss filled with the RSS peaks once the gate is stopped, on failure too
 * @param {(line: string) => void} log
 */
async function concurrent(sharing, s, perSessionPools, rss, log) {
  const maxSessions = sharing === 'session' ? s.sessionModeMax : s.sessions + 10;
  const gate = await startGate(sharing, maxSessions);
  const sampler = new TreeSampler(gate.proc.pid, 100);
  const queue = new AcceptQueueSampler(gate.port, 100);
  const net = listenCounters();
  const cpu = cpuSeconds(gate.proc.pid);
  // One Pool for every session (connections bounded, keep-alive), or one per session as before.
  const shared = perSessionPools
    ? undefined
    : new Pool(new URL(gate.url).origin, { connections: s.connections, pipelining: 1 });
  const clients = Array.from({ length: s.sessions }, () =>
    shared
      ? new LegacyHttpClient(gate.url, { pool: shared })
      : new LegacyHttpClient(gate.url, { connections: s.calls }),
  );
  /** @type {Record<string, number>} */
  const initErrors = {};
  /** @type {Record<string, number>} */
  const callErrors = {};
  let refused = 0;
  let right = 0;
  let wrong = 0;
  try {
    const started = performance.now();
    const opened = await Promise.allSettled(clients.map((client) => client.initialize()));
    const initialized = performance.now();
    /** @type {LegacyHttpClient[]} */
    const open = [];
    for (const [i, outcome] of opened.entries()) {
      if (outcome.status === 'fulfilled') open.push(/** @type {LegacyHttpClient} */ (clients[i]));
      else if (/** @type {any} */ (outcome.reason)?.status === 503) refused++;
      else count(initErrors, outcome.reason);
    }
    log(
      `sharing: ${sharing}: ${open.length} sessions open, ${refused} refused, in ${((initialized - started) / 1000).toFixed(1)} s`,
    );
    const calls = open.flatMap((client, i) =>
      Array.from({ length: s.calls }, (_, j) =>
        taskCall(client, `s${i}c${j}`, s.sleepMs).then(
          () => right++,
          (error) => {
            if (/^expected /.test(String(error?.message))) wrong++;
            else count(callErrors, error);
          },
        ),
      ),
    );
    // A call never answered would hang: past the deadline it is counted lost (and the gate stopped).
    /** @type {NodeJS.Timeout | undefined} */
    let timer;
    await Promise.race([
      Promise.all(calls),
      new Promise((resolve) => (timer = setTimeout(resolve, s.deadlineS * 1000))),
    ]);
    clearTimeout(timer);
    const called = performance.now();
    // The servers' CPU so far (they are alive until the sessions end): where the rest of the time went.
    const serversCpu = descendants(gate.proc.pid).reduce((sum, pid) => sum + cpuOrZero(pid), 0);
    const expected = open.length * s.calls;
    const failed = Object.values(callErrors).reduce((a, b) => a + b, 0);
    return {
      sharing,
      maxSessions,
      sessions: s.sessions,
      opened: open.length,
      refused503: refused,
      initErrors,
      initSeconds: round((initialized - started) / 1000),
      calls: { expected, right, wrong, failed, lost: expected - right - wrong - failed, errors: callErrors },
      callSeconds: round((called - initialized) / 1000),
      callsPerSecond: round(right / ((called - initialized) / 1000)),
      wallSeconds: round((called - started) / 1000),
      gateCpuSeconds: round(cpuSeconds(gate.proc.pid) - cpu),
      serversCpuSeconds: round(serversCpu),
      clientConnections: perSessionPools ? `a Pool per session, ${s.calls} connections each` : s.connections,
      listenQueue: { ...diff(listenCounters(), net), ...acceptQueue(queue.stop()) },
      // What taskgate logged (warn and above), when something failed: the why of a 502 or a lost call.
      ...(failed + wrong + Object.keys(initErrors).length > 0
        ? { gateStderr: gate.proc.stderr.slice(-3000) }
        : {}),
    };
  } finally {
    await bounded(
      clients.map((client) => () => client.close()),
      64,
    );
    await shared?.close();
    queue.stop();
    rss.peak = sampler.stop();
    await gate.proc.stop();
  }
}
/** @typedef {ReturnType<TreeSampler['stop']>} Peak */

/** CPU seconds of a process, 0 if it is gone. @param {number} pid */
const cpuOrZero = (pid) => {
  try {
    return cpuSeconds(pid);
  } catch {
    return 0;
  }
};

/** @param {{ peak: number, backlog: number }} q */
const acceptQueue = (q) => ({ acceptQueuePeak: q.peak, backlog: q.backlog });

/** @param {Record<string, number>} after @param {Record<string, number>} before */
const diff = (after, before) =>
  Object.fromEntries(Object.entries(after).map(([k, v]) => [k, v - (before[k] ?? 0)]));

/** Runs workload 1 in one mode and adds the RSS peaks; a failure is recorded. */
async function concurrentWithPeaks(
  /** @type {'session' | 'shared' | 'pool'} */ sharing,
  /** @type {Settings['concurrent']} */ s,
  /** @type {boolean} */ perSessionPools,
  /** @type {(line: string) => void} */ log,
) {
  /** @type {{ peak?: Peak }} */
  const holder = {};
  try {
    const result = await concurrent(sharing, s, perSessionPools, holder, log);
    const rss = peaksMiB(holder.peak);
    log(
      `sharing: ${sharing}: ${result.calls.right}/${result.calls.expected} right, ${result.callsPerSecond} calls/s, peak RSS ${rss.sumMiB} MiB`,
    );
    return { ...result, rss };
  } catch (error) {
    log(`sharing: ${sharing} failed: ${/** @type {Error} */ (error).message}`);
    return { sharing, error: /** @type {Error} */ (error).message, rss: peaksMiB(holder.peak) };
  }
}

/** @param {Peak} [p] */
const peaksMiB = (p = { root: NaN, children: NaN, sum: NaN, processes: NaN, samples: 0 }) => ({
  gateMiB: round(p.root / 2 ** 20),
  childrenMiB: round(p.children / 2 ** 20),
  sumMiB: round(p.sum / 2 ** 20),
  maxChildren: p.processes,
  samples: p.samples,
});

/** Reads taskgate's /metrics: the figures named, as numbers. @param {number} port */
export async function metrics(port) {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  /** @type {Record<string, number>} */
  const values = {};
  for (const line of text.split('\n')) {
    const match =
      /^(nodejs_heap_size_used_bytes|nodejs_heap_size_total_bytes|nodejs_external_memory_bytes|process_resident_memory_bytes|taskgate_sessions_open)(?:\{[^}]*\})? (\S+)/.exec(
        line,
      );
    if (match) values[/** @type {string} */ (match[1])] = Number(match[2]);
  }
  return values;
}

/**
 * A Chrome DevTools Protocol connection to a process started with --inspect=127.0.0.1:PORT, to force full
 * GCs from outside (HeapProfiler.collectGarbage): /metrics alone reads a heap full of young garbage.
 * @param {number} port
 */
export async function inspector(port) {
  const targets = /** @type {{ webSocketDebuggerUrl: string }[]} */ (
    await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()
  );
  const ws = new WebSocket(/** @type {{ webSocketDebuggerUrl: string }} */ (targets[0]).webSocketDebuggerUrl);
  await new Promise((resolve, reject) => {
    ws.onopen = resolve;
    ws.onerror = reject;
  });
  /** @type {Map<number, (message: any) => void>} */
  const waiting = new Map();
  /** Chunks of the heap snapshot being taken (HeapProfiler.addHeapSnapshotChunk events). */
  let chunks = /** @type {string[]} */ ([]);
  ws.onmessage = (event) => {
    const message = JSON.parse(String(event.data));
    if (message.method === 'HeapProfiler.addHeapSnapshotChunk') chunks.push(message.params.chunk);
    waiting.get(message.id)?.(message);
    waiting.delete(message.id);
  };
  let nextId = 1;
  const inspector = {
    /** @param {string} method */
    call: (method) =>
      new Promise((resolve, reject) => {
        const id = nextId++;
        const timer = setTimeout(() => reject(new Error(`${method}: no answer in 30 s`)), 30_000);
        waiting.set(id, (message) => {
          clearTimeout(timer);
          resolve(message);
        });
        ws.send(JSON.stringify({ id, method }));
      }),
    /** Writes a heap snapshot (it forces a full GC first) to `path`. @param {string} path */
    snapshot: async (path) => {
      chunks = [];
      await inspector.call('HeapProfiler.takeHeapSnapshot');
      writeFileSync(path, chunks.join(''));
      chunks = [];
    },
    close: () => ws.close(),
  };
  return inspector;
}

/**
 * `samples` readings of taskgate's memory, `everyMs` apart: heap used, heap + external (from /metrics),
 * RSS (/proc), sessions open; with `gc`, each after two full GCs forced over the inspector.
 * @param {number} adminPort @param {number} pid @param {number} samples @param {number} everyMs
 * @param {{ call(method: string): Promise<unknown> }} [gc]
 */
async function memorySamples(adminPort, pid, samples, everyMs, gc) {
  const taken = [];
  for (let i = 0; i < samples; i++) {
    if (i > 0) await sleep(everyMs);
    if (gc) for (let k = 0; k < 2; k++) await gc.call('HeapProfiler.collectGarbage');
    const m = await metrics(adminPort);
    const heap = m['nodejs_heap_size_used_bytes'] ?? NaN;
    taken.push({
      heapUsed: heap,
      heapPlusExternal: heap + (m['nodejs_external_memory_bytes'] ?? NaN),
      rss: rssOf(pid),
      sessions: m['taskgate_sessions_open'] ?? NaN,
    });
  }
  return taken;
}

/**
 * Workload 2: taskgate `shared`, one session open and warm (the shared server started); memory sampled;
 * N sessions opened (initialize + notifications/initialized only); memory sampled again.
 * @param {Settings['idle']} s @param {(line: string) => void} log
 */
async function idle(s, log) {
  const adminPort = await freePort();
  const inspectPort = await freePort();
  const gate = await startGate(
    'shared',
    s.sessions + 10,
    ['--admin-listen', String(adminPort)],
    [`--inspect=127.0.0.1:${inspectPort}`],
  );
  /** @type {LegacyHttpClient[]} */
  const idleClients = [];
  const warm = new LegacyHttpClient(gate.url, { connections: 1 });
  /** @type {Awaited<ReturnType<typeof inspector>> | undefined} */
  let gc;
  try {
    await waitForPort(adminPort, 10_000, () => gate.proc.exited);
    gc = await inspector(inspectPort);
    await warm.initialize();
    for (let i = 0; i < 20; i++) await taskCall(warm, `warm${i}`);
    await sleep(s.settleMs);
    const before = await memorySamples(adminPort, gate.proc.pid, s.samples, s.sampleEveryMs);
    const beforeGc = await memorySamples(adminPort, gate.proc.pid, s.samples, s.sampleEveryMs, gc);
    if (HEAP_DIR) await gc.snapshot(`${HEAP_DIR}/idle-before.heapsnapshot`);
    // The idle sessions' connections are closed once they are open, as before the first samples: what is
    // measured is the sessions, not sockets.
    const pool = new Pool(new URL(gate.url).origin, { connections: 32, pipelining: 1 });
    for (let i = 0; i < s.sessions; i++) idleClients.push(new LegacyHttpClient(gate.url, { pool }));
    const opened = await bounded(
      idleClients.map((client) => () => client.initialize()),
      32,
    );
    await pool.close();
    const failed = opened.filter((o) => o.status === 'rejected').length;
    await sleep(s.settleMs);
    const after = await memorySamples(adminPort, gate.proc.pid, s.samples, s.sampleEveryMs);
    const afterGc = await memorySamples(adminPort, gate.proc.pid, s.samples, s.sampleEveryMs, gc);
    if (HEAP_DIR) await gc.snapshot(`${HEAP_DIR}/idle-after.heapsnapshot`);
    const n = s.sessions - failed;
    log(`sharing: ${n} idle sessions open`);
    /**
     * Per session: after minus before, of the medians and of the smallest samples, ÷ sessions.
     * @param {Awaited<ReturnType<typeof memorySamples>>} a @param {Awaited<ReturnType<typeof memorySamples>>} b
     * @param {'heapUsed' | 'heapPlusExternal' | 'rss'} key
     */
    const per = (a, b, key) => {
      const av = a.map((x) => x[key]);
      const bv = b.map((x) => x[key]);
      return {
        medianBytes: round((median(av) - median(bv)) / n),
        minBytes: round((Math.min(...av) - Math.min(...bv)) / n),
      };
    };
    return {
      sessions: n,
      failed,
      sessionsOpenBefore: before[0]?.sessions,
      sessionsOpenAfter: after[0]?.sessions,
      perSession: {
        afterGc: {
          heapUsed: per(afterGc, beforeGc, 'heapUsed'),
          heapPlusExternal: per(afterGc, beforeGc, 'heapPlusExternal'),
          rss: per(afterGc, beforeGc, 'rss'),
        },
        noGc: {
          heapUsed: per(after, before, 'heapUsed'),
          heapPlusExternal: per(after, before, 'heapPlusExternal'),
          rss: per(after, before, 'rss'),
        },
      },
      samples: { before, beforeGc, after, afterGc },
    };
  } finally {
    // The idle sessions' pool is closed: they are ended over a fresh one.
    const pool = new Pool(new URL(gate.url).origin, { connections: 32, pipelining: 1 });
    await bounded(
      idleClients.map((client) => () => {
        client.pool = pool;
        return client.close();
      }),
      32,
    );
    await pool.close();
    await warm.close();
    gc?.close();
    await gate.proc.stop();
  }
}

/**
 * @typedef {object} Peer
 * @property {string} name
 * @property {boolean} stateless no Mcp-Session-Id: a child per POST (supergateway without --stateful)
 * @property {() => Promise<{ proc: import('./lib/procs.js').Proc, url: string }>} start
 */

/** @type {Peer[]} */
const PEERS = [
  { name: 'taskgate shared', stateless: false, start: () => startGate('shared', 200) },
  { name: 'taskgate pool (4)', stateless: false, start: () => startGate('pool', 200) },
  {
    name: 'supergateway stateful',
    stateless: false,
    start: () => startSupergateway([NODE, BENCH_FIXTURE], ['--stateful']),
  },
  {
    name: 'supergateway stateless',
    stateless: true,
    start: () => startSupergateway([NODE, BENCH_FIXTURE], []),
  },
  { name: 'mcp-proxy', stateless: false, start: () => startMcpProxy([NODE, BENCH_FIXTURE]) },
];

/**
 * One target's phase: every session makes plain echo calls one after another (so `inFlight` sessions at
 * once) until `calls` are started or `seconds` have passed. Resolves with the latencies and the seconds.
 * @param {LegacyHttpClient[]} sessions @param {number} inFlight @param {number} calls @param {number} seconds
 * @param {Record<string, number>} errors
 */
async function phase(sessions, inFlight, calls, seconds, errors) {
  /** @type {number[]} */
  const ms = [];
  let started = 0;
  const start = performance.now();
  const deadline = start + seconds * 1000;
  const worker = async (/** @type {LegacyHttpClient} */ client, /** @type {number} */ k) => {
    while (started < calls && performance.now() < deadline) {
      const text = `p${k}.${started++}`;
      const t = performance.now();
      try {
        checkText(await client.request('tools/call', { name: 'echo', arguments: { text } }), text);
        ms.push(performance.now() - t);
      } catch (error) {
        count(errors, error);
      }
    }
  };
  await Promise.all(sessions.slice(0, inFlight).map(worker));
  return { ms, seconds: (performance.now() - start) / 1000 };
}

/**
 * Workload 3: every peer up with `sessions` sessions open, then alternating rounds (order rotated each
 * round) of one phase per target; calls/s, p50/p99, proxy CPU per call, RSS of proxy + servers.
 * @param {Settings['peers']} s @param {number} budgetS seconds the rounds may take @param {(line: string) => void} log
 */
async function peers(s, budgetS, log) {
  /** @type {{ peer: Peer, proc: import('./lib/procs.js').Proc, pool: Pool, sessions: LegacyHttpClient[], sampler: TreeSampler }[]} */
  const up = [];
  /** @type {Record<string, string>} */
  const skipped = {};
  // The budget counts from here: starting the peers (100 stateful children) is part of what it bounds.
  const started = performance.now();
  try {
    for (const peer of PEERS) {
      if (!peer.name.startsWith('taskgate') && !installed(peer)) {
        skipped[peer.name] = 'not installed (npm ci --prefix bench)';
        continue;
      }
      try {
        const { proc, url } = await peer.start();
        const pool = new Pool(new URL(url).origin, { connections: s.sessions, pipelining: 1 });
        // Stateless: only the sessions that call (a child per POST, initialize included).
        const sessions = Array.from(
          { length: inFlightOf(peer, s) },
          () => new LegacyHttpClient(url, { pool, stateless: peer.stateless }),
        );
        up.push({ peer, proc, pool, sessions, sampler: new TreeSampler(proc.pid, 200) });
        // Stateless: initialize spawns a child each; a few at a time.
        await bounded(
          sessions.map((client) => () => client.initialize()),
          peer.stateless ? s.statelessInFlight : 25,
        ).then((settled) => {
          const failed = settled.find((o) => o.status === 'rejected');
          if (failed) throw /** @type {PromiseRejectedResult} */ (failed).reason;
        });
        // Warm-up: one whole phase, untimed (a shorter one left every target's first round slow).
        await phase(sessions, inFlightOf(peer, s), s.phaseCalls, s.phaseSeconds, {});
        log(`sharing: ${peer.name} up, ${sessions.length} sessions`);
      } catch (error) {
        skipped[peer.name] = `failed: ${/** @type {Error} */ (error).message.slice(0, 300)}`;
        log(`sharing: ${peer.name}: ${skipped[peer.name]}`);
      }
    }
    /** @type {Record<string, { ms: number[], perSecond: number[], cpu: number, calls: number, errors: Record<string, number> }>} */
    const samples = Object.fromEntries(
      up.map(({ peer }) => [peer.name, { ms: [], perSecond: [], cpu: 0, calls: 0, errors: {} }]),
    );
    const roundsStarted = performance.now();
    let rounds = 0;
    for (let r = 0; r < s.rounds; r++) {
      const elapsed = (performance.now() - started) / 1000;
      const perRound = (performance.now() - roundsStarted) / 1000 / Math.max(1, r);
      if (r >= 2 && elapsed + perRound > budgetS) {
        log(
          `sharing: peers: stopping after ${r} rounds: another would pass the ${budgetS.toFixed(0)} s left`,
        );
        break;
      }
      rounds++;
      for (let k = 0; k < up.length; k++) {
        const { peer, proc, sessions } = /** @type {(typeof up)[number]} */ (up[(k + r) % up.length]);
        const x = /** @type {(typeof samples)[string]} */ (samples[peer.name]);
        const cpu = cpuSeconds(proc.pid);
        const { ms, seconds } = await phase(
          sessions,
          inFlightOf(peer, s),
          s.phaseCalls,
          s.phaseSeconds,
          x.errors,
        );
        x.cpu += cpuSeconds(proc.pid) - cpu;
        x.calls += ms.length;
        x.ms.push(...ms);
        x.perSecond.push(ms.length / seconds);
      }
      log(`sharing: peers: round ${r + 1}/${s.rounds} done`);
    }
    /** @type {Record<string, any>} */
    const results = {};
    for (const { peer, sampler } of up) {
      const x = /** @type {(typeof samples)[string]} */ (samples[peer.name]);
      results[peer.name] = {
        inFlight: inFlightOf(peer, s),
        calls: x.calls,
        callsPerSecond: round(median(x.perSecond)),
        perRound: x.perSecond.map(round),
        p50Ms: round(median(x.ms)),
        p99Ms: round(quantile(x.ms, 0.99)),
        proxyCpuUsPerCall: round((x.cpu / x.calls) * 1e6),
        errors: x.errors,
        rss: peaksMiB(sampler.stop()),
      };
    }
    return { settings: { ...s, rounds }, results, skipped };
  } finally {
    for (const { pool, sessions, proc, sampler } of up) {
      sampler.stop();
      await bounded(
        sessions.map((client) => () => client.close()),
        25,
      );
      await pool.close();
      await proc.stop();
    }
  }
}

/** supergateway stateless spawns a child per POST: its calls in flight are bounded (they are CPU-bound anyway). */
const inFlightOf = (/** @type {Peer} */ peer, /** @type {Settings['peers']} */ s) =>
  peer.stateless ? s.statelessInFlight : s.sessions;

/** @param {Peer} peer */
const installed = (peer) => existsSync(peer.name.startsWith('mcp-proxy') ? MCP_PROXY : SUPERGATEWAY);

/**
 * The three workloads, each bounded; a failed one is recorded, not fatal. Peers get what is left of the
 * budget after the others (at least 60 s, their start included, and 2 rounds).
 * @param {Settings} s @param {(line: string) => void} [log]
 */
export async function sharing(s, log = () => undefined) {
  const started = performance.now();
  const perSessionPools = process.env['BENCH_SHARING_PER_SESSION_POOLS'] === '1';
  const only = process.env['BENCH_SHARING_ONLY']?.split(',');
  const runs = (/** @type {string} */ name) => (only ? only.includes(name) : true);
  /** @type {Record<string, any>} */
  const concurrentResults = {};
  /** @type {('shared' | 'pool' | 'session')[]} */
  const modes = perSessionPools ? ['shared'] : ['shared', 'pool', 'session'];
  const onlyModes = process.env['BENCH_SHARING_MODES']?.split(',');
  if (runs('concurrent'))
    for (const mode of modes.filter((m) => !onlyModes || onlyModes.includes(m)))
      concurrentResults[mode] = await concurrentWithPeaks(mode, s.concurrent, perSessionPools, log);
  if (perSessionPools) return { settings: s, concurrent: concurrentResults };
  const failed = (/** @type {Error} */ error) => ({ error: error.message });
  const idleResult = runs('idle') ? await idle(s.idle, log).catch(failed) : undefined;
  const left = s.budgetS - (performance.now() - started) / 1000;
  const peerResult = runs('peers')
    ? // What is left, less ~15 s to stop them (100 stateful children); never under 60 s.
      await peers(s.peers, Math.max(60, left - 15), log).catch(failed)
    : undefined;
  return {
    settings: s,
    seconds: round((performance.now() - started) / 1000),
    concurrent: concurrentResults,
    idle: idleResult,
    peers: peerResult,
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const full = process.env['BENCH_QUICK'] === '0';
  const loadBefore = os.loadavg();
  const started = performance.now();
  const date = new Date().toISOString();
  const result = await sharing(full ? SHARING_SETTINGS.full : SHARING_SETTINGS.quick, (line) =>
    process.stderr.write(`[sharing ${new Date().toISOString().slice(11, 19)}] ${line}\n`),
  );
  const report = {
    ...runFacts(loadBefore, started, !full),
    date,
    commit: commit(),
    sharing: result,
  };
  const text = JSON.stringify(report, null, 2);
  process.stdout.write(text + '\n');
  if (process.env['BENCH_SHARING_WRITE'] === '1') {
    // Date and UTC time, as run.js stamps its runs.
    const stamp = date.slice(0, 16).replace(':', '');
    mkdirSync(fromRoot('bench/results'), { recursive: true });
    writeFileSync(fromRoot(`bench/results/${stamp}-sharing.json`), text + '\n');
    writeFileSync(fromRoot(`bench/results/${stamp}-sharing.md`), sharingMarkdown(report));
    process.stderr.write(`wrote bench/results/${stamp}-sharing.json and .md\n`);
  }
}

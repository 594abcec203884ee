// @ts-check
/**
 * Nothing outlives its reason (issue 27): the figures its "Done when" asks for, against the built dist.
 *
 * 1. Desktop close: a desktop client (the SDK's StdioClientTransport, v1 and v2 alternated run by run)
 *    spawns `taskgate -- npx --no-install mcp-server-everything stdio`, lists tools, and makes one call of
 *    `simulate-research-query`, which leaves a timer in the server (its task store's ttl): v1 task-augmented
 *    (the task still runs when the client quits), v2 (2.4.0 has no tasks) plainly, which taskgate unwraps
 *    into a task-augmented call upstream and follows to its end. Then the client's close (stdin closed,
 *    SIGTERM 2 s later, SIGKILL after that). Per run: the time from the close to taskgate's exit (its pid
 *    polled in /proc every 2 ms), and the processes of the run still running at that exit and 3 s later.
 * 2. HTTP gateway: `taskgate --listen … -- npx --no-install mcp-server-everything stdio`; N sessions (5 at
 *    once), each with one task-augmented `simulate-research-query` call, then ended by DELETE. The server
 *    processes seen (read just before each DELETE) still running 5 s after the last DELETE; then a few
 *    more sessions left open, and SIGTERM to taskgate: the time to its exit and every process of the run
 *    still running 3 s later.
 * 3. Fuzz: `npx vitest run --project soak test/integration/fuzz.test.ts` once, its own figure (answers to
 *    response-shaped lines) read from its output.
 *
 * A process belongs to a run when its environment carries MCP_TASKGATE_BENCH_RUN with the run's value
 * (taskgate passes its environment to the server, and npx to what it starts), so a server that left its
 * parent is found too. Whatever is left is named in the report, then killed.
 *
 *   npm run bench:lifecycle       writes bench/results/<UTC date>T<hhmm>-lifecycle.json and .md
 *   BENCH_QUICK=1 node bench/lifecycle.js   2 closes per client, 5 sessions, no fuzz; writes nothing
 *
 * Linux only (/proc). Every wait is bounded, and every process the run started is stopped, on failure too.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { Client as ClientV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioClientTransportV2 } from '@modelcontextprotocol/client/stdio';
import { commit } from './lib/commit.js';
import { runFacts } from './lib/machine.js';
import { pipelined, quantile, round, sleep } from './lib/stats.js';
import { Proc, freePort, waitForPort } from './lib/procs.js';
import { NODE, TASKGATE, fromRoot } from './lib/targets.js';

const QUICK = process.env['BENCH_QUICK'] === '1';
const SETTINGS = QUICK
  ? { closes: 2, sessions: 5, openAtSigterm: 2, inFlight: 5, fuzz: false }
  : { closes: 20, sessions: 50, openAtSigterm: 10, inFlight: 5, fuzz: true };
const NPX_EVERYTHING = ['npx', '--no-install', 'mcp-server-everything', 'stdio'];
const RESEARCH = { name: 'simulate-research-query', arguments: { topic: 'lifecycle' } };
const MARKER = 'MCP_TASKGATE_BENCH_RUN';
/** A desktop exit slower than taskgate's own stop sequence (0.5 s + 1 s) has its log kept in the report. */
const SLOW_MS = 1_500;
/** The client capabilities of a client that takes task-augmented calls (2025-11-25). */
const TASK_AWARE = { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } };

const started = performance.now();
const log = (/** @type {string} */ line) =>
  process.stderr.write(
    `[lifecycle ${((performance.now() - started) / 1000).toFixed(0).padStart(3)} s] ${line}\n`,
  );

/** @typedef {import('@modelcontextprotocol/sdk/shared/transport.js').Transport} Transport */
/** @typedef {{ pid: number, ppid: number, state: string, command: string }} Marked */

/** The running processes (zombies excluded) whose environment carries `run`. @param {string} run */
function processesOf(run) {
  /** @type {Marked[]} */
  const found = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'latin1');
      const [state = '', ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ', 2);
      if (state === 'Z' || state === 'X') continue;
      const environ = readFileSync(`/proc/${entry}/environ`, 'latin1');
      if (!environ.split('\0').includes(`${MARKER}=${run}`)) continue;
      // On one line: the watchdog's command is a shell script.
      const command = readFileSync(`/proc/${entry}/cmdline`, 'latin1')
        .replace(/[\0\s]+/g, ' ')
        .trim();
      found.push({ pid: Number(entry), ppid: Number(ppid), state, command });
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return found;
}

/** Whether `pid` runs (a zombie does not). @param {number} pid */
function runs(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

/** Those of `pids` still running after `withinMs` (none as soon as none runs). @param {number[]} pids @param {number} withinMs */
async function stillRunning(pids, withinMs) {
  const deadline = performance.now() + withinMs;
  let left = pids.filter(runs);
  while (left.length > 0 && performance.now() < deadline) {
    await sleep(20);
    left = left.filter(runs);
  }
  return left;
}

/** Kills what a run left, so that it does not outlive the bench. @param {Marked[]} procs */
function killAll(procs) {
  for (const proc of procs) {
    try {
      process.kill(proc.pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
}

/** Polls `pid` every 2 ms until it no longer runs; resolves with performance.now() then (bounded). @param {number} pid @param {number} withinMs */
async function exitOf(pid, withinMs) {
  const deadline = performance.now() + withinMs;
  while (runs(pid)) {
    if (performance.now() > deadline) return NaN;
    await sleep(2);
  }
  return performance.now();
}

/** The environment of a run: this process's, marked. @param {string} run */
const markedEnv = (run) => ({ .../** @type {Record<string, string>} */ (process.env), [MARKER]: run });

/**
 * One desktop close with the SDK `sdk` client: the time from its close to taskgate's exit, and the
 * processes of the run at that exit and 3 s later.
 * @param {'v1' | 'v2'} sdk
 */
async function desktopClose(sdk) {
  const run = randomUUID();
  const params = {
    command: NODE,
    args: [TASKGATE, '--log-level', 'info', '--', ...NPX_EVERYTHING],
    env: markedEnv(run),
    stderr: /** @type {'pipe'} */ ('pipe'),
  };
  // taskgate's log (the last 64 KiB), to say where the time went in a slow exit.
  let stderr = '';
  const keep = (/** @type {Buffer} */ chunk) => (stderr = (stderr + chunk.toString()).slice(-65_536));
  /** @type {{ pid: number, close: () => Promise<void> }} */
  let client;
  if (sdk === 'v1') {
    const transport = new StdioClientTransport(params);
    transport.stderr?.on('data', keep);
    const c = new Client({ name: 'desktop-v1', version: '1' }, { capabilities: TASK_AWARE });
    await c.connect(transport);
    await c.listTools();
    await c.request(
      { method: 'tools/call', params: { ...RESEARCH, task: { ttl: 60_000 } } },
      CreateTaskResultSchema,
    );
    client = { pid: /** @type {number} */ (transport.pid), close: () => c.close() };
  } else {
    const transport = new StdioClientTransportV2(params);
    transport.stderr?.on('data', keep);
    const c = new ClientV2({ name: 'desktop-v2', version: '1' }, { capabilities: {} });
    await c.connect(transport);
    await c.listTools();
    const result = await c.callTool(RESEARCH);
    if (result.isError) throw new Error(`the unwrapped call failed: ${JSON.stringify(result)}`);
    client = { pid: /** @type {number} */ (transport.pid), close: () => c.close() };
  }
  const before = processesOf(run).filter((p) => p.pid !== client.pid);
  try {
    const closing = performance.now();
    const closingAt = Date.now();
    const exit = exitOf(client.pid, 10_000);
    await client.close();
    const exited = await exit;
    const atExit = processesOf(run);
    await stillRunning(
      before.map((p) => p.pid),
      3_000,
    );
    return {
      exitMs: exited - closing,
      logAfterClose: logSince(stderr, closingAt),
      processesBefore: before.length,
      atExit: atExit.map((p) => p.command.slice(0, 60)),
      left: processesOf(run),
    };
  } finally {
    killAll(processesOf(run));
  }
}

/** taskgate's log lines from `since` (ms since the epoch) on, as "+ms message". @param {string} log @param {number} since */
function logSince(log, since) {
  return log.split('\n').flatMap((line) => {
    try {
      const record = /** @type {{ time: number, msg: string }} */ (JSON.parse(line));
      return record.time >= since ? [`+${record.time - since} ms ${record.msg.slice(0, 160)}`] : [];
    } catch {
      return [];
    }
  });
}

/** @param {number[]} values */
const spread = (values) => ({
  median: round(quantile(values, 0.5)),
  max: round(Math.max(...values)),
  min: round(Math.min(...values)),
});

async function desktop() {
  /** @typedef {{ exitMs: number[], before: number[], atExit: string[], left: Marked[], failures: string[], slow: { run: number, exitMs: number, log: string[] }[] }} Tally */
  /** @type {Record<'v1' | 'v2', Tally>} */
  const by = {
    v1: { exitMs: [], before: [], atExit: [], left: [], failures: [], slow: [] },
    v2: { exitMs: [], before: [], atExit: [], left: [], failures: [], slow: [] },
  };
  for (let i = 0; i < SETTINGS.closes; i++) {
    for (const sdk of /** @type {('v1' | 'v2')[]} */ (i % 2 === 0 ? ['v1', 'v2'] : ['v2', 'v1'])) {
      try {
        const r = await desktopClose(sdk);
        by[sdk].exitMs.push(r.exitMs);
        by[sdk].before.push(r.processesBefore);
        by[sdk].atExit.push(...r.atExit);
        by[sdk].left.push(...r.left);
        // Past taskgate's own stop (input closed, SIGTERM 0.5 s later, SIGKILL 1 s after): its log says why.
        if (r.exitMs > SLOW_MS)
          by[sdk].slow.push({ run: i + 1, exitMs: round(r.exitMs), log: r.logAfterClose });
        log(
          `desktop ${sdk} #${i + 1}: exit ${r.exitMs.toFixed(0)} ms, ${r.atExit.length} at exit, ${r.left.length} left`,
        );
      } catch (error) {
        by[sdk].failures.push(/** @type {Error} */ (error).message.slice(0, 300));
        log(`desktop ${sdk} #${i + 1} failed: ${/** @type {Error} */ (error).message}`);
      }
    }
  }
  return Object.fromEntries(
    Object.entries(by).map(([sdk, r]) => [
      sdk,
      {
        runs: r.exitMs.length,
        failures: r.failures,
        exitMs: spread(r.exitMs),
        overDesktopSigterm: r.exitMs.filter((ms) => ms >= 2000).length,
        slow: r.slow,
        processesBeforeClose: spread(r.before),
        processesAtExit: r.atExit.length,
        // What still ran at taskgate's exit, by command (cut to 60 characters) and how often.
        atExit: r.atExit.reduce(
          (/** @type {Record<string, number>} */ by, command) => ({
            ...by,
            [command]: (by[command] ?? 0) + 1,
          }),
          {},
        ),
        processesLeft: r.left.length,
        left: r.left.map((p) => p.command),
      },
    ]),
  );
}

/**
 * The HTTP gateway: `sessions` sessions with npx servers, each with one task-augmented call and then
 * ended by DELETE; then SIGTERM.
 */
async function gateway() {
  const run = randomUUID();
  const port = await freePort();
  let exitsLogged = 0;
  /** @type {number[]} */
  const upstreams = [];
  const gate = new Proc(
    'taskgate --listen',
    [NODE, TASKGATE, '--log-level', 'info', '--listen', `127.0.0.1:${port}`, '--', ...NPX_EVERYTHING],
    {
      env: markedEnv(run),
      onLine: (line) => {
        if (/upstream server (exited|was killed)/.test(line)) exitsLogged++;
        const started = /"pid":(\d+),"command"/.exec(line);
        if (started) upstreams.push(Number(started[1]));
      },
    },
  );
  /** The run's processes that are neither taskgate nor its watchdog (a child of taskgate, not an upstream). */
  const servers = () =>
    processesOf(run).filter(
      (p) => p.pid !== gate.pid && !(p.ppid === gate.pid && !upstreams.includes(p.pid)),
    );
  /** @type {Map<number, string>} */
  const seen = new Map();
  /** @type {string[]} */
  const failures = [];
  try {
    await waitForPort(port, 30_000, () => gate.exited);
    const url = new URL(`http://127.0.0.1:${port}/mcp`);
    /**
     * One session with one task-augmented call; ended by DELETE if `end`. The client's close does not
     * end a session. @param {string} name @param {boolean} end
     */
    const session = async (name, end) => {
      const transport = new StreamableHTTPClientTransport(url);
      const client = new Client({ name, version: '1' }, { capabilities: TASK_AWARE });
      try {
        // The SDK's own types disagree under exactOptionalPropertyTypes (sessionId?: string vs string | undefined).
        await client.connect(/** @type {Transport} */ (/** @type {unknown} */ (transport)));
        await client.request(
          { method: 'tools/call', params: { ...RESEARCH, task: { ttl: 60_000 } } },
          CreateTaskResultSchema,
        );
        for (const p of servers()) seen.set(p.pid, p.command);
        if (end) await transport.terminateSession();
        return true;
      } catch (error) {
        failures.push(`${name}: ${/** @type {Error} */ (error).message.slice(0, 300)}`);
        return false;
      } finally {
        await client.close();
      }
    };
    let ended = 0;
    await pipelined(SETTINGS.sessions, SETTINGS.inFlight, async (i) => {
      if (await session(`session-${i}`, true)) ended++;
    });
    log(`gateway: ${ended} sessions ended by DELETE, ${seen.size} server processes seen`);
    const leftAfterDelete = await stillRunning([...seen.keys()], 5_000);
    const exitsAfterDelete = exitsLogged;
    const seenAtDelete = seen.size;
    let open = 0;
    await pipelined(SETTINGS.openAtSigterm, SETTINGS.inFlight, async (i) => {
      if (await session(`open-${i}`, false)) open++;
    });
    const before = processesOf(run).filter((p) => p.pid !== gate.pid);
    const stopping = performance.now();
    const exit = exitOf(gate.pid, 60_000);
    const exitCode = new Promise((resolve) =>
      gate.child.once('exit', (code, signal) => resolve(signal ?? code)),
    );
    gate.child.kill('SIGTERM');
    const exited = await exit;
    const leftAfterSigterm = await stillRunning(
      before.map((p) => p.pid),
      3_000,
    );
    const left = processesOf(run);
    return {
      sessions: SETTINGS.sessions,
      ended,
      failures,
      serverProcessesSeen: seenAtDelete,
      serverProcessesLeftAfterDelete: leftAfterDelete.length,
      leftAfterDelete: leftAfterDelete.map((pid) => seen.get(pid)),
      upstreamExitsLogged: exitsAfterDelete,
      openAtSigterm: open,
      processesAtSigterm: before.length,
      sigtermExitMs: round(exited - stopping),
      exitCode: await exitCode,
      processesLeftAfterSigterm: Math.max(leftAfterSigterm.length, left.length),
      leftAfterSigterm: left.map((p) => p.command),
    };
  } finally {
    await gate.stop();
    killAll(processesOf(run));
  }
}

/** The fuzz of the stdio front, run once: its own figure, read from its output (bounded: 5 min). */
async function fuzz() {
  const child = spawn('npx', ['vitest', 'run', '--project', 'soak', 'test/integration/fuzz.test.ts'], {
    cwd: fromRoot('.'),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk) => (output += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk) => (output += chunk));
  const timer = setTimeout(() => child.kill('SIGTERM'), 300_000);
  const [code, signal] = await new Promise((resolve) => child.once('exit', (c, s) => resolve([c, s])));
  clearTimeout(timer);
  const figure = /fuzz: (\d+) cases in (\d+) ms; (\d+) answers to (\d+) response-shaped lines/.exec(output);
  return {
    command: 'npx vitest run --project soak test/integration/fuzz.test.ts',
    exit: signal ?? code,
    cases: Number(figure?.[1] ?? NaN),
    ms: Number(figure?.[2] ?? NaN),
    answersToResponseShaped: Number(figure?.[3] ?? NaN),
    responseShapedLines: Number(figure?.[4] ?? NaN),
    ...(figure ? {} : { output: output.slice(-3000) }),
  };
}

const loadBefore = os.loadavg();
const uptimeBefore = uptime();
log(
  `${SETTINGS.closes} desktop closes per client, ${SETTINGS.sessions} gateway sessions; load ${uptimeBefore}`,
);
const closes = await desktop();
const http = await gateway();
log(
  `gateway: ${http.serverProcessesLeftAfterDelete} left after DELETE, ${http.processesLeftAfterSigterm} after SIGTERM`,
);
const fuzzed = SETTINGS.fuzz ? await fuzz() : undefined;
const report = {
  ...runFacts(loadBefore, started, QUICK),
  commit: commit(),
  uptimeBefore,
  uptimeAfter: uptime(),
  settings: SETTINGS,
  desktop: closes,
  gateway: http,
  ...(fuzzed ? { fuzz: fuzzed } : {}),
};

/** `uptime`'s line, as the bench's notes give it beside each figure. */
function uptime() {
  const [one, five, fifteen] = os.loadavg().map((l) => l.toFixed(2));
  return `load average: ${one}, ${five}, ${fifteen} (${os.cpus().length} cores)`;
}

const d = report.desktop;
/** The slow exits, each with taskgate's log from the close on; or a line saying there were none. @param {Record<string, any>} by */
function slowLines(by) {
  const head = `Exits slower than ${SLOW_MS} ms (taskgate's own stop: input closed, SIGTERM 0.5 s later, SIGKILL 1 s after)`;
  const slow = Object.entries(by).flatMap(([sdk, r]) =>
    r.slow.map(
      (/** @type {{ run: number, exitMs: number, log: string[] }} */ s) =>
        `- ${sdk} run ${s.run}, ${s.exitMs} ms: ${s.log.map((line) => `\`${line}\``).join('; ')}`,
    ),
  );
  return slow.length === 0
    ? [`${head}: none.`]
    : [`${head}, with taskgate's log from the close on:`, '', ...slow];
}
/** @param {string} sdk @param {any} r */
const closeRow = (sdk, r) =>
  `| SDK ${sdk} | ${r.runs}${r.failures.length > 0 ? ` (${r.failures.length} failed)` : ''} | ${r.exitMs.median} ms | ${r.exitMs.max} ms | ${r.overDesktopSigterm} | ${r.processesBeforeClose.median} | ${r.processesAtExit} | **${r.processesLeft}** |`;
const md = [
  `# Lifecycle: nothing outlives its reason, ${report.date}`,
  '',
  `Commit ${report.commit}; Node ${report.node}, ${report.platform}; \`uptime\` ${report.uptimeBefore} before, ${report.uptimeAfter} after (7 engineers share this machine); ${report.durationSeconds} s. Command: \`npm run bench:lifecycle\` ([\`bench/lifecycle.js\`](../lifecycle.js)), against the built dist.`,
  '',
  '## A desktop client quits',
  '',
  `\`taskgate -- npx --no-install mcp-server-everything stdio\` spawned by the SDK's StdioClientTransport (v1 \`@modelcontextprotocol/sdk\`, v2 \`@modelcontextprotocol/client\`, alternated run by run), after \`tools/list\` and one call of \`simulate-research-query\` (a timer left in the server): v1 task-augmented, the task still running at the close; v2 plain, unwrapped by taskgate into a task-augmented call upstream. Then the client's close: stdin closed, SIGTERM 2 s later, SIGKILL after that. Time from the close to taskgate's exit (its pid polled every 2 ms); the run's processes (taskgate's environment marked) before the close, still running at taskgate's exit (its watchdog may be leaving too), and 3 s later (left).`,
  '',
  '| client | runs | exit, median | exit, max | exits at 2 s or later | processes before | at exit (all runs) | left (all runs) |',
  '| --- | --- | --- | --- | --- | --- | --- | --- |',
  closeRow('v1', d['v1']),
  closeRow('v2', d['v2']),
  ...Object.entries(d).flatMap(([sdk, r]) => [
    ...Object.entries(r.atExit).map(
      ([command, times]) => `- running at taskgate's exit with ${sdk}, ${times} × \`${command}\``,
    ),
    ...r.left.map((/** @type {string} */ command) => `- left by ${sdk}: \`${command}\``),
    ...r.failures.map((/** @type {string} */ failure) => `- ${sdk} failed: ${failure}`),
  ]),
  '',
  ...slowLines(d),
  '',
  '## HTTP gateway sessions that end',
  '',
  `\`taskgate --listen 127.0.0.1:PORT -- npx --no-install mcp-server-everything stdio\`; ${http.sessions} sessions (SDK v1 client, ${SETTINGS.inFlight} at once), each with one task-augmented \`simulate-research-query\` call, then ended by \`DELETE\`. The server processes (npx, the shell and node under it) read just before each DELETE; those still running 5 s after the last. Then ${http.openAtSigterm} more sessions the same way, left open, and SIGTERM to taskgate: the time to its exit, and every process of the run (${http.processesAtSigterm} then, its watchdog included) still running 3 s later.`,
  '',
  '| sessions ended | server processes seen | left after DELETE | upstream exits logged | sessions open at SIGTERM | SIGTERM to exit | exit code | left after SIGTERM |',
  '| --- | --- | --- | --- | --- | --- | --- | --- |',
  `| ${http.ended} of ${http.sessions} | ${http.serverProcessesSeen} | **${http.serverProcessesLeftAfterDelete}** | ${http.upstreamExitsLogged} | ${http.openAtSigterm} | ${http.sigtermExitMs} ms | ${http.exitCode} | **${http.processesLeftAfterSigterm}** |`,
  ...http.leftAfterDelete.map((command) => `- left after DELETE: \`${command}\``),
  ...http.leftAfterSigterm.map((command) => `- left after SIGTERM: \`${command}\``),
  ...http.failures.map((failure) => `- ${failure}`),
  '',
  ...(fuzzed
    ? [
        '## Fuzz of the stdio front',
        '',
        `\`${fuzzed.command}\` (exit ${fuzzed.exit}): ${fuzzed.cases} cases in ${round(fuzzed.ms / 1000)} s, **${fuzzed.answersToResponseShaped}** answers to ${fuzzed.responseShapedLines} response-shaped lines.`,
        ...(fuzzed.output ? ['', '```', fuzzed.output, '```'] : []),
        '',
      ]
    : []),
].join('\n');
process.stdout.write(md);
if (!QUICK) {
  const stamp = report.date.slice(0, 16).replace(':', '');
  mkdirSync(fromRoot('bench/results'), { recursive: true });
  writeFileSync(fromRoot(`bench/results/${stamp}-lifecycle.json`), JSON.stringify(report, null, 2) + '\n');
  writeFileSync(fromRoot(`bench/results/${stamp}-lifecycle.md`), md);
  log(`wrote bench/results/${stamp}-lifecycle.json and .md`);
}

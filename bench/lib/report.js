// @ts-check
/**
 * Issue 9's targets, each held against the measured figure (met / missed / not measured), and the
 * markdown summary of a run.
 */
import { aggregateLines } from '../aggregate.js';

/**
 * @typedef {{ id: string, issue: number, target: string, measured: string, value: number, bar: string,
 *   met: boolean | null, how: string }} Verdict
 */

export const fmt = (/** @type {number} */ value, digits = 2) =>
  Number.isFinite(value) ? value.toFixed(digits) : 'n/a';

/**
 * @param {any} report the run's JSON report (results, tasks)
 * @returns {Verdict[]}
 */
export function evaluate(report) {
  const r = report.results;
  const t = report.tasks ?? {};
  const stdio = r['taskgate stdio→stdio'];
  const relay = r['raw relay stdio→stdio'];
  const front = r['taskgate HTTP→stdio'];
  const sidecar = r['taskgate sidecar HTTP→HTTP'];
  const sdkHttp = r['direct HTTP'];
  const supergateway = r['supergateway'];
  /** @type {Verdict[]} */
  const verdicts = [];
  /** The issue whose targets the checks below are. */
  let issue = 9;
  /**
   * @param {string} id @param {string} target @param {number | undefined} value @param {'<=' | '>=' | '<'} op
   * @param {number} bar @param {(v: number) => string} show @param {string} how
   */
  const check = (id, target, value, op, bar, show, how) => {
    const v = value ?? NaN;
    const met = !Number.isFinite(v) ? null : op === '<=' ? v <= bar : op === '>=' ? v >= bar : v < bar;
    verdicts.push({
      id,
      issue,
      target,
      measured: Number.isFinite(v) ? show(v) : 'not measured',
      value: v,
      bar: `${op} ${show(bar)}`,
      met,
      how,
    });
  };
  const times = (/** @type {number} */ v) => `${fmt(v)}×`;

  check(
    'stdio-latency',
    'stdio→stdio median latency ≤ 1.6× direct stdio',
    stdio?.latencyRatio,
    '<=',
    1.6,
    times,
    'p50 of sequential echo calls, taskgate ÷ direct stdio, median of per-round ratios',
  );
  check(
    'stdio-vs-relay',
    'stdio→stdio median latency within ~15 % of a raw byte relay',
    stdio && relay ? stdio.latencyRatio / relay.latencyRatio : NaN,
    '<=',
    1.15,
    times,
    'taskgate latency ratio ÷ raw relay latency ratio (bench/relay.js: one extra stdio hop, no parsing)',
  );
  check(
    'stdio-throughput',
    'stdio→stdio throughput ≥ 0.65× direct',
    stdio?.throughputRatio,
    '>=',
    0.65,
    times,
    `echo calls/s with ${report.settings.inFlight} in flight, taskgate ÷ direct stdio`,
  );
  check(
    'stdio-blob',
    'stdio→stdio 256 KiB results ≥ 0.9× direct',
    stdio?.blobRatio,
    '>=',
    0.9,
    times,
    'bytes/s of sequential 256 KiB results, taskgate ÷ direct stdio',
  );
  check(
    'http-throughput-sdk',
    "HTTP→stdio throughput ≥ 1.5× the SDK's own HTTP server",
    front && sdkHttp ? front.throughputRatio : NaN,
    '>=',
    1.5,
    times,
    "calls/s, taskgate HTTP→stdio ÷ direct HTTP (the fixture on the SDK's StreamableHTTPServerTransport)",
  );
  check(
    'http-throughput-supergateway',
    'HTTP→stdio throughput ≥ 2× supergateway',
    front && supergateway ? front.throughputRatio / supergateway.throughputRatio : NaN,
    '>=',
    2,
    times,
    'calls/s ratio to direct HTTP of taskgate ÷ that of supergateway (same rounds)',
  );
  check(
    'http-latency-sdk',
    "HTTP→stdio median latency below the SDK's HTTP server",
    front && sdkHttp ? front.latencyRatio : NaN,
    '<',
    1,
    times,
    'p50, taskgate HTTP→stdio ÷ direct HTTP',
  );
  check(
    'http-latency-supergateway',
    'HTTP→stdio median latency below supergateway',
    front && supergateway ? front.latencyRatio / supergateway.latencyRatio : NaN,
    '<',
    1,
    times,
    'p50 ratio to direct HTTP of taskgate ÷ that of supergateway',
  );
  check(
    'http-cpu',
    "HTTP→stdio server-side CPU per call ≤ half of supergateway's",
    front && supergateway
      ? front.serverCpuUsPerCall.inFlight / supergateway.serverCpuUsPerCall.inFlight
      : NaN,
    '<=',
    0.5,
    times,
    'utime+stime of the proxy process (/proc/PID/stat) over the in-flight rounds ÷ calls, taskgate ÷ supergateway',
  );
  check(
    'sidecar-latency',
    'sidecar HTTP→HTTP ≤ 1.5× direct HTTP median latency',
    sidecar?.latencyRatio,
    '<=',
    1.5,
    times,
    'p50, taskgate sidecar ÷ direct HTTP',
  );
  check(
    'sidecar-throughput',
    'sidecar HTTP→HTTP ≥ 0.7× direct HTTP throughput',
    sidecar?.throughputRatio,
    '>=',
    0.7,
    times,
    'calls/s, taskgate sidecar ÷ direct HTTP',
  );
  check(
    'task-create-result',
    'task create → result for a zero-work tool ≤ 2× a plain call',
    stdio?.task?.ratioToPlainCall,
    '<=',
    2,
    times,
    'stdio→stdio: task-augmented echo then tasks/result, p50 ÷ p50 of the plain echo made right after each on the same taskgate, per round',
  );
  check(
    'tasks-get',
    'tasks/get ≥ 20 000/s on one core',
    t.storm?.perCpuSecond,
    '>=',
    20_000,
    (v) => `${fmt(v, 0)}/s`,
    'tasks/get answered ÷ CPU seconds (utime+stime) of the taskgate process, 64 outstanding over stdio',
  );
  check(
    'task-memory',
    '≤ 2 KiB per held terminal task with a 1 KiB result, beyond the result',
    t.held?.terminal?.overheadBytesPerTask,
    '<=',
    2048,
    (v) => `${fmt(v, 0)} B`,
    'growth of heapUsed+external after two full GCs in the taskgate process holding 10 000 completed tasks, ÷ 10 000, minus the result JSON',
  );
  check(
    'waiters',
    '10 000 tasks/result waiters released within 100 ms of their tasks completing',
    t.inProcess?.waiters?.delayAfterOwnCompletionMs?.max,
    '<=',
    100,
    (v) => `${fmt(v, 1)} ms`,
    "in-process, MemoryTaskStore from dist/: the largest delay from a task's completion to its waiter's release",
  );
  check(
    'waiters-burst',
    '… and all 10 000 released within 100 ms of a burst of completions (stricter reading)',
    t.inProcess?.waiters?.allReleasedMs,
    '<=',
    100,
    (v) => `${fmt(v, 0)} ms`,
    'in-process: 10 000 completions back to back, from the first completion to the last release',
  );
  check(
    'waiters-end-to-end',
    '… and end to end: taskgate adds ≤ 100 ms to releasing 10 000 waiting tasks/result',
    t.waiters?.valid === false ? NaN : t.waiters?.addedMs,
    '<=',
    100,
    (v) => `${fmt(v, 0)} ms`,
    '10 000 sleep calls ending at one deadline: last tasks/result through taskgate after the deadline, minus the last plain answer of the fixture alone',
  );

  issue = 19;
  check(
    'i19-blob',
    '256 KiB results through stdio ≥ 0.9× direct',
    stdio?.blobRatio,
    '>=',
    0.9,
    times,
    'as issue 9’s: bytes/s of sequential 256 KiB results, taskgate ÷ direct stdio',
  );
  check(
    'i19-task',
    'zero-work task create → result ≤ 2× a plain call',
    stdio?.task?.ratioToPlainCall,
    '<=',
    2,
    times,
    'as issue 9’s: stdio→stdio, task-augmented echo then tasks/result ÷ the plain echo right after it',
  );
  check(
    'i19-waiters',
    '10 000 waiters end to end within +100 ms of the fixture alone',
    t.waiters?.valid === false ? NaN : t.waiters?.addedMs,
    '<=',
    100,
    (v) => `+${fmt(v, 0)} ms`,
    'as issue 9’s end-to-end reading',
  );
  check(
    'i19-relay',
    'stdio→stdio p50 within 1.1× of the no-parse relay in the same run',
    stdio && relay ? stdio.latencyRatio / relay.latencyRatio : NaN,
    '<=',
    1.1,
    times,
    'taskgate latency ratio ÷ raw relay latency ratio, both to direct stdio in the same rounds',
  );
  const modernKinds = report.modern?.kinds;
  check(
    'i19-modern',
    'the modern path costs no more than the legacy one through taskgate, per call',
    modernKinds
      ? modernKinds['modern plain']?.inFlight?.gateCpuUsPerOp /
          modernKinds['legacy plain']?.inFlight?.gateCpuUsPerOp
      : NaN,
    '<=',
    1,
    times,
    'taskgate CPU per plain echo with many in flight (bench/modern.js), a 2026-07-28 client ÷ a 2025 one, same bare HTTP client',
  );

  issue = 18;
  const concurrent = report.sharing?.concurrent;
  for (const mode of ['shared', 'pool']) {
    const run = concurrent?.[mode];
    const exact = run && run.calls.right === run.calls.expected && run.calls.lost === 0;
    check(
      `i18-${mode}-rss`,
      `${run?.sessions ?? 1000} sessions × 10 task calls, \`${mode}\`: every result exact, taskgate + servers RSS ≤ 1 GB`,
      exact ? (run.rss.sumMiB * 2 ** 20) / 1e9 : NaN,
      '<=',
      1,
      (v) => `${fmt(v)} GB`,
      `peak RSS sum of taskgate and its servers (bench/sharing.js); ${run ? `${run.calls.right} of ${run.calls.expected} results right, ${run.calls.lost} lost` : 'not run'}`,
    );
  }
  check(
    'i18-idle',
    'an idle session costs ≤ 50 KB in `shared` mode',
    report.sharing?.idle?.perSession?.afterGc?.heapPlusExternal?.medianBytes,
    '<=',
    50_000,
    (v) => `${fmt(v / 1000, 1)} KB`,
    'heap + external per idle session after forced full GCs, 1 000 sessions (bench/sharing.js)',
  );
  return verdicts;
}

/** @param {any} report the full report, with `targets` */
export function markdown(report) {
  const lines = [];
  const s = report.settings;
  lines.push(`# taskgate benchmark, ${report.date}`);
  lines.push('');
  lines.push(
    `${report.quick ? '**Quick run (not a result).** ' : ''}Commit ${report.commit}; Node ${report.node}, ${report.platform}; load average ${report.loadAverageBefore.join(' ')} before, ${report.loadAverageAfter.join(' ')} after; ${report.durationSeconds} s. ` +
      'Command: `npm run bench` (harness in [`bench/`](..)).',
  );
  lines.push('');
  for (const issue of [9, 19, 18]) {
    lines.push(`## Targets of issue ${issue}`);
    lines.push('');
    lines.push('| target | measured | bar | | how |');
    lines.push('| --- | --- | --- | --- | --- |');
    for (const v of report.targets.filter((/** @type {Verdict} */ v) => (v.issue ?? 9) === issue)) {
      const mark = v.met === null ? 'not measured' : v.met ? '**met**' : '**missed**';
      lines.push(`| ${v.target} | ${v.measured} | ${v.bar} | ${mark} | ${v.how} |`);
    }
    lines.push('');
  }
  lines.push(
    'Where a target is missed, [`bench/PROFILING.md`](../PROFILING.md) says what profiling found (file, function, share of CPU) and how to reproduce it.',
  );
  lines.push('');
  lines.push('## Calls through each target');
  lines.push('');
  lines.push(
    `${s.rounds} rounds, targets in rotating order. Per round: ${s.latencyCalls} sequential echo calls to each target, in blocks of 25 interleaved across the targets (A×25 B×25 … A×25 …, each block after one untimed call); then, target by target, ${s.throughputCalls} echo calls with ${s.inFlight} in flight and ${s.blobCalls} results of ${s.blobBytes / 1024} KiB; ` +
      `then on each taskgate ${s.taskCalls} task-augmented calls, each followed by a plain call on the same taskgate (in blocks of 10, interleaved likewise). Ratios (×) are to the direct call over the same transport (stdio targets to direct stdio, HTTP targets to direct HTTP): the median of the per-round ratios, with the smallest and largest in brackets. ` +
      'Server CPU: utime+stime of the proxy process (of the fixture itself for a direct target) per call.',
  );
  lines.push('');
  lines.push(
    '| target | p50 ms | p99 ms | p50 × | calls/s | × | 256 KiB MB/s | × | server CPU µs/call (sequential / in flight) |',
  );
  lines.push('| --- | --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const [name, x] of Object.entries(report.results)) {
    const r = /** @type {any} */ (x);
    const span = (/** @type {number} */ value, /** @type {[number, number] | null | undefined} */ minMax) =>
      minMax && r.kind !== 'direct' ? `${fmt(value)} (${fmt(minMax[0])}–${fmt(minMax[1])})` : fmt(value);
    const rr = r.perRoundRange ?? {};
    lines.push(
      `| ${name} | ${fmt(r.latencyP50Ms, 3)} | ${fmt(r.latencyP99Ms, 3)} | ${span(r.latencyRatio, rr.latencyRatio)} | ${fmt(r.callsPerSecond, 0)} | ${span(r.throughputRatio, rr.throughputRatio)} | ${fmt(r.blobMBps, 1)} | ${span(r.blobRatio, rr.blobRatio)} | ${fmt(r.serverCpuUsPerCall.sequential, 0)} / ${fmt(r.serverCpuUsPerCall.inFlight, 0)} |`,
    );
  }
  for (const [name, why] of Object.entries(report.skipped ?? {}))
    lines.push(`| ${name} | not run: ${why} | | | | | | | |`);
  lines.push('');
  const withTasks = Object.entries(report.results).filter(([, r]) => /** @type {any} */ (r).task);
  if (withTasks.length > 0) {
    lines.push('Task-augmented echo (create, then tasks/result at once) on each taskgate target:');
    lines.push('');
    lines.push('| target | create → result p50 ms | p99 ms | plain call p50 ms | × a plain call |');
    lines.push('| --- | --- | --- | --- | --- |');
    for (const [name, x] of withTasks) {
      const task = /** @type {any} */ (x).task;
      lines.push(
        `| ${name} | ${fmt(task.createToResultP50Ms, 3)} | ${fmt(task.createToResultP99Ms, 3)} | ${fmt(task.plainCallP50Ms, 3)} | ${fmt(task.ratioToPlainCall)} |`,
      );
    }
    lines.push('');
  }
  const t = report.tasks ?? {};
  if (Object.keys(t).length > 0) {
    lines.push('## Tasks');
    lines.push('');
    lines.push(...taskLines(t));
  }
  if (report.modern) lines.push(...modernLines(report.modern));
  if (report.sdkV2) lines.push(...sdkV2Lines(report.sdkV2));
  if (report.sharing) lines.push(...sharingLines(report.sharing));
  if (report.aggregate) lines.push(...aggregateLines(report.aggregate));
  lines.push('## How to read this');
  lines.push('');
  lines.push(
    '- Every process is on 127.0.0.1; the fixture is `test/fixtures/legacy-server.js` (SDK low-level `Server`), over stdio or `--http 0` (SDK `StreamableHTTPServerTransport`, one server per session). ' +
      'Clients: the SDK `Client` for the calls; a bare JSON-lines client (`bench/lib/raw-client.js`) for the task workloads, so that the client is not what limits them.',
  );
  lines.push(
    '- taskgate runs `--config bench/taskgate.yaml --log-level warn`: the defaults, with room for the 20 000 tasks the held-tasks workload keeps (`tasks.maxTasks`) and per-caller rates no bench client reaches (the HTTP front counts every 2026-07-28 request from 127.0.0.1 against one caller). ' +
      'supergateway 4.0.0 runs `--outputTransport streamableHttp --stateful --logLevel none` (stateful: one child per session; `bench/loopback.js` makes it bind 127.0.0.1, as it has no option for that); mcp-proxy 6.7.19 runs with its defaults on `--host 127.0.0.1`.',
  );
  lines.push(
    '- Memory per task is measured inside the process after two forced full GCs (`--expose-gc`), as the growth of `heapUsed + external`: exact, and independent of when Node gives memory back to the OS (it keeps peak RSS for 60–90 s). The RSS growth is shown as an upper bound only.',
  );
  lines.push(
    '- The machine is shared: the load average above says how busy it was. Ratios within one run are what to compare; absolute times drift with the load. ' +
      "The issue's reference figures (same kind of machine, quiet, 16 in flight): direct stdio p50 ≈ 0.30 ms and ≈ 12 400 calls/s; the SDK's HTTP server ≈ 1.6 ms, ≈ 740 calls/s; supergateway ≈ 2.6 ms, ≈ 600 calls/s, 0.33× direct on 256 KiB; mcp-proxy ≈ 3.5 ms, ≈ 650 calls/s.",
  );
  lines.push('');
  return lines.join('\n');
}

/** @param {any} t */
function taskLines(t) {
  const lines = [];
  if (t.storm?.error) lines.push(`- tasks/get storm: failed: ${t.storm.error}`);
  else if (t.storm)
    lines.push(
      `- **tasks/get storm** (taskgate stdio→stdio, one finished task, ${t.storm.inFlight} outstanding, ${t.storm.requestsPerRound} per round, median of ${t.storm.rounds}): ` +
        `${fmt(t.storm.perWallSecond, 0)}/s of wall time (with the client on the other core), ${fmt(t.storm.perCpuSecond, 0)} per CPU second of the taskgate process.`,
    );
  if (t.held?.error) lines.push(`- held tasks: failed: ${t.held.error}`);
  else if (t.held) {
    const h = t.held;
    lines.push(
      `- **${h.count} completed tasks held** in taskgate (1 KiB result text, ${h.resultJsonBytes} B of result JSON each): ${fmt(h.terminal.heapBytesPerTask, 0)} B per task of heap+external, ` +
        `${fmt(h.terminal.overheadBytesPerTask, 0)} B beyond the result; RSS grew ${fmt(h.terminal.rssBytesPerTaskUpperBound, 0)} B per task (upper bound).`,
    );
    lines.push(
      `- **${h.count} working tasks held** on top (a \`sleep\` call each, pending upstream): ${fmt(h.working.heapBytesPerTask, 0)} B per task of heap+external; RSS ${fmt(h.working.rssBytesPerTaskUpperBound, 0)} B per task (upper bound).`,
    );
    lines.push(
      `- **Event-loop delay** in that taskgate (\`monitorEventLoopDelay\`, 1 ms resolution, via \`bench/probe.js\`) during ${h.holding.calls} sequential small calls: ` +
        `holding ${h.heldTasks} tasks p50 ${fmt(h.holding.eld.p50)} ms, p99 ${fmt(h.holding.eld.p99)} ms, max ${fmt(h.holding.eld.max)} ms (calls p50 ${fmt(h.holding.callP50Ms, 3)} ms, p99 ${fmt(h.holding.callP99Ms, 3)} ms); ` +
        `before, holding none: p50 ${fmt(h.idle.eld.p50)} ms, p99 ${fmt(h.idle.eld.p99)} ms, max ${fmt(h.idle.eld.max)} ms (calls p50 ${fmt(h.idle.callP50Ms, 3)} ms, p99 ${fmt(h.idle.callP99Ms, 3)} ms).`,
    );
  }
  if (t.inProcess?.error) lines.push(`- store in-process: failed: ${t.inProcess.error}`);
  else if (t.inProcess) {
    const p = t.inProcess;
    lines.push(
      `- **The store alone** (in-process, \`MemoryTaskStore\` from \`dist/\`, ${p.count} tasks): a completed task with a 1 KiB result ${fmt(p.completed1KiB.heapBytesPerTask, 0)} B (${fmt(p.completed1KiB.overheadBytesPerTask, 0)} B beyond its ${fmt(p.completed1KiB.resultBytesPerTask, 0)} B result), a working task ${fmt(p.working.heapBytesPerTask, 0)} B.`,
    );
    lines.push(
      `- **${p.waiters.waiters} waiters** (\`waitForTerminal\`, in-process): completions back to back took ${fmt(p.waiters.completionLoopMs, 0)} ms; all released ${fmt(p.waiters.allReleasedMs, 0)} ms after the first completion; ` +
        `each waiter's release after its own task's completion p50 ${fmt(p.waiters.delayAfterOwnCompletionMs.p50, 3)} ms, p99 ${fmt(p.waiters.delayAfterOwnCompletionMs.p99, 3)} ms, max ${fmt(p.waiters.delayAfterOwnCompletionMs.max, 1)} ms.`,
    );
  }
  if (t.waiters?.error) lines.push(`- waiters end to end: failed: ${t.waiters.error}`);
  else if (t.waiters) {
    const w = t.waiters;
    lines.push(
      `- **${w.count} waiters end to end** (stdio): ${w.count} \`sleep\` calls all ending at one deadline. Through taskgate as tasks, each with a tasks/result waiting: the last result came ${fmt(w.taskgate.lastAfterDeadlineMs, 0)} ms after the deadline (median ${fmt(w.taskgate.p50AfterDeadlineMs, 0)} ms). ` +
        `The fixture alone, as plain calls: ${fmt(w.direct.lastAfterDeadlineMs, 0)} ms (median ${fmt(w.direct.p50AfterDeadlineMs, 0)} ms). taskgate adds ${fmt(w.addedMs, 0)} ms.${w.valid ? '' : ' **Not valid**: not every request was in place before the deadline.'}`,
    );
  }
  lines.push('');
  return lines;
}

/** The 2026-07-28 workloads (bench/modern.js). @param {any} m */
function modernLines(m) {
  const lines = ['## 2026-07-28 clients (issues 17 and 19)', ''];
  if (m.error) return [...lines, `Failed: ${m.error}`, ''];
  const s = m.settings;
  const k = m.kinds;
  const r = m.ratios;
  const x = (/** @type {{ ratio: number, range: number[] }} */ v) =>
    `${fmt(v.ratio)} (${fmt(v.range[0] ?? NaN)}–${fmt(v.range[1] ?? NaN)})`;
  lines.push(
    `taskgate HTTP→stdio in front of \`bench/fixture.js\` (a 2025 stdio server without tasks: every task is taskgate's augment), \`bench/taskgate.yaml\` (promoteAfter 0). ` +
      `${s.rounds} rounds; per round ${s.calls} sequential operations of each kind, in blocks of ${s.block} interleaved across the kinds (each block after one untimed operation), the order rotated each round; ` +
      `then, kind by kind, ${s.throughputCalls} plain calls with ${s.inFlight} in flight and ${s.taskThroughputCalls} task round trips with ${s.taskInFlight} in flight. ` +
      'Clients: bare HTTP on undici (`bench/lib/http-client.js`), the same code for both eras; the SDK 1.x `Client` only where named. ' +
      'Ratios: median of the per-round ratios of p50s, smallest and largest in brackets. taskgate CPU: utime+stime of the taskgate process (bridge, Session and HTTP front; not the fixture) per operation.',
  );
  lines.push('');
  lines.push(
    '| operation | p50 ms | p95 ms | p99 ms | HTTP requests each | taskgate CPU µs each (sequential) | in flight: per s | taskgate CPU µs each | requests each |',
  );
  lines.push('| --- | --- | --- | --- | --- | --- | --- | --- | --- |');
  const what = /** @type {Record<string, string>} */ ({
    'modern plain': '2026-07-28 echo, plain (no tasks extension)',
    'legacy plain': '2025 echo, plain',
    'v2 task': 'v2 task: tools/call → CreateTaskResult → tasks/get until completed (result inline)',
    'v1 task': 'v1 task: tools/call with `task` → tasks/result',
    'v1 task, polled': 'v1 task polled: tools/call with `task` → tasks/get until completed → tasks/result',
    'MRTR elicit': 'MRTR: tools/call `elicit` → input_required → retry with inputResponses',
    '2025 elicit (SDK)': '2025 elicitation: SDK Client, `elicit`, handler answers at once',
    '2025 plain (SDK)': '2025 echo, SDK Client',
  });
  for (const [name, v] of Object.entries(k)) {
    const f = /** @type {any} */ (v);
    lines.push(
      `| ${what[name] ?? name} | ${fmt(f.p50Ms, 3)} | ${fmt(f.p95Ms, 3)} | ${fmt(f.p99Ms, 3)} | ${fmt(f.requestsPerOp)} | ${fmt(f.gateCpuUsPerOp, 0)} | ${f.inFlight ? fmt(f.inFlight.perSecond, 0) : ''} | ${f.inFlight ? fmt(f.inFlight.gateCpuUsPerOp, 0) : ''} | ${f.inFlight ? fmt(f.inFlight.requestsPerOp) : ''} |`,
    );
  }
  lines.push('');
  lines.push('| figure | p50 ratio | in flight (per s) |');
  lines.push('| --- | --- | --- |');
  lines.push(
    `| 1. v2 task round trip ÷ v1 (create → tasks/result) | ${x(r.v2OverV1)} | ${fmt(r.v2OverV1PerSecond)} |`,
  );
  lines.push(
    `| 1. v2 task round trip ÷ v1 polled (create → tasks/get… → tasks/result) | ${x(r.v2OverV1Polled)} | |`,
  );
  lines.push(`| 1. v2 task round trip ÷ a modern plain call | ${x(r.v2OverModernPlain)} | |`);
  lines.push(`| 1. v1 task round trip ÷ a legacy plain call | ${x(r.v1OverLegacyPlain)} | |`);
  lines.push(`| 1. v1 polled ÷ a legacy plain call | ${x(r.v1PolledOverLegacyPlain)} | |`);
  lines.push(`| 3. MRTR round (2 requests) ÷ 2025 elicitation (SDK) | ${x(r.mrtrOverSdkElicit)} | |`);
  lines.push(`| 3. MRTR round ÷ a modern plain call | ${x(r.mrtrOverModernPlain)} | |`);
  lines.push(
    `| 3. 2025 elicitation (SDK) ÷ a plain call by the same SDK client | ${x(r.sdkElicitOverSdkPlain)} | |`,
  );
  lines.push(
    `| 3. (client cost) SDK plain call ÷ bare 2025 plain call | ${x(r.sdkPlainOverLegacyPlain)} | |`,
  );
  lines.push(
    `| 4. modern plain call ÷ legacy plain call | ${x(r.modernPlainOverLegacyPlain)} | ${fmt(r.modernOverLegacyPerSecond)} |`,
  );
  lines.push('');
  const p = s.promote;
  lines.push(
    `**2. promoteAfter** (echo with \`sleep_ms\`; a client with the tasks extension; ${p.inFlight} calls at once; taskgate with promoteAfter 0 and another with \`bench/taskgate-promote100.yaml\`, promoteAfter 100; ` +
      `the client waits before each tasks/get as the task's \`pollIntervalMs\` says (taskgate's default tasks.pollInterval, 1000 ms), or ${p.fixedPollMs} ms; ${s.promoteRounds} rounds):`,
  );
  lines.push('');
  lines.push(
    '| taskgate | tool takes | client polls | calls | end to end p50 ms | max ms | requests p50 | max | answered plainly |',
  );
  lines.push('| --- | --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const [cell, v] of Object.entries(m.promote)) {
    const c = /** @type {any} */ (v);
    const [gate, tool, policy] = cell.split(' | ');
    lines.push(
      `| ${gate} | ${tool} | ${policy} | ${c.calls} | ${fmt(c.p50Ms, 1)} | ${fmt(c.maxMs, 1)} | ${c.requestsP50} | ${c.requestsMax} | ${c.answeredPlainly} of ${c.calls} |`,
    );
  }
  lines.push('');
  return lines;
}

/** Bytes as KiB or MiB. @param {number} bytes */
const size = (bytes) =>
  !Number.isFinite(bytes)
    ? 'n/a'
    : Math.abs(bytes) >= 2 ** 20
      ? `${fmt(bytes / 2 ** 20, 1)} MiB`
      : `${fmt(bytes / 1024, 1)} KiB`;

/** Failures counted by kind, in one cell. @param {Record<string, number> | undefined} errors */
const kinds = (errors) =>
  Object.entries(errors ?? {})
    .map(([kind, n]) => `${n}× ${kind.replace(/\|/g, '/')}`)
    .join('; ') || 'none';

/**
 * The shared-upstreams workloads (bench/sharing.js): a section of `npm run bench`, or with `own` the
 * report of `npm run bench:sharing`.
 * @param {any} x the result of sharing() @param {number} [level] heading level of the section
 */
export function sharingLines(x, level = 2) {
  const h = '#'.repeat(level);
  const lines = [`${h} Shared upstreams (issue 18)`, ''];
  if (!x || x.error) return [...lines, `Failed: ${x?.error ?? 'not run'}`, ''];
  const s = x.settings;
  const c = s.concurrent;
  lines.push(
    `taskgate HTTP→stdio (\`--config bench/taskgate.yaml --log-level warn\`) in front of \`bench/fixture.js\` (a 2025 stdio server without tasks: every task is taskgate's), by \`--upstream-sharing\`. ` +
      'Clients: bare 2025 HTTP sessions (`bench/lib/http-client.js`) sharing one undici Pool. RSS: `/proc/PID/statm` of taskgate and of every descendant, sampled every 100 ms; the peaks of each and of the sum at one sample.',
  );
  lines.push('');
  lines.push(
    `**1. ${c.sessions} sessions × ${c.calls} task-augmented calls at once** (echo with \`sleep_ms\` ${c.sleepMs}: tools/call with \`task\`, then tasks/result, every result checked exact; ` +
      `all sessions opened at once, then all their calls at once; the client's Pool keeps ${c.connections} keep-alive connections; a call unanswered after ${c.deadlineS} s would be lost). \`session\` mode runs with \`--max-sessions ${c.sessionModeMax}\`, so at most ${c.sessionModeMax} servers; the rest are refused. ` +
      "Target: peak RSS sum ≤ 1 GB (10^9 B) in the shared modes. Accept queue: the deepest Recv-Q of taskgate's listening socket (`ss -ltn`, every 100 ms) against its backlog; overflows: TcpExt ListenOverflows over the run (the whole machine's).",
  );
  lines.push('');
  lines.push(
    '| sharing | sessions open | refused (503) | calls right / expected | wrong | failed | lost | open s | calls s | calls/s | CPU s: taskgate / servers | peak RSS taskgate | servers (count) | sum | ≤ 1 GB | accept queue peak / backlog; overflows |',
  );
  lines.push(
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
  );
  for (const [mode, v] of Object.entries(x.concurrent ?? {})) {
    const r = /** @type {any} */ (v);
    const rss = r.rss ?? {};
    // The 1 GB (10^9 B) bar is for the shared modes; session mode is there to compare.
    const met =
      mode === 'session'
        ? 'no bar'
        : Number.isFinite(rss.sumMiB)
          ? rss.sumMiB * 2 ** 20 <= 1e9
            ? '**met**'
            : '**missed**'
          : '';
    if (r.error) {
      lines.push(
        `| ${mode} | failed: ${r.error} | | | | | | | | | | ${fmt(rss.gateMiB, 0)} MiB | ${fmt(rss.childrenMiB, 0)} MiB (${rss.maxChildren}) | ${fmt(rss.sumMiB, 0)} MiB | ${met} | |`,
      );
      continue;
    }
    const k = r.calls;
    lines.push(
      `| ${mode}${mode === 'pool' ? ' (4)' : ''} | ${r.opened} of ${r.sessions} | ${r.refused503} | ${k.right} / ${k.expected} | ${k.wrong} | ${k.failed} | ${k.lost} | ${fmt(r.initSeconds, 1)} | ${fmt(r.callSeconds, 1)} | ${fmt(r.callsPerSecond, 0)} | ${fmt(r.gateCpuSeconds, 1)} / ${fmt(r.serversCpuSeconds, 1)} | ${fmt(rss.gateMiB, 0)} MiB | ${fmt(rss.childrenMiB, 0)} MiB (${rss.maxChildren}) | ${fmt(rss.sumMiB, 0)} MiB | ${met} | ${fmt(r.listenQueue?.acceptQueuePeak, 0)} / ${fmt(r.listenQueue?.backlog, 0)}; ${r.listenQueue?.listenOverflows ?? 'n/a'} |`,
    );
  }
  const failures = Object.entries(x.concurrent ?? {}).filter(
    ([, r]) =>
      Object.keys(/** @type {any} */ (r).calls?.errors ?? {}).length +
        Object.keys(/** @type {any} */ (r).initErrors ?? {}).length >
      0,
  );
  for (const [mode, r] of failures)
    lines.push(
      '',
      `${mode}: failures: ${kinds({ .../** @type {any} */ (r).initErrors, .../** @type {any} */ (r).calls?.errors })}` +
        /** @type {any} */ (
          r.gateStderr
            ? `; taskgate logged: \`${/** @type {any} */ (r).gateStderr.slice(-600).replace(/\s+/g, ' ').replace(/`/g, "'")}\``
            : ''
        ),
    );
  lines.push('');
  const idle = x.idle;
  if (idle?.error) lines.push(`**2. Idle sessions**: failed: ${idle.error}`, '');
  else if (idle) {
    const g = idle.perSession.afterGc;
    const n = idle.perSession.noGc;
    const bar = g.heapPlusExternal.medianBytes <= 50 * 1024;
    lines.push(
      `**2. An idle session's cost in \`shared\` mode**: ${idle.sessions} sessions opened (initialize + notifications/initialized, nothing else; ${idle.failed} failed) beside one warm session (sessions open ${idle.sessionsOpenBefore} → ${idle.sessionsOpenAfter}). ` +
        `taskgate's memory from its \`/metrics\` (\`--admin-listen\`: \`nodejs_heap_size_used_bytes\`, \`nodejs_external_memory_bytes\`; RSS from /proc), ${s.idle.samples} samples ${s.idle.sampleEveryMs} ms apart before and after; ` +
        'first as they come, then each after two full GCs forced over the inspector (taskgate started with `--inspect=127.0.0.1:PORT`, CDP `HeapProfiler.collectGarbage`). Per session, after − before, ÷ sessions (median of the samples; smallest in brackets):',
    );
    lines.push('');
    lines.push('| reading | heap used | heap + external | RSS | ≤ 50 KB |');
    lines.push('| --- | --- | --- | --- | --- |');
    const cell = (/** @type {any} */ v) => `${size(v.medianBytes)} (${size(v.minBytes)})`;
    lines.push(
      `| after forced full GCs | ${cell(g.heapUsed)} | ${cell(g.heapPlusExternal)} | ${cell(g.rss)} | ${bar ? '**met**' : '**missed**'} |`,
    );
    lines.push(
      `| unforced (young garbage comes and goes: not a measure) | ${cell(n.heapUsed)} | ${cell(n.heapPlusExternal)} | ${cell(n.rss)} | |`,
    );
    lines.push('');
  }
  const p = x.peers;
  if (p?.error) lines.push(`**3. Calls/s against the peers**: failed: ${p.error}`, '');
  else if (p) {
    const ps = p.settings;
    lines.push(
      `**3. Calls/s at ${ps.sessions} sessions**, all in front of \`bench/fixture.js\`: every target up with its ${ps.sessions} sessions open, then ${ps.rounds} rounds, the targets' order rotated each round; in each, per target, plain echo calls (checked), each session one call at a time, until ${ps.phaseCalls} or ${ps.phaseSeconds} s. ` +
        `supergateway 4.0.0 \`--outputTransport streamableHttp\` (\`--stateful\`: a child per session; without: a child per POST, so its calls in flight are bounded at ${ps.statelessInFlight}, and it is CPU-bound on spawning anyway); mcp-proxy with its defaults (one child for all sessions). ` +
        'calls/s: median of the rounds; p50/p99 over all calls; proxy CPU: utime+stime of the proxy process alone per call; RSS: peaks over the whole run (servers: every descendant, the `sh` supergateway spawns each through included).',
    );
    lines.push('');
    lines.push(
      '| target | in flight | calls | calls/s | per round | p50 ms | p99 ms | proxy CPU µs/call | peak RSS proxy | servers (count) | sum | errors |',
    );
    lines.push('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
    for (const [name, v] of Object.entries(p.results ?? {})) {
      const r = /** @type {any} */ (v);
      lines.push(
        `| ${name} | ${r.inFlight} | ${r.calls} | ${fmt(r.callsPerSecond, 0)} | ${r.perRound.map((/** @type {number} */ n) => fmt(n, 0)).join(', ')} | ${fmt(r.p50Ms, 2)} | ${fmt(r.p99Ms, 1)} | ${fmt(r.proxyCpuUsPerCall, 0)} | ${fmt(r.rss.gateMiB, 0)} MiB | ${fmt(r.rss.childrenMiB, 0)} MiB (${r.rss.maxChildren}) | ${fmt(r.rss.sumMiB, 0)} MiB | ${kinds(r.errors)} |`,
      );
    }
    for (const [name, why] of Object.entries(p.skipped ?? {}))
      lines.push(`| ${name} | not run: ${why} | | | | | | | | | | |`);
    lines.push('');
  }
  return lines;
}

/** `npm run bench:sharing`'s own report. @param {any} report */
export function sharingMarkdown(report) {
  const lines = [`# taskgate benchmark: shared upstreams, ${report.date}`, ''];
  lines.push(
    `${report.quick ? '**Quick run (not a result).** ' : ''}Commit ${report.commit}; Node ${report.node}, ${report.platform}; load average ${report.loadAverageBefore.join(' ')} before, ${report.loadAverageAfter.join(' ')} after; ${report.sharing.seconds} s. ` +
      'Command: `npm run bench:sharing` (`bench/sharing.js`). The machine is shared with other work: the load average says how busy it was.',
  );
  lines.push('');
  lines.push(...sharingLines(report.sharing));
  return lines.join('\n');
}

/** The SDK v2 client's workload (bench/sdk-v2.js). @param {any} report */
export function sdkV2Lines(report) {
  if (report.error)
    return [
      '',
      '## A 2026-07-28 SDK v2 client through taskgate (issue 19)',
      '',
      `Failed: ${report.error}`,
      '',
    ];
  const x = (/** @type {number[]} */ [mid = NaN, low = NaN, high = NaN]) =>
    `${mid.toFixed(2)} (${low.toFixed(2)}–${high.toFixed(2)})`;
  return [
    '',
    '## A 2026-07-28 SDK v2 client through taskgate (issue 19)',
    '',
    `The TS SDK v2 \`Client\` (2.4.0, pinned to 2026-07-28) over Streamable HTTP, one per target, echo calls. ${report.settings.rounds} rounds, targets rotated each round: ${report.settings.calls} sequential calls per target in blocks of ${report.settings.block} interleaved across the targets (each block after one untimed call), then ${report.settings.throughputCalls} calls with ${report.settings.inFlight} in flight. CPU per call: utime+stime over the in-flight phase of taskgate and its server (of the server alone for the direct target). Ratios are to the direct target, median of the per-round ratios (smallest–largest). Script: [\`bench/sdk-v2.js\`](../sdk-v2.js).`,
    '',
    '| target | p50 ms | p99 ms | p50 × direct | calls/s | × direct | CPU µs per call (proxy + server) |',
    '| --- | --- | --- | --- | --- | --- | --- |',
    ...report.targets.map(
      (/** @type {any} */ t) =>
        `| ${t.name} | ${t.p50Ms} | ${t.p99Ms} | ${x(t.p50Ratio)} | ${t.perSecond} | ${x(t.perSecondRatio)} | ${t.cpuUsPerCall} |`,
    ),
    '',
  ];
}

// @ts-check
/**
 * The 2026-07-28 workloads (issues 17 and 19): what the modern path through taskgate costs against the
 * 2025 one, on the same taskgate HTTP→stdio processes in front of bench/fixture.js (a 2025 stdio server
 * without tasks, so every task is taskgate's augment). Clients are the bare HTTP clients of
 * lib/http-client.js (the SDK v2 client refuses tasks/*), and for the 2025 elicitation the SDK Client.
 *
 * Kinds of operation, measured in blocks interleaved across kinds and rotated round by round, as run.js
 * does with its targets (each block after one untimed operation):
 *
 * - `modern plain` / `legacy plain`: one echo tools/call (modern: no tasks extension declared).
 * - `v2 task`: echo from a client with the tasks extension (promoteAfter 0: always a task): tools/call →
 *   CreateTaskResult, then tasks/get at once, again until `completed` (its `result` inline).
 * - `v1 task`: echo with `task` from a 2025 client, then tasks/result at once (the existing task workload).
 * - `v1 task, polled`: the same, then tasks/get until `completed`, then tasks/result.
 * - `MRTR elicit`: tools/call of `elicit` → `input_required` → the retry with inputResponses/requestState.
 * - `2025 elicit (SDK)`: the same tool from an SDK 1.x Client whose elicitation handler answers at once;
 *   `2025 plain (SDK)`: its echo, to show what the SDK client itself costs against the bare one.
 *
 * Then per round: calls/s with many in flight for the plain and task kinds (taskgate CPU per call from
 * /proc), and promoteAfter: echo with sleep_ms 5 and 2000 against a taskgate with promoteAfter 0 and one
 * with promoteAfter 100, the client polling as the server's pollIntervalMs says, or every 10 ms.
 *
 *   node bench/modern.js     one quick run (BENCH_QUICK=1 settings unless BENCH_QUICK=0), JSON on stdout
 */
import { writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { cpuSeconds, Proc, freePort, waitForPort } from './lib/procs.js';
import { LegacyHttpClient, ModernHttpClient } from './lib/http-client.js';
import { median, pipelined, quantile, ratio, round, sleep } from './lib/stats.js';
import { BENCH_FIXTURE, NODE, fetchWithoutPostSignal, fromRoot } from './lib/targets.js';
import { CallToolResultSchema, Client, ElicitRequestSchema, StreamableHTTPClientTransport } from './sdk.js';

const PROFILE = process.env['BENCH_CPU_PROF'];

export const MODERN_SETTINGS = {
  quick: {
    rounds: 2,
    calls: 40,
    block: 10,
    throughputCalls: 400,
    inFlight: 64,
    taskThroughputCalls: 200,
    taskInFlight: 16,
    promoteRounds: 1,
    promote: { fastCalls: 20, slowCalls: 4, inFlight: 10, fastMs: 5, slowMs: 2000, fixedPollMs: 10 },
    budgetS: 60,
  },
  full: {
    rounds: 6,
    calls: 150,
    block: 10,
    throughputCalls: 1200,
    inFlight: 64,
    taskThroughputCalls: 400,
    taskInFlight: 16,
    promoteRounds: 3,
    promote: { fastCalls: 40, slowCalls: 10, inFlight: 10, fastMs: 5, slowMs: 2000, fixedPollMs: 10 },
    budgetS: 240,
  },
};

/** One operation: its time (ms) and the HTTP requests it took. @typedef {{ ms: number, requests: number, plain?: boolean }} Op */

/** Starts taskgate HTTP→stdio in front of bench/fixture.js with `config`. @param {string} label @param {string} config */
async function startGate(label, config) {
  const port = await freePort();
  const proc = new Proc(label, [
    NODE,
    ...(PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE}`] : []),
    fromRoot('dist/cli.js'),
    '--config',
    fromRoot(config),
    '--log-level',
    'warn',
    '--listen',
    `127.0.0.1:${port}`,
    '--',
    NODE,
    BENCH_FIXTURE,
  ]);
  try {
    await waitForPort(port, 30_000, () => proc.exited);
  } catch (error) {
    await proc.stop();
    throw error;
  }
  return { proc, url: `http://127.0.0.1:${port}/mcp` };
}

/** @param {any} result @param {string} want */
function checkText(result, want) {
  const text = result?.content?.[0]?.text;
  if (text !== want) throw new Error(`expected ${JSON.stringify(want)}, got ${JSON.stringify(result)}`);
}

/** Times `run`, counting the requests `client` made meanwhile (one client per operation at a time). */
async function timed(
  /** @type {{ requests: number }} */ client,
  /** @type {() => Promise<boolean | void>} */ run,
) {
  const before = client.requests;
  const start = performance.now();
  const plain = await run();
  /** @type {Op} */
  const op = { ms: performance.now() - start, requests: client.requests - before };
  if (typeof plain === 'boolean') op.plain = plain;
  return op;
}

const MAX_POLLS = 10_000;

/**
 * tasks/get on a v2 task until it is terminal; waits `pollMs(task)` before each. Resolves with its result.
 * @param {ModernHttpClient} client @param {any} created @param {(task: any) => number} pollMs
 */
async function pollV2(client, created, pollMs) {
  let task = created;
  for (let polls = 0; polls < MAX_POLLS; polls++) {
    const wait = pollMs(task);
    if (wait > 0) await sleep(wait);
    task = await client.request('tasks/get', { taskId: created.taskId });
    if (task.status === 'completed') return task.result;
    if (task.status !== 'working') throw new Error(`tasks/get answered ${JSON.stringify(task)}`);
  }
  throw new Error(`task ${created.taskId} not completed after ${MAX_POLLS} tasks/get`);
}

/**
 * A modern tools/call of echo from a client with the extension: a task (then polled) or a plain answer.
 * Resolves with whether it was answered plainly.
 * @param {ModernHttpClient} client @param {Record<string, unknown>} args @param {(task: any) => number} pollMs
 */
async function modernTaskCall(client, args, pollMs) {
  const first = await client.request('tools/call', { name: 'echo', arguments: args });
  if (first.resultType === 'complete') {
    checkText(first, String(args['text']));
    return true;
  }
  if (first.resultType !== 'task') throw new Error(`tools/call answered ${JSON.stringify(first)}`);
  checkText(await pollV2(client, first, pollMs), String(args['text']));
  return false;
}

/** The SDK 1.x Client over Streamable HTTP, answering every elicitation at once. @param {string} url */
async function sdkClient(url) {
  const client = new Client(
    { name: 'taskgate-bench-sdk', version: '1' },
    { capabilities: { elicitation: {} } },
  );
  client.setRequestHandler(ElicitRequestSchema, async () => ({
    action: 'accept',
    content: { answer: 'yes' },
  }));
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { fetch: fetchWithoutPostSignal }));
  return client;
}

/**
 * @param {typeof MODERN_SETTINGS.full} s
 * @param {(line: string) => void} log
 */
export async function modern(s, log = () => undefined) {
  const gateA = await startGate('taskgate promoteAfter 0', 'bench/taskgate.yaml');
  /** @type {Awaited<ReturnType<typeof startGate>> | undefined} */
  let gateB;
  /** @type {{ close(): Promise<unknown> }[]} */
  const clients = [];
  try {
    gateB = await startGate('taskgate promoteAfter 100', 'bench/taskgate-promote100.yaml');
    const url = gateA.url;
    const plain = new ModernHttpClient(url);
    const tasksA = new ModernHttpClient(url, { tasks: true });
    const tasksB = new ModernHttpClient(gateB.url, { tasks: true });
    const elicit = new ModernHttpClient(url, { elicitation: true });
    const legacy = new LegacyHttpClient(url);
    clients.push(plain, tasksA, tasksB, elicit, legacy);
    await legacy.initialize();
    const sdk = await sdkClient(url);
    clients.push(sdk);
    const sdkCounter = { requests: 0 };
    const sdkCall = async (/** @type {string} */ name, /** @type {Record<string, unknown>} */ args) => {
      sdkCounter.requests++;
      return sdk.request({ method: 'tools/call', params: { name, arguments: args } }, CallToolResultSchema);
    };
    const ECHO = { text: 'ping' };

    /** @type {Record<string, () => Promise<Op>>} */
    const kinds = {
      'modern plain': () =>
        timed(plain, async () => {
          const result = await plain.request('tools/call', { name: 'echo', arguments: ECHO });
          if (result.resultType !== 'complete') throw new Error(`plain call: ${JSON.stringify(result)}`);
          checkText(result, 'ping');
        }),
      'legacy plain': () =>
        timed(legacy, async () =>
          checkText(await legacy.request('tools/call', { name: 'echo', arguments: ECHO }), 'ping'),
        ),
      'v2 task': () =>
        timed(tasksA, async () => {
          if (await modernTaskCall(tasksA, ECHO, () => 0)) throw new Error('promoteAfter 0 answered plainly');
        }),
      'v1 task': () =>
        timed(legacy, async () => {
          const { task } = await legacy.request('tools/call', { name: 'echo', arguments: ECHO, task: {} });
          checkText(await legacy.request('tasks/result', { taskId: task.taskId }), 'ping');
        }),
      'v1 task, polled': () =>
        timed(legacy, async () => {
          const { task } = await legacy.request('tools/call', { name: 'echo', arguments: ECHO, task: {} });
          let status = task.status;
          for (let polls = 0; status !== 'completed' && polls < MAX_POLLS; polls++)
            status = (await legacy.request('tasks/get', { taskId: task.taskId })).status;
          checkText(await legacy.request('tasks/result', { taskId: task.taskId }), 'ping');
        }),
      'MRTR elicit': () =>
        timed(elicit, async () => {
          const params = { name: 'elicit', arguments: { message: 'answer?' } };
          const first = await elicit.request('tools/call', params);
          if (first.resultType !== 'input_required') throw new Error(`elicit: ${JSON.stringify(first)}`);
          /** @type {Record<string, unknown>} */
          const inputResponses = {};
          for (const key of Object.keys(first.inputRequests))
            inputResponses[key] = { action: 'accept', content: { answer: 'yes' } };
          const done = await elicit.request('tools/call', {
            ...params,
            inputResponses,
            requestState: first.requestState,
          });
          checkText(done, 'yes');
        }),
      '2025 elicit (SDK)': () =>
        timed(sdkCounter, async () => checkText(await sdkCall('elicit', { message: 'answer?' }), 'yes')),
      '2025 plain (SDK)': () => timed(sdkCounter, async () => checkText(await sdkCall('echo', ECHO), 'ping')),
    };
    const names = Object.keys(kinds);
    /** The client each in-flight kind runs on, whose requests it counts. */
    const counters = /** @type {Record<string, { requests: number }>} */ ({
      'modern plain': plain,
      'legacy plain': legacy,
      'v2 task': tasksA,
      'v1 task': legacy,
    });
    /** In-flight phases: kind → [how many at once, how many]. */
    const flows = /** @type {Record<string, [number, number]>} */ ({
      'modern plain': [s.inFlight, s.throughputCalls],
      'legacy plain': [s.inFlight, s.throughputCalls],
      'v2 task': [s.taskInFlight, s.taskThroughputCalls],
      'v1 task': [s.taskInFlight, s.taskThroughputCalls],
    });

    // Warm-up: every kind, and the in-flight paths (taskgate's JIT, the upstream children).
    for (const name of names) for (let i = 0; i < 20; i++) await /** @type {any} */ (kinds[name])();
    for (const [name, [inFlight, n]] of Object.entries(flows))
      await pipelined(n / 2, inFlight, /** @type {any} */ (kinds[name]));
    await promoteCells(s, tasksA, tasksB, 1, true);
    log('modern: warmed up');

    /** @type {Record<string, { ops: Op[][], cpu: number, cpuOps: number, perSecond: number[], flowCpu: number, flowOps: number, flowRequests: number }>} */
    const samples = {};
    for (const name of names)
      samples[name] = { ops: [], cpu: 0, cpuOps: 0, perSecond: [], flowCpu: 0, flowOps: 0, flowRequests: 0 };
    const of = (/** @type {string} */ name) => /** @type {(typeof samples)[string]} */ (samples[name]);
    /** @type {Record<string, { ms: number, requests: number, plain: boolean }[]>} */
    const promotion = {};

    const started = performance.now();
    let rounds = 0;
    for (let r = 0; r < s.rounds; r++) {
      const elapsed = (performance.now() - started) / 1000;
      if (r >= 2 && elapsed + elapsed / r > s.budgetS) {
        log(`modern: stopping after ${r} rounds: another would pass the ${s.budgetS} s budget`);
        break;
      }
      rounds++;
      const order = names.map((_, i) => /** @type {string} */ (names[(i + r) % names.length]));
      /** @type {Record<string, Op[]>} */
      const ops = Object.fromEntries(order.map((name) => [name, []]));
      for (let done = 0; done < s.calls; done += s.block) {
        for (const name of order) {
          const run = /** @type {() => Promise<Op>} */ (kinds[name]);
          await run();
          const cpu = cpuSeconds(gateA.proc.pid);
          const n = Math.min(s.block, s.calls - done);
          for (let i = 0; i < n; i++) ops[name]?.push(await run());
          of(name).cpu += cpuSeconds(gateA.proc.pid) - cpu;
          of(name).cpuOps += n;
        }
      }
      for (const name of order) of(name).ops.push(/** @type {Op[]} */ (ops[name]));

      for (const name of order.filter((name) => flows[name])) {
        const [inFlight, n] = /** @type {[number, number]} */ (flows[name]);
        const run = /** @type {() => Promise<Op>} */ (kinds[name]);
        // Requests counted on the client over the phase (the operations overlap).
        const client = /** @type {{ requests: number }} */ (counters[name]);
        const requests = client.requests;
        const cpu = cpuSeconds(gateA.proc.pid);
        const start = performance.now();
        await pipelined(n, inFlight, run);
        const seconds = (performance.now() - start) / 1000;
        of(name).flowCpu += cpuSeconds(gateA.proc.pid) - cpu;
        of(name).flowOps += n;
        of(name).flowRequests += client.requests - requests;
        of(name).perSecond.push(n / seconds);
      }

      if (r < s.promoteRounds) {
        const cells = await promoteCells(s, tasksA, tasksB, r, false);
        for (const [cell, values] of Object.entries(cells)) (promotion[cell] ??= []).push(...values);
      }
      log(`modern: round ${r + 1}/${s.rounds} done`);
    }
    return { settings: { ...s, rounds }, ...summarize(samples, promotion, s) };
  } finally {
    for (const client of clients) await client.close().catch(() => undefined);
    await gateB?.proc.stop();
    await gateA.proc.stop();
  }
}

/**
 * The promoteAfter cells: promoteAfter 0 (tasksA) and 100 (tasksB) × the 5 ms and the 2 s echo × the
 * client polling as pollIntervalMs says or every fixedPollMs; `inFlight` calls at once. Rotated by `r`.
 * @param {typeof MODERN_SETTINGS.full} s @param {ModernHttpClient} tasksA @param {ModernHttpClient} tasksB
 * @param {number} r @param {boolean} warm only a few fast calls
 */
async function promoteCells(s, tasksA, tasksB, r, warm) {
  const p = s.promote;
  /** @type {Record<string, { ms: number, requests: number, plain: boolean }[]>} */
  const cells = {};
  const gates = /** @type {[string, ModernHttpClient][]} */ ([
    ['promoteAfter 0', tasksA],
    ['promoteAfter 100', tasksB],
  ]);
  const tools = warm
    ? [[p.fastMs, 20]]
    : [
        [p.fastMs, p.fastCalls],
        [p.slowMs, p.slowCalls],
      ];
  const policies = /** @type {[string, (task: any) => number][]} */ ([
    ['pollIntervalMs', (task) => Number(task.pollIntervalMs ?? 1000)],
    [`every ${p.fixedPollMs} ms`, () => p.fixedPollMs],
  ]);
  for (let g = 0; g < gates.length; g++) {
    const [gateName, client] = /** @type {[string, ModernHttpClient]} */ (gates[(g + r) % gates.length]);
    for (const [ms, n] of /** @type {[number, number][]} */ (tools)) {
      for (const [policy, pollMs] of policies) {
        /** @type {{ ms: number, requests: number, plain: boolean }[]} */
        const values = [];
        // Each call on its own client: requests are counted per call, and calls run `inFlight` at once.
        await pipelined(n, p.inFlight, async () => {
          const counter = { requests: 0 };
          const own = Object.create(client, {
            request: {
              value: (/** @type {string} */ method, /** @type {any} */ params) => {
                counter.requests++;
                return client.request(method, params);
              },
            },
          });
          const op = await timed(counter, () => modernTaskCall(own, { text: 'slept', sleep_ms: ms }, pollMs));
          values.push({ ms: op.ms, requests: op.requests, plain: op.plain === true });
        });
        cells[`${gateName} | ${ms} ms | ${policy}`] = values;
      }
    }
  }
  return cells;
}

/**
 * @param {Record<string, { ops: Op[][], cpu: number, cpuOps: number, perSecond: number[], flowCpu: number, flowOps: number, flowRequests: number }>} samples
 * @param {Record<string, { ms: number, requests: number, plain: boolean }[]>} promotion
 * @param {typeof MODERN_SETTINGS.full} s
 */
function summarize(samples, promotion, s) {
  /** @type {Record<string, any>} */
  const kinds = {};
  for (const [name, x] of Object.entries(samples)) {
    const all = x.ops.flat();
    const ms = all.map((op) => op.ms);
    kinds[name] = {
      operations: all.length,
      p50Ms: round(median(ms)),
      p95Ms: round(quantile(ms, 0.95)),
      p99Ms: round(quantile(ms, 0.99)),
      requestsPerOp: round(all.reduce((sum, op) => sum + op.requests, 0) / all.length),
      gateCpuUsPerOp: round((x.cpu / x.cpuOps) * 1e6),
      ...(x.perSecond.length > 0
        ? {
            inFlight: {
              perSecond: round(median(x.perSecond)),
              gateCpuUsPerOp: round((x.flowCpu / x.flowOps) * 1e6),
              requestsPerOp: round(x.flowRequests / x.flowOps),
            },
          }
        : {}),
    };
  }
  /** Median over rounds of the ratio of per-round p50s, with its range. @param {string} a @param {string} b */
  const paired = (a, b) => {
    const pa = /** @type {any} */ (samples[a]).ops.map((/** @type {Op[]} */ ops) =>
      median(ops.map((op) => op.ms)),
    );
    const pb = /** @type {any} */ (samples[b]).ops.map((/** @type {Op[]} */ ops) =>
      median(ops.map((op) => op.ms)),
    );
    const per = pa.map((/** @type {number} */ v, /** @type {number} */ i) => ratio(v, pb[i]));
    return { ratio: round(median(per)), range: [round(Math.min(...per)), round(Math.max(...per))] };
  };
  const perSecondRatio = (/** @type {string} */ a, /** @type {string} */ b) => {
    const pa = /** @type {any} */ (samples[a]).perSecond;
    const pb = /** @type {any} */ (samples[b]).perSecond;
    return round(median(pa.map((/** @type {number} */ v, /** @type {number} */ i) => ratio(v, pb[i]))));
  };
  const ratios = {
    v2OverV1: paired('v2 task', 'v1 task'),
    v2OverV1Polled: paired('v2 task', 'v1 task, polled'),
    v2OverModernPlain: paired('v2 task', 'modern plain'),
    v1OverLegacyPlain: paired('v1 task', 'legacy plain'),
    v1PolledOverLegacyPlain: paired('v1 task, polled', 'legacy plain'),
    modernPlainOverLegacyPlain: paired('modern plain', 'legacy plain'),
    mrtrOverSdkElicit: paired('MRTR elicit', '2025 elicit (SDK)'),
    mrtrOverModernPlain: paired('MRTR elicit', 'modern plain'),
    sdkElicitOverSdkPlain: paired('2025 elicit (SDK)', '2025 plain (SDK)'),
    sdkPlainOverLegacyPlain: paired('2025 plain (SDK)', 'legacy plain'),
    v2OverV1PerSecond: perSecondRatio('v2 task', 'v1 task'),
    modernOverLegacyPerSecond: perSecondRatio('modern plain', 'legacy plain'),
  };
  /** @type {Record<string, any>} */
  const promote = {};
  for (const [cell, values] of Object.entries(promotion)) {
    const ms = values.map((v) => v.ms);
    const requests = values.map((v) => v.requests);
    promote[cell] = {
      calls: values.length,
      p50Ms: round(median(ms)),
      maxMs: round(Math.max(...ms)),
      requestsP50: median(requests),
      requestsMax: Math.max(...requests),
      answeredPlainly: values.filter((v) => v.plain).length,
    };
  }
  return { kinds, ratios, promote, inFlight: { plain: s.inFlight, task: s.taskInFlight } };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const settings = process.env['BENCH_QUICK'] === '0' ? MODERN_SETTINGS.full : MODERN_SETTINGS.quick;
  const result = await modern(settings, (line) => process.stderr.write(`${line}\n`));
  const text = JSON.stringify(result, null, 2);
  if (process.env['BENCH_MODERN_OUT']) writeFileSync(process.env['BENCH_MODERN_OUT'], text + '\n');
  process.stdout.write(text + '\n');
}

// @ts-check
/**
 * The task store measured inside one process, against the real MemoryTaskStore from dist/ (the store
 * taskgate runs by default), with nothing else around it. Run by run.js as
 *
 *   node --expose-gc bench/tasks-inproc.js [count]      prints one JSON object on stdout
 *
 * - memory: bytes per held task (working, and completed with a 1 KiB result), as the growth of
 *   heapUsed + external after two full GCs (gc() from --expose-gc) before and after creating `count`
 *   tasks. A forced full GC makes the figure exact and independent of when the process would give memory
 *   back to the OS; RSS is reported too, but only as an upper bound (Node keeps peak RSS for a while).
 *   Each result is parsed from its own JSON text, as taskgate gets it from the upstream, so no two tasks
 *   share a string.
 * - waiters: `count` waitForTerminal() waiters (what tasks/result blocks on), then every task completed
 *   in a loop; the time from the first completion to the last waiter released, and each waiter's delay
 *   after its own task's completion.
 *
 *   node bench/tasks-inproc.js session [count] [rounds]
 *
 * - session: what releasing `count` waiting tasks/result costs taskgate's own code, without the processes
 *   around it: a Session built as the stdio front builds it (observed store, metrics, audit, board), on
 *   LineChannels over in-memory streams; `count` task-augmented calls and a tasks/result for each, then
 *   the upstream's answers in chunks of 650 lines (what one 64 KiB pipe read holds) until every
 *   tasks/result is answered. CPU and wall µs per released task, median and least of `rounds`.
 */
import { rssBytes } from './lib/procs.js';
import { quantile, round } from './lib/stats.js';

const SESSION = process.argv[2] === 'session';
const COUNT = Number(process.argv[SESSION ? 3 : 2] ?? 10_000);
const dist = (/** @type {string} */ path) => import(new URL(`../dist/${path}`, import.meta.url).href);
const { MemoryTaskStore } = await dist('tasks/memory-store.js');

const gc = /** @type {() => void} */ (/** @type {any} */ (globalThis).gc);
if (typeof gc !== 'function') throw new Error('run with node --expose-gc');

const newStore = () => new MemoryTaskStore({ maxTasks: COUNT * 4, maxResultBytes: 1024 * 1024 * 1024 });
const newTask = {
  owner: 'bench-session',
  sessionId: 'bench-session',
  toolName: 'echo',
  ttl: 3_600_000,
  pollInterval: 1000,
};

/** A completed outcome with a 1 KiB text, parsed from its own JSON like an upstream answer. @param {number} i */
function outcome(i) {
  const text = `${String(i).padStart(8, '0')}${'x'.repeat(1024 - 8)}`;
  const json = JSON.stringify({ content: [{ type: 'text', text }] });
  return { outcome: { result: JSON.parse(json) }, outcomeBytes: Buffer.byteLength(json) };
}

function settled() {
  gc();
  gc();
  const { heapUsed, external } = process.memoryUsage();
  return { heap: heapUsed + external, rss: rssBytes(process.pid) };
}

/** @param {'working' | 'completed'} kind */
async function memory(kind) {
  // Warm up the code paths on a store that is then dropped.
  const warm = newStore();
  for (let i = 0; i < 1000; i++) {
    const record = await warm.create(newTask);
    if (kind === 'completed') await warm.update(record.taskId, { status: 'completed', ...outcome(i) });
  }
  await warm.close();
  const store = newStore();
  const before = settled();
  let resultBytes = 0;
  for (let i = 0; i < COUNT; i++) {
    const record = await store.create(newTask);
    if (kind === 'completed') {
      const done = outcome(i);
      resultBytes += done.outcomeBytes;
      await store.update(record.taskId, { status: 'completed', ...done });
    }
  }
  const after = settled();
  const perTask = (after.heap - before.heap) / COUNT;
  const resultPerTask = resultBytes / COUNT;
  const heldBy = store.size; // keeps the store alive until after the measurement
  await store.close();
  return {
    tasks: heldBy.live + heldBy.terminal,
    heapBytesPerTask: round(perTask),
    resultBytesPerTask: round(resultPerTask),
    overheadBytesPerTask: round(perTask - resultPerTask),
    rssBytesPerTaskUpperBound: round((after.rss - before.rss) / COUNT),
  };
}

async function waiters() {
  const store = newStore();
  const ids = [];
  for (let i = 0; i < COUNT; i++) ids.push((await store.create(newTask)).taskId);
  const completedAt = new Float64Array(COUNT);
  const releasedAt = new Float64Array(COUNT);
  const released = ids.map((id, i) =>
    store.waitForTerminal(id).then(() => {
      releasedAt[i] = performance.now();
    }),
  );
  const done = outcome(0);
  const first = performance.now();
  for (let i = 0; i < COUNT; i++) {
    completedAt[i] = performance.now();
    await store.update(/** @type {string} */ (ids[i]), { status: 'completed', ...done });
  }
  const lastCompletion = performance.now();
  await Promise.all(released);
  const last = Math.max(...releasedAt);
  const delays = Array.from(releasedAt, (at, i) => at - /** @type {number} */ (completedAt[i]));
  await store.close();
  return {
    waiters: COUNT,
    allReleasedMs: round(last - first),
    completionLoopMs: round(lastCompletion - first),
    lastReleasedAfterLastCompletionMs: round(last - lastCompletion),
    delayAfterOwnCompletionMs: {
      p50: round(quantile(delays, 0.5)),
      p99: round(quantile(delays, 0.99)),
      max: round(Math.max(...delays)),
    },
  };
}

/** The release of `COUNT` waiting tasks/result through a whole Session (see the header). */
async function session() {
  const rounds = Number(process.argv[4] ?? 7);
  const { resolveConfig } = await dist('config/load.js');
  const { Policy } = await dist('config/policy.js');
  const { PrometheusMetrics } = await dist('observability/metrics.js');
  const { observeTasks } = await dist('observability/observe.js');
  const { countingDenials, createAuditLog } = await dist('observability/audit.js');
  const { createLogger } = await dist('observability/logger.js');
  const { Limits } = await dist('security/limits.js');
  const { Session } = await dist('session/session.js');
  const { DeferredChannel } = await dist('transport/deferred-channel.js');
  const { LineChannel } = await dist('transport/line-channel.js');
  const { PassThrough, Writable } = await import('node:stream');

  const config = resolveConfig({ tasks: { maxTasks: COUNT * (rounds + 2) * 2 } });
  const logger = createLogger('warn');
  const metrics = new PrometheusMetrics();
  const tasks = new MemoryTaskStore({
    maxTasks: config.tasks.maxTasks,
    maxResultBytes: config.tasks.maxResultBytes,
  });
  const observed = observeTasks(tasks, metrics, logger);
  const store = observed.store;
  const id = 'stdio-bench';
  const audit = countingDenials(createAuditLog(logger, store, config.audit), () => undefined);
  const options = {
    id,
    config,
    policy: new Policy(config),
    store,
    logger,
    limits: new Limits(config.limits, () => undefined),
    audit,
    onUpstreamAnswer: (/** @type {string} */ m, /** @type {number} */ s) => metrics.upstreamLatency(m, s),
    sightings: observed.board.sightingsOf(id),
  };

  // The client's side: what taskgate writes is only counted (tasks/result answers carry related-task).
  let answered = 0;
  let expected = Infinity;
  /** @type {() => void} */
  let allAnswered = () => undefined;
  const count = (/** @type {{ chunk: Buffer | string }[]} */ chunks) => {
    for (const { chunk } of chunks) {
      const text = chunk.toString();
      if (text.includes('"result"') && text.includes('related-task')) answered++;
    }
    if (answered >= expected) allAnswered();
  };
  const clientIn = new PassThrough();
  const clientOut = new Writable({
    writev: (chunks, done) => (count(chunks), done()),
    write: (chunk, _encoding, done) => (count([{ chunk }]), done()),
  });
  // The upstream's side: the requests taskgate sends it, parsed.
  const upstreamIn = new PassThrough();
  /** @type {any[]} */
  const requests = [];
  let partial = '';
  const upstreamOut = new Writable({
    write: (chunk, _encoding, done) => {
      const lines = (partial + chunk.toString()).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) if (line !== '') requests.push(JSON.parse(line));
      done();
    },
  });
  const toClient = new DeferredChannel();
  const gate = new Session(
    toClient,
    new LineChannel(upstreamIn, upstreamOut, config.maxMessageBytes, 'the upstream'),
    options,
    { upstreamGone: () => undefined, closed: () => undefined },
  );
  gate.start();
  toClient.connect(new LineChannel(clientIn, clientOut, config.maxMessageBytes, 'the client'));

  const turn = () => new Promise((resolve) => setImmediate(resolve));
  const settle = async () => {
    for (let i = 0; i < 20; i++) await turn();
  };
  let nextId = 1;
  const send = (/** @type {object} */ message) =>
    clientIn.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\n');
  const answer = (/** @type {any} */ request, /** @type {object} */ result) =>
    JSON.stringify({ result, jsonrpc: '2.0', id: request.id }) + '\n';

  send({
    id: nextId++,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
  });
  await settle();
  const serverInfo = { name: 'bench-fixture', version: '1' };
  for (const request of requests.splice(0))
    upstreamIn.write(
      answer(request, { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo }),
    );
  await settle();
  send({ method: 'notifications/initialized' });
  await settle();
  requests.length = 0;

  const release = async (/** @type {number} */ n) => {
    answered = 0;
    expected = n;
    const ids = [];
    for (let i = 0; i < n; i++) {
      const callId = nextId++;
      ids.push(callId);
      send({
        id: callId,
        method: 'tools/call',
        params: { name: 'sleep_until', arguments: { at: 0 }, task: {} },
      });
    }
    await settle();
    const live = [...tasks['live'].keys()];
    for (const taskId of live) send({ id: nextId++, method: 'tasks/result', params: { taskId } });
    await settle();
    const calls = requests.splice(0).filter((request) => request.method === 'tools/call');
    if (calls.length !== n || live.length !== n)
      throw new Error(`${calls.length} calls, ${live.length} live`);
    const lines = calls.map((call) => answer(call, { content: [{ type: 'text', text: 'woke' }] }));
    const done = new Promise((resolve) => (allAnswered = () => resolve(undefined)));
    const cpu = process.cpuUsage();
    const start = performance.now();
    for (let i = 0; i < lines.length; i += 650) {
      upstreamIn.write(Buffer.from(lines.slice(i, i + 650).join('')));
      await turn();
    }
    await done;
    const wall = performance.now() - start;
    const used = process.cpuUsage(cpu);
    return { wall: (wall * 1000) / n, cpu: (used.user + used.system) / n };
  };
  await release(Math.min(COUNT, 2000)); // warm-up
  const results = [];
  for (let i = 0; i < rounds; i++) results.push(await release(COUNT));
  const cpu = results.map((r) => r.cpu);
  const wall = results.map((r) => r.wall);
  return {
    released: COUNT,
    rounds,
    cpuUsPerTask: { median: round(quantile(cpu, 0.5)), least: round(Math.min(...cpu)) },
    wallUsPerTask: { median: round(quantile(wall, 0.5)), least: round(Math.min(...wall)) },
  };
}

const report = SESSION
  ? await session()
  : {
      count: COUNT,
      completed1KiB: await memory('completed'),
      working: await memory('working'),
      waiters: await waiters(),
    };
process.stdout.write(JSON.stringify(report) + '\n');

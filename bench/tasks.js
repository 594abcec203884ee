// @ts-check
/**
 * Task workloads against a real taskgate process (stdio→stdio, in front of the stdio fixture), driven by
 * the bare JSON-lines client (lib/raw-client.js) so that the client is not the bottleneck:
 *
 * - storm: tasks/get on one finished task, 64 outstanding; tasks/get per wall second, and per second of
 *   CPU that the taskgate process used (utime + stime from /proc: "on one core").
 * - held: 10 000 finished tasks with a 1 KiB result, then 10 000 working ones, held in a taskgate
 *   started with bench/probe.js: heap + external after two full GCs in that process, before and after
 *   (RSS too, as an upper bound), and event-loop delay and small-call latency while it holds them,
 *   against the same before.
 * - waiters: 10 000 task-augmented `sleep_until` calls (bench/fixture.js) that all end at one deadline,
 *   each with a tasks/result waiting in taskgate; the time from the deadline to the last result, against
 *   the same 10 000 plain calls made directly to that server.
 *
 * run.js runs them all; one alone, JSON on stdout (BENCH_TASKS_CPU_PROF=DIR profiles its taskgate):
 *
 *   node bench/tasks.js waiters [COUNT]
 */
import { pathToFileURL } from 'node:url';
import { RawStdioClient } from './lib/raw-client.js';
import { cpuSeconds, rssBytes } from './lib/procs.js';
import { median, pipelined, quantile, round, sleep } from './lib/stats.js';
import { BENCH_FIXTURE, FIXTURE, NODE, TASKGATE, TASKGATE_FLAGS, fromRoot } from './lib/targets.js';

/** BENCH_TASKS_CPU_PROF=DIR profiles the taskgate processes of these workloads (node --cpu-prof). */
const gateFlags = () => {
  const dir = process.env['BENCH_TASKS_CPU_PROF'];
  return dir ? ['--cpu-prof', `--cpu-prof-dir=${dir}`] : [];
};

const gateArgv = (/** @type {string[]} */ nodeFlags = []) => [
  NODE,
  ...gateFlags(),
  ...nodeFlags,
  TASKGATE,
  ...TASKGATE_FLAGS,
  '--',
  NODE,
  FIXTURE,
];

/** @param {RawStdioClient} client @param {string} name @param {Record<string, unknown>} args */
const createTask = (client, name, args) =>
  client
    .request('tools/call', { name, arguments: args, task: {} })
    .then((r) => /** @type {string} */ (r.task.taskId));

/**
 * @param {{ requests: number, rounds: number, inFlight: number }} options
 */
export async function storm({ requests, rounds, inFlight }) {
  const client = new RawStdioClient(gateArgv());
  try {
    await client.initialize();
    const taskId = await createTask(client, 'echo', { text: 'ping' });
    await client.request('tasks/result', { taskId });
    const get = () =>
      client.request('tasks/get', { taskId }).then((task) => {
        if (task.status !== 'completed') throw new Error(`tasks/get answered ${JSON.stringify(task)}`);
      });
    await pipelined(Math.min(5000, requests), inFlight, get); // warm-up
    const wall = [];
    const perCpu = [];
    for (let round_ = 0; round_ < rounds; round_++) {
      const cpu = cpuSeconds(client.pid);
      const start = performance.now();
      await pipelined(requests, inFlight, get);
      const seconds = (performance.now() - start) / 1000;
      wall.push(requests / seconds);
      perCpu.push(requests / Math.max(0.01, cpuSeconds(client.pid) - cpu));
    }
    return {
      requestsPerRound: requests,
      rounds,
      inFlight,
      perWallSecond: round(median(wall)),
      perCpuSecond: round(median(perCpu)),
    };
  } finally {
    await client.close();
  }
}

/**
 * @param {{ count: number, resultBytes: number, holdSeconds: number }} options
 */
export async function held({ count, resultBytes, holdSeconds }) {
  /** @type {((probe: any) => void)[]} */
  const probes = [];
  const completed = new Set();
  const client = new RawStdioClient(
    gateArgv(['--expose-gc', '--import', pathToFileURL(fromRoot('bench/probe.js')).href]),
    {
      onStderrLine: (line) => {
        if (line.startsWith('BENCH-PROBE ')) probes.shift()?.(JSON.parse(line.slice('BENCH-PROBE '.length)));
        // The fixture (SDK StdioServerTransport) warns of drain listeners when taskgate reads its answers
        // slower than it writes them during the bursts: expected here, and not taskgate's.
        else if (!/MaxListenersExceededWarning|--trace-warnings/.test(line))
          process.stderr.write(`[taskgate] ${line}\n`);
      },
      onNotification: (message) => {
        if (message.method === 'notifications/tasks/status' && message.params?.status === 'completed')
          completed.add(message.params.taskId);
      },
    },
  );
  /** Asks the probe for its report: ELD since the last one, memory after two full GCs. */
  const probe = async () => {
    const report = new Promise((resolve) => probes.push(resolve));
    client.child.kill('SIGUSR2');
    const value = /** @type {any} */ (await report);
    return { ...value, rss: rssBytes(client.pid) };
  };
  /** Small sequential calls for `seconds`, with the probe's ELD window around them. */
  const window = async (/** @type {number} */ seconds) => {
    await probe();
    const latencies = [];
    const end = performance.now() + seconds * 1000;
    while (performance.now() < end) {
      const start = performance.now();
      await client.request('tools/call', { name: 'echo', arguments: { text: 'ping' } });
      latencies.push(performance.now() - start);
    }
    const { eld } = await probe();
    return {
      eld: { p50: round(eld.p50), p99: round(eld.p99), max: round(eld.max) },
      callP50Ms: round(quantile(latencies, 0.5)),
      callP99Ms: round(quantile(latencies, 0.99)),
      calls: latencies.length,
    };
  };
  /** Creates `n` tasks, 64 outstanding. @param {number} n @param {(i: number) => [string, Record<string, unknown>]} what */
  const createMany = async (n, what) => {
    const ids = /** @type {string[]} */ ([]);
    await pipelined(n, 64, async (i) => {
      ids.push(await createTask(client, ...what(i)));
    });
    return ids;
  };
  const text = (/** @type {number} */ i) => `${String(i).padStart(8, '0')}${'x'.repeat(resultBytes - 8)}`;
  try {
    await client.initialize();
    // Warm-up: the task path and plain calls, then let the burst's garbage go.
    const warm = await createMany(500, (i) => ['echo', { text: text(i) }]);
    await pipelined(warm.length, 64, (i) => client.request('tasks/result', { taskId: warm[i] }));
    for (let i = 0; i < 500; i++)
      await client.request('tools/call', { name: 'echo', arguments: { text: 'ping' } });
    const idle = await window(holdSeconds);
    const before = await probe();

    completed.clear();
    const done = await createMany(count, (i) => ['echo', { text: text(i) }]);
    const deadline = Date.now() + 60_000;
    while (!done.every((id) => completed.has(id))) {
      if (Date.now() > deadline)
        throw new Error(`only ${completed.size} of ${count} tasks completed in 60 s`);
      await sleep(100);
    }
    // The result held, as the upstream sent it: the JSON of the CallToolResult.
    const resultJsonBytes = Buffer.byteLength(JSON.stringify({ content: [{ type: 'text', text: text(0) }] }));
    const afterTerminal = await probe();
    await createMany(count, () => ['sleep', { ms: 120_000 }]);
    await sleep(500);
    const afterWorking = await probe();
    const holding = await window(holdSeconds);

    const heap = (/** @type {any} */ p) => p.memory.heapUsed + p.memory.external;
    const terminalPerTask = (heap(afterTerminal) - heap(before)) / count;
    const workingPerTask = (heap(afterWorking) - heap(afterTerminal)) / count;
    return {
      count,
      resultTextBytes: resultBytes,
      resultJsonBytes,
      terminal: {
        heapBytesPerTask: round(terminalPerTask),
        overheadBytesPerTask: round(terminalPerTask - resultJsonBytes),
        rssBytesPerTaskUpperBound: round((afterTerminal.rss - before.rss) / count),
      },
      working: {
        heapBytesPerTask: round(workingPerTask),
        rssBytesPerTaskUpperBound: round((afterWorking.rss - afterTerminal.rss) / count),
      },
      heldTasks: count * 2,
      idle,
      holding,
    };
  } finally {
    // The sleeping calls would keep the fixture busy for 2 minutes: stop the whole tree now.
    client.child.kill('SIGTERM');
    await client.close();
  }
}

/**
 * @param {{ count: number, leadMs: number }} options
 */
export async function waiters({ count, leadMs }) {
  /**
   * @param {string[]} argv
   * @param {boolean} tasks
   */
  const run = async (argv, tasks) => {
    const client = new RawStdioClient(argv);
    try {
      await client.initialize();
      // Warm-up.
      await pipelined(500, 64, () =>
        client.request('tools/call', {
          name: 'sleep_until',
          arguments: { at: 0 },
          ...(tasks ? { task: {} } : {}),
        }),
      );
      const deadline = Date.now() + leadMs;
      const args = { at: deadline };
      const arrivals = new Float64Array(count);
      /** @type {Promise<unknown>[]} */
      const answers = [];
      if (tasks) {
        const ids = [];
        for (let i = 0; i < count; i++) ids.push(createTask(client, 'sleep_until', args));
        const taskIds = await Promise.all(ids);
        taskIds.forEach((taskId, i) =>
          answers.push(client.request('tasks/result', { taskId }).then(() => (arrivals[i] = Date.now()))),
        );
      } else {
        for (let i = 0; i < count; i++)
          answers.push(
            client
              .request('tools/call', { name: 'sleep_until', arguments: args })
              .then(() => (arrivals[i] = Date.now())),
          );
      }
      // A plain echo goes behind every request above, through taskgate and the server's stdin, in order:
      // once it is answered, every waiter is in place and every call has reached the server.
      await client.request('tools/call', { name: 'echo', arguments: { text: 'ready?' } });
      const readyBeforeDeadlineMs = deadline - Date.now();
      await Promise.all(answers);
      const after = Array.from(arrivals, (at) => at - deadline);
      return {
        readyBeforeDeadlineMs,
        lastAfterDeadlineMs: Math.max(...after),
        p50AfterDeadlineMs: quantile(after, 0.5),
      };
    } finally {
      await client.close();
    }
  };
  const gate = await run(
    [NODE, ...gateFlags(), TASKGATE, ...TASKGATE_FLAGS, '--', NODE, BENCH_FIXTURE],
    true,
  );
  const direct = await run([NODE, BENCH_FIXTURE], false);
  return {
    count,
    taskgate: gate,
    direct,
    valid: gate.readyBeforeDeadlineMs > 0 && direct.readyBeforeDeadlineMs > 0,
    addedMs: gate.lastAfterDeadlineMs - direct.lastAfterDeadlineMs,
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [workload, count = '10000'] = process.argv.slice(2);
  if (workload !== 'waiters') {
    process.stderr.write('usage: node bench/tasks.js waiters [COUNT]\n');
    process.exit(2);
  }
  process.stdout.write(JSON.stringify(await waiters({ count: Number(count), leadMs: 10_000 })) + '\n');
}

// @ts-check
/**
 * What routing among several servers costs (issue 32), a section of `npm run bench`: sequential tools/call
 * through taskgate on stdio in front of one legacy fixture (`-- command`), of the same server as the one
 * entry of `upstreams`, and as the first of ten. The three stay up; each round runs a block of calls on
 * each, the order rotated round by round, so that drift on a shared machine hits all three alike. Per
 * call: the client's wall time and taskgate's own CPU (utime + stime of its process, from /proc; Linux
 * only); the ratios are taken round by round, and their medians reported. Then what a caller's own set
 * of servers costs over the HTTP front (bench/aggregate-callers.js).
 *
 *   npm run bench                               with everything (BENCH_ONLY=aggregate: this alone)
 *   npm run build && node bench/aggregate.js    alone; writes bench/results/<UTC date>T<hhmm>-aggregate.json
 *                                               and .md (BENCH_QUICK=1: a short run that writes nothing)
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CALLER_SETTINGS, callers, callersLines } from './aggregate-callers.js';
import { commit } from './lib/commit.js';
import { runFacts } from './lib/machine.js';
import { median, ratio, round } from './lib/stats.js';
import { fromRoot } from './lib/targets.js';

const LEGACY = fromRoot('test/fixtures/legacy-server.js');
const CLI = fromRoot('dist/cli.js');
/** Clock ticks per second of /proc/<pid>/stat (USER_HZ, 100 on Linux). */
const TICKS = 100;

export const AGGREGATE_SETTINGS = {
  quick: { calls: 200, rounds: 2, warmup: 50, callers: CALLER_SETTINGS.quick },
  full: { calls: 1000, rounds: 6, warmup: 200, callers: CALLER_SETTINGS.full },
};

/** @param {number} pid */
function cpuMs(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS;
}

/** A config file of `servers` entries, each the legacy fixture. @param {number} servers */
function configOf(servers) {
  const path = join(tmpdir(), `taskgate-bench-aggregate-${process.pid}-${servers}.json`);
  /** @type {Record<string, object>} */
  const upstreams = {};
  for (let i = 0; i < servers; i++) upstreams[`s${i}`] = { command: process.execPath, args: [LEGACY] };
  writeFileSync(path, JSON.stringify({ upstreams }));
  return path;
}

/** @param {string[]} configs the config files written, to remove at the end */
const SETUPS = (configs) => {
  configs.push(configOf(1), configOf(10));
  return {
    'one upstream': { args: [CLI, '--', process.execPath, LEGACY], tool: 'echo' },
    'upstreams: 1': { args: [CLI, '--config', configs[0] ?? ''], tool: 's0__echo' },
    'upstreams: 10': { args: [CLI, '--config', configs[1] ?? ''], tool: 's0__echo' },
  };
};

/**
 * @param {typeof AGGREGATE_SETTINGS.full} s
 * @param {(line: string) => void} [log]
 */
export async function aggregate(s, log = () => undefined) {
  const routing = await routed(s, log);
  const perCaller = await callers(s.callers, log).catch((error) => ({ error: String(error) }));
  return { ...routing, callers: perCaller };
}

/**
 * @param {{ calls: number, rounds: number, warmup: number }} s
 * @param {(line: string) => void} log
 */
async function routed(s, log) {
  /** @type {string[]} */
  const configs = [];
  const setups = Object.entries(SETUPS(configs));
  /** @type {{ name: string, tool: string, client: Client, pid: number }[]} */
  const running = [];
  try {
    for (const [name, { args, tool }] of setups) {
      const transport = new StdioClientTransport({
        command: process.execPath,
        args,
        stderr: 'ignore',
        env: { .../** @type {Record<string, string>} */ (process.env), TASKGATE_LOG_LEVEL: 'warn' },
      });
      const client = new Client({ name: 'bench-aggregate', version: '1' }, { capabilities: {} });
      await client.connect(transport);
      running.push({ name, tool, client, pid: /** @type {number} */ (transport.pid) });
      await client.listTools();
      for (let i = 0; i < s.warmup; i++) await client.callTool({ name: tool, arguments: { text: 'x' } });
    }
    /** @type {Record<string, { wall: number[], cpu: number[] }>} */
    const perCall = Object.fromEntries(running.map(({ name }) => [name, { wall: [], cpu: [] }]));
    for (let r = 0; r < s.rounds; r++) {
      const order = running.map((_, i) => running[(i + r) % running.length]);
      for (const one of order) {
        if (one === undefined) continue;
        const cpu = cpuMs(one.pid);
        const start = performance.now();
        for (let i = 0; i < s.calls; i++) {
          await one.client.callTool({ name: one.tool, arguments: { text: 'x' } });
        }
        perCall[one.name]?.wall.push((performance.now() - start) / s.calls);
        perCall[one.name]?.cpu.push((cpuMs(one.pid) - cpu) / s.calls);
      }
      log(`routing among servers: round ${r + 1} of ${s.rounds}`);
    }
    return summary(s, perCall);
  } finally {
    for (const { client } of running) await client.close();
    for (const path of configs) rmSync(path, { force: true });
  }
}

/**
 * Medians per setup, and the round-by-round ratios: ten servers against one, and one server behind the
 * aggregator against none.
 * @param {{ calls: number, rounds: number }} s
 * @param {Record<string, { wall: number[], cpu: number[] }>} perCall
 */
function summary(s, perCall) {
  const of = (/** @type {string} */ name) => perCall[name] ?? { wall: [], cpu: [] };
  const ratios = (/** @type {string} */ a, /** @type {string} */ b, /** @type {'wall' | 'cpu'} */ key) =>
    round(median(of(a)[key].map((value, i) => ratio(value, of(b)[key][i] ?? NaN))));
  return {
    settings: s,
    perCallMs: Object.fromEntries(
      Object.entries(perCall).map(([name, { wall, cpu }]) => [
        name,
        {
          wall: round(median(wall)),
          cpu: round(median(cpu)),
          rounds: { wall: wall.map(round), cpu: cpu.map(round) },
        },
      ]),
    ),
    tenAgainstOne: {
      wall: ratios('upstreams: 10', 'upstreams: 1', 'wall'),
      cpu: ratios('upstreams: 10', 'upstreams: 1', 'cpu'),
    },
    oneAgainstNone: {
      wall: ratios('upstreams: 1', 'one upstream', 'wall'),
      cpu: ratios('upstreams: 1', 'one upstream', 'cpu'),
    },
  };
}

/** The section of the bench report. @param {any} x the result of aggregate() @param {number} [level] */
export function aggregateLines(x, level = 2) {
  const lines = ['', `${'#'.repeat(level)} Routing among several servers (bench/aggregate.js)`, ''];
  if (x.error) return [...lines, `Not run: ${x.error}`];
  lines.push(
    `Sequential \`tools/call\` of the legacy fixture's \`echo\` through taskgate on stdio: with one upstream (\`-- command\`), with it as the one entry of \`upstreams\`, and as the first of ten; ${x.settings.calls} calls a block, ${x.settings.rounds} rounds, the order rotated each round. Medians per call; ratios taken round by round.`,
    '',
    '| setup | wall ms / call | taskgate CPU ms / call |',
    '| --- | --- | --- |',
  );
  for (const [name, { wall, cpu }] of Object.entries(x.perCallMs))
    lines.push(`| ${name} | ${wall} | ${cpu} |`);
  lines.push(
    '',
    `Ten servers against one (\`upstreams\`): ×${x.tenAgainstOne.wall} wall, ×${x.tenAgainstOne.cpu} CPU. The aggregator's hop (\`upstreams\` of 1 against one upstream): ×${x.oneAgainstNone.wall} wall, ×${x.oneAgainstNone.cpu} CPU.`,
    '',
  );
  if (x.callers) lines.push(...callersLines(x.callers, level + 1));
  return lines;
}

async function main() {
  const quick = process.env.BENCH_QUICK === '1';
  const started = performance.now();
  const loadBefore = (await import('node:os')).loadavg();
  const log = (/** @type {string} */ line) => process.stderr.write(`[bench aggregate] ${line}\n`);
  const result = await aggregate(quick ? AGGREGATE_SETTINGS.quick : AGGREGATE_SETTINGS.full, log);
  const report = { ...runFacts(loadBefore, started, quick), commit: commit(), aggregate: result };
  const md = [
    `# Routing among several servers`,
    '',
    `${quick ? '**Quick run (not a result).** ' : ''}Commit ${report.commit}; Node ${report.node}, ${report.platform}; load average ${report.loadAverageBefore.join(' ')} before, ${report.loadAverageAfter.join(' ')} after; ${report.durationSeconds} s. Command: \`npm run build && node bench/aggregate.js\`. The machine is shared with other work: the load average says how busy it was.`,
    ...aggregateLines(result),
    '',
  ].join('\n');
  process.stdout.write(md);
  if (quick) return;
  const stamp = report.date.slice(0, 16).replace(':', '');
  mkdirSync(fromRoot('bench/results'), { recursive: true });
  writeFileSync(fromRoot(`bench/results/${stamp}-aggregate.json`), JSON.stringify(report, null, 2) + '\n');
  writeFileSync(fromRoot(`bench/results/${stamp}-aggregate.md`), md);
  log(`wrote bench/results/${stamp}-aggregate.json and .md`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main();

// @ts-check
/**
 * A first look at what routing among several servers costs (issue 32), not yet part of `npm run bench`:
 * sequential tools/call through taskgate on stdio in front of one legacy fixture (`-- command`), of the same
 * server as the one entry of `upstreams`, and as the first of ten, alternated round by round. Per call: the
 * client's wall time and taskgate's own CPU (utime + stime of its process, from /proc; Linux only).
 *
 *   npm run build && node bench/aggregate.js [CALLS] [ROUNDS]     (2000 and 3 unless given)
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const root = (/** @type {string} */ path) => fileURLToPath(new URL(`../${path}`, import.meta.url));
const LEGACY = root('test/fixtures/legacy-server.js');
const CLI = root('dist/cli.js');
/** Clock ticks per second of /proc/<pid>/stat (USER_HZ, 100 on Linux). */
const TICKS = 100;

/** @param {number} pid */
function cpuMs(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS;
}

/** @param {number} servers */
function configOf(servers) {
  const path = join(tmpdir(), `taskgate-bench-aggregate-${servers}.json`);
  /** @type {Record<string, object>} */
  const upstreams = {};
  for (let i = 0; i < servers; i++) upstreams[`s${i}`] = { command: process.execPath, args: [LEGACY] };
  writeFileSync(path, JSON.stringify({ upstreams }));
  return path;
}

const SETUPS = {
  'one upstream': { args: [CLI, '--', process.execPath, LEGACY], tool: 'echo' },
  'upstreams: 1': { args: [CLI, '--config', configOf(1)], tool: 's0__echo' },
  'upstreams: 10': { args: [CLI, '--config', configOf(10)], tool: 's0__echo' },
};
const CALLS = Number(process.argv[2] ?? 2000);
const ROUNDS = Number(process.argv[3] ?? 3);

/** @type {Record<string, { wall: number; cpu: number }[]>} */
const results = {};
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, { args, tool }] of Object.entries(SETUPS)) {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args,
      stderr: 'ignore',
      env: { .../** @type {Record<string, string>} */ (process.env), TASKGATE_LOG_LEVEL: 'warn' },
    });
    const client = new Client({ name: 'bench-aggregate', version: '1' }, { capabilities: {} });
    await client.connect(transport);
    const pid = /** @type {number} */ (transport.pid);
    await client.listTools();
    for (let i = 0; i < 100; i++) await client.callTool({ name: tool, arguments: { text: 'x' } });
    const cpu = cpuMs(pid);
    const start = performance.now();
    for (let i = 0; i < CALLS; i++) await client.callTool({ name: tool, arguments: { text: 'x' } });
    (results[name] ??= []).push({
      wall: (performance.now() - start) / CALLS,
      cpu: (cpuMs(pid) - cpu) / CALLS,
    });
    await client.close();
  }
}
for (const [name, runs] of Object.entries(results)) {
  const shown = runs.map(({ wall, cpu }) => `${wall.toFixed(3)} ms wall, ${cpu.toFixed(3)} ms CPU`);
  process.stdout.write(`${name.padEnd(14)} ${shown.join(' | ')}\n`);
}

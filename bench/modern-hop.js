// @ts-check
/**
 * The bridge ↔ Session hop alone, in this process, on dist/: modern tools/calls through a ModernBridge and
 * its Session (the memory channel between them) to an upstream that answers in memory, as
 * SharedModernBridge.handle gets them from the HTTP front. No HTTP and no child process, the costs both
 * eras share, so what it prints is what only the 2026-07-28 path adds. CPU µs per call (process.cpuUsage,
 * all threads; nothing else runs) and calls/s, median of 5 batches after a warm-up.
 *
 *   node bench/modern-hop.js [COUNT] [--in-flight N] [--dist DIR]
 *
 * --dist DIR  the build to measure (default: this checkout's dist/), e.g. another worktree's, to compare
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { median, pipelined } from './lib/stats.js';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { 'in-flight': { type: 'string', default: '1' }, dist: { type: 'string' } },
});
const COUNT = Number(positionals[0] ?? 20_000);
const inFlight = Number(values['in-flight']);
const root =
  values.dist === undefined
    ? new URL('../dist/', import.meta.url)
    : pathToFileURL(`${resolve(values.dist)}/`);
const dist = (/** @type {string} */ path) => new URL(path, root).href;
const { pino } = await import('pino');
const { bridgeSession } = await import(dist('modern/shared-bridge.js'));
const { memoryChannelPair } = await import(dist('transport/memory-channel.js'));
const { resolveConfig } = await import(dist('config/load.js'));
const { Policy } = await import(dist('config/policy.js'));
const { MemoryTaskStore } = await import(dist('tasks/memory-store.js'));
/** @type {{ ClientGiveUp?: new () => object }} */
const exchangeModule = await import(dist('protocol/modern/exchange.js'));
// What the HTTP front of that build hands as the request's give-up.
const giveUp = exchangeModule.ClientGiveUp
  ? () => new /** @type {new () => object} */ (exchangeModule.ClientGiveUp)()
  : () => new AbortController().signal;

const upstream = memoryChannelPair();
/** @param {object} message */
const answer = (message) => upstream.b.sendRaw(JSON.stringify(message));
upstream.b.start({
  message: (/** @type {Buffer} */ raw) => {
    const message = JSON.parse(raw.toString());
    if (message.id === undefined) return;
    if (message.method === 'initialize') {
      const serverInfo = { name: 'bench-hop', version: '1.0.0' };
      answer({
        jsonrpc: '2.0',
        id: message.id,
        result: { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo },
      });
    } else if (message.method === 'tools/list') {
      answer({
        jsonrpc: '2.0',
        id: message.id,
        result: { tools: [{ name: 'echo', inputSchema: { type: 'object' } }] },
      });
    } else {
      answer({ jsonrpc: '2.0', id: message.id, result: { content: [{ type: 'text', text: 'ping' }] } });
    }
  },
  malformed: () => undefined,
  closed: () => undefined,
});
const config = resolveConfig({ upstream: { command: 'never-run' } });
const { bridge, session } = bridgeSession(
  upstream.a,
  {
    id: 'bench-hop',
    config,
    policy: new Policy(config),
    store: new MemoryTaskStore({ maxTasks: 100, maxResultBytes: 1_000_000 }),
    logger: pino({ level: 'silent' }),
  },
  { upstreamGone: () => undefined, closed: () => undefined },
);

const meta = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'taskgate-bench-modern', version: '1' },
};
let nextId = 1;
const call = async () => {
  const request = {
    jsonrpc: '2.0',
    id: nextId++,
    method: 'tools/call',
    params: { name: 'echo', arguments: { text: 'ping' }, _meta: meta },
  };
  const answered = await bridge.handle({
    request,
    caller: 'address:127.0.0.1',
    paramHeaders: new Map(),
    signal: giveUp(),
    notify: () => undefined,
  });
  if (answered?.response?.result?.resultType !== 'complete')
    throw new Error(`unexpected: ${JSON.stringify(answered)}`);
};
/** @param {number} count */
async function run(count) {
  await pipelined(count, inFlight, call);
}

await run(Math.min(COUNT, 5000));
const cpu = [];
const rate = [];
for (let batch = 0; batch < 5; batch++) {
  const started = performance.now();
  const before = process.cpuUsage();
  await run(COUNT);
  const used = process.cpuUsage(before);
  cpu.push((used.user + used.system) / COUNT);
  rate.push(COUNT / ((performance.now() - started) / 1000));
}
await session.close();
process.stdout.write(
  `${JSON.stringify({ dist: values.dist ?? 'dist', count: COUNT, inFlight, cpuUsPerCall: Number(median(cpu).toFixed(2)), cpuUsRange: [Math.min(...cpu), Math.max(...cpu)].map((us) => Number(us.toFixed(2))), callsPerSecond: Math.round(median(rate)) })}\n`,
);

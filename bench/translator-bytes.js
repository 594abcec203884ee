// @ts-check
/**
 * What one big answer of a 2026-07-28 server costs taskgate on its way to a 2025 client (issue 33), in
 * this process: a Session with a ModernUpstreamTranslator in front of a server over in-memory pipes (as
 * test/unit/modern-answer-bytes.test.ts), the server's complete answers of SIZE bytes written in 64 KiB
 * reads, one call at a time. Per answer: minor page faults and CPU time (load-independent and not,
 * respectively). Under `valgrind --tool=callgrind`, run it with two --answers counts: the difference of
 * the instruction totals over that of the counts is the instructions per answer.
 *
 *   npm run build && node bench/translator-bytes.js [--dist DIR] [--answers N] [--size BYTES] [--warm N]
 */
import { resolve } from 'node:path';
import { PassThrough } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    dist: { type: 'string', default: new URL('../dist/', import.meta.url).pathname },
    answers: { type: 'string', default: '20' },
    size: { type: 'string', default: String(4 * 1024 * 1024) },
    warm: { type: 'string', default: '3' },
  },
});
const dist = (/** @type {string} */ path) => new URL(path, pathToFileURL(`${resolve(values.dist)}/`)).href;
const { resolveConfig } = await import(dist('config/load.js'));
const { Policy } = await import(dist('config/policy.js'));
const { Session } = await import(dist('session/session.js'));
const { MemoryTaskStore } = await import(dist('tasks/memory-store.js'));
const { LineChannel } = await import(dist('transport/line-channel.js'));
const { ModernUpstreamTranslator } = await import(dist('modern/upstream-translator.js'));
const { pino } = await import('pino');

const SIZE = Number(values.size);
const LIMIT = 2 * SIZE + 1024 * 1024;
const CHUNK = 64 * 1024;
const logger = pino({ level: 'silent' });
const config = resolveConfig({});
const fromClient = new PassThrough();
const toClient = new PassThrough();
const fromServer = new PassThrough();
const toServer = new PassThrough();
const store = new MemoryTaskStore({ maxTasks: 10, maxResultBytes: 1024 });
const translator = new ModernUpstreamTranslator(
  new LineChannel(fromServer, toServer, LIMIT, 'the upstream server'),
  { capabilities: { tools: {} }, _meta: {} },
  '2026-07-28',
  logger,
);
const session = new Session(
  new LineChannel(fromClient, toClient, LIMIT, 'the client'),
  translator,
  { id: 'bench', config, policy: new Policy(config), store, logger },
  { upstreamGone: () => undefined, closed: () => undefined },
);
session.start();

// The answer's bytes after its id, made once; each answer is written as views of them.
const text = 'x'.repeat(SIZE - 120);
const tail = Buffer.from(
  `,"result":{"content":[{"type":"text","text":"${text}"}],"resultType":"complete"}}\n`,
);
let pendingRequest = '';
toServer.on('data', (/** @type {Buffer} */ chunk) => {
  pendingRequest += chunk.toString();
  let nl;
  while ((nl = pendingRequest.indexOf('\n')) !== -1) {
    const message = JSON.parse(pendingRequest.slice(0, nl));
    pendingRequest = pendingRequest.slice(nl + 1);
    if (message.method !== 'tools/call') {
      fromServer.write(`${JSON.stringify({ jsonrpc: '2.0', id: message.id, result: { tools: [] } })}\n`);
      continue;
    }
    fromServer.write(Buffer.from(`{"jsonrpc":"2.0","id":${JSON.stringify(message.id)}`));
    for (let at = 0; at < tail.length; at += CHUNK) fromServer.write(tail.subarray(at, at + CHUNK));
  }
});

// The client counts lines, never joins them.
/** @type {(() => void) | undefined} */
let onLine;
toClient.on('data', (/** @type {Buffer} */ chunk) => {
  for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, at + 1)) onLine?.();
});
const line = (/** @type {string} */ sent) =>
  new Promise((resolve) => {
    onLine = () => resolve(undefined);
    fromClient.write(`${sent}\n`);
  });

await line(
  JSON.stringify({
    jsonrpc: '2.0',
    id: 0,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
  }),
);
fromClient.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
let id = 1;
const call = () =>
  line(
    JSON.stringify({
      jsonrpc: '2.0',
      id: id++,
      method: 'tools/call',
      params: { name: 'big', arguments: {} },
    }),
  );

for (let i = 0; i < Number(values.warm); i++) await call();
const answers = Number(values.answers);
const before = process.resourceUsage();
for (let i = 0; i < answers; i++) await call();
const after = process.resourceUsage();
const cpuMs = (after.userCPUTime + after.systemCPUTime - before.userCPUTime - before.systemCPUTime) / 1000;
process.stdout.write(
  `${JSON.stringify({
    dist: values.dist,
    size: SIZE,
    answers,
    minorFaultsPerAnswer: (after.minorPageFault - before.minorPageFault) / answers,
    cpuMsPerAnswer: cpuMs / answers,
    maxRssMiB: Math.round(after.maxRSS / 1024),
  })}\n`,
);
await session.close();
await store.close();

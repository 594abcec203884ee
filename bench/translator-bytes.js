// @ts-check
/**
 * What one big message costs taskgate (issue 33), in this process: a Session in front of a server over
 * in-memory pipes (as test/unit/modern-answer-bytes.test.ts), with a ModernUpstreamTranslator between them
 * for a 2026-07-28 server (`--server 2026`, the default) or none for a 2025 one (`--server 2025`); the big
 * message of SIZE bytes written in 64 KiB reads, one at a time. `--kind` says which message is big:
 *   answer          the server's answer to the client's tools/call (the default);
 *   notification    a notifications/message the server writes before its small answer;
 *   server-request  a sampling/createMessage the server writes before its small answer (left unanswered);
 *   client-call     the client's tools/call (a big argument), answered small;
 *   task-result     the server's answer to a task-augmented tools/call, fetched with tasks/result at once
 *                   (`--store redis` keeps the task in Redis at REDIS_URL or 127.0.0.1:6379, else memory).
 * Per message: minor page faults and CPU time (load-independent and not, respectively). Under
 * `valgrind --tool=callgrind`, run it with two --answers counts: the difference of the instruction totals
 * over that of the counts is the instructions per message. Nobody in the harness joins or parses a big
 * line: the client and the server count lines and read a request's id off its first bytes.
 *
 *   npm run build && node bench/translator-bytes.js [--dist DIR] [--server 2026|2025]
 *     [--kind answer|notification|server-request|client-call|task-result] [--answers N] [--size BYTES]
 *     [--warm N] [--store memory|redis]
 */
import { resolve } from 'node:path';
import { PassThrough } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    dist: { type: 'string', default: new URL('../dist/', import.meta.url).pathname },
    server: { type: 'string', default: '2026' },
    kind: { type: 'string', default: 'answer' },
    answers: { type: 'string', default: '20' },
    size: { type: 'string', default: String(4 * 1024 * 1024) },
    warm: { type: 'string', default: '3' },
    store: { type: 'string', default: 'memory' },
  },
});
const KINDS = ['answer', 'notification', 'server-request', 'client-call', 'task-result'];
if (!KINDS.includes(values.kind) || !['2025', '2026'].includes(values.server)) {
  throw new Error(`--kind is one of ${KINDS.join(', ')}; --server 2025 or 2026`);
}
const modern = values.server === '2026';
const dist = (/** @type {string} */ path) => new URL(path, pathToFileURL(`${resolve(values.dist)}/`)).href;
const { resolveConfig } = await import(dist('config/load.js'));
const { Policy } = await import(dist('config/policy.js'));
const { Session } = await import(dist('session/session.js'));
const { MemoryTaskStore } = await import(dist('tasks/memory-store.js'));
const { RedisTaskStore } = await import(dist('tasks/redis-store.js'));
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
const store =
  values.store === 'redis'
    ? new RedisTaskStore({
        url: process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379',
        keyPrefix: `bench-${process.pid}:`,
        cursorSecret: 'bench-translator-bytes-cursor-secret',
        maxTasks: 10,
        maxResultBytes: 4 * LIMIT,
        // Slow under valgrind.
        connectTimeoutMs: 60_000,
      })
    : new MemoryTaskStore({ maxTasks: 10, maxResultBytes: 4 * LIMIT });
const serverChannel = new LineChannel(fromServer, toServer, LIMIT, 'the upstream server');
const session = new Session(
  new LineChannel(fromClient, toClient, LIMIT, 'the client'),
  modern
    ? new ModernUpstreamTranslator(
        serverChannel,
        { capabilities: { tools: {} }, _meta: {} },
        '2026-07-28',
        logger,
      )
    : serverChannel,
  { id: 'bench', config, policy: new Policy(config), store, logger },
  { upstreamGone: () => undefined, closed: () => undefined },
);
if (values.store === 'redis') await store.ready();
session.start();

// The big text, made once; each big message is written as views of it.
const text = Buffer.from('x'.repeat(SIZE - 120));
const complete = modern ? ',"resultType":"complete"' : '';
/** Writes `head`, the big text, `tail` in 64 KiB reads. */
function writeBig(/** @type {PassThrough} */ stream, /** @type {string} */ head, /** @type {string} */ tail) {
  stream.write(Buffer.from(head));
  for (let at = 0; at < text.length; at += CHUNK) stream.write(text.subarray(at, at + CHUNK));
  stream.write(Buffer.from(`${tail}\n`));
}
const smallAnswer = (/** @type {unknown} */ id) =>
  `${JSON.stringify({ jsonrpc: '2.0', id, result: { content: [], ...(modern && { resultType: 'complete' }) } })}\n`;

// The server: each line's id and method read off its first bytes (a big one is the client's call).
/** @type {Buffer[]} */
let pending = [];
toServer.on('data', (/** @type {Buffer} */ chunk) => {
  let from = 0;
  for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, from)) {
    pending.push(chunk.subarray(from, nl));
    from = nl + 1;
    const first = pending[0];
    const head = (first !== undefined && first.length >= 200 ? first : Buffer.concat(pending)).toString(
      'utf8',
      0,
      200,
    );
    pending = [];
    serve(/"method":"([^"]+)"/.exec(head)?.[1], JSON.parse(/"id":("[^"]*"|\d+)/.exec(head)?.[1] ?? 'null'));
  }
  if (from < chunk.length) pending.push(chunk.subarray(from));
});
function serve(/** @type {string | undefined} */ method, /** @type {unknown} */ id) {
  if (id === null) return;
  if (method !== 'tools/call') {
    const result = method === 'initialize' ? { capabilities: { tools: {}, logging: {} } } : { tools: [] };
    return void fromServer.write(`${JSON.stringify({ jsonrpc: '2.0', id, result })}\n`);
  }
  if (values.kind === 'answer' || values.kind === 'task-result') {
    return writeBig(
      fromServer,
      `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"content":[{"type":"text","text":"`,
      `"}]${complete}}}`,
    );
  }
  if (values.kind === 'notification') {
    writeBig(
      fromServer,
      '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"',
      '"}}',
    );
  } else if (values.kind === 'server-request') {
    writeBig(
      fromServer,
      `{"jsonrpc":"2.0","id":"s${String(id)}","method":"sampling/createMessage","params":{"maxTokens":9,"messages":[{"role":"user","content":{"type":"text","text":"`,
      '"}}]}}',
    );
  }
  fromServer.write(smallAnswer(id));
}

// The client counts lines, never joins them; it reads a line's first bytes only.
let lines = 0;
/** @type {((head: string) => void) | undefined} */
let onLine;
/** @type {Buffer[]} */
let clientPending = [];
toClient.on('data', (/** @type {Buffer} */ chunk) => {
  let from = 0;
  for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, from)) {
    clientPending.push(chunk.subarray(from, nl));
    from = nl + 1;
    const first = clientPending[0];
    const head = (first !== undefined && first.length >= 200 ? first : Buffer.concat(clientPending)).toString(
      'utf8',
      0,
      200,
    );
    clientPending = [];
    lines++;
    onLine?.(head);
  }
  if (from < chunk.length) clientPending.push(chunk.subarray(from));
});
/** Settles with the first bytes of the answer to `answered`. */
const answerTo = (/** @type {number} */ answered) =>
  /** @type {Promise<string>} */ (
    new Promise((resolve) => {
      onLine = (head) => head.startsWith(`{"jsonrpc":"2.0","id":${answered},`) && resolve(head);
    })
  );
/** Settles once `count` more lines came to the client. */
const linesCame = (/** @type {number} */ count) =>
  new Promise((resolve) => {
    const until = lines + count;
    onLine = () => lines >= until && resolve(undefined);
  });

const initialized = linesCame(1);
fromClient.write(
  `${JSON.stringify({
    jsonrpc: '2.0',
    id: 0,
    method: 'initialize',
    params: {
      protocolVersion: '2025-11-25',
      capabilities: { sampling: {} },
      clientInfo: { name: 'bench', version: '1' },
    },
  })}\n`,
);
await initialized;
fromClient.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
let id = 1;
/** A task-augmented call, and tasks/result as soon as its task is made. */
async function taskCall() {
  const callId = id++;
  const created = answerTo(callId);
  fromClient.write(
    `{"jsonrpc":"2.0","id":${callId},"method":"tools/call","params":{"name":"big","arguments":{},"task":{}}}\n`,
  );
  const taskId = /"taskId":"([^"]+)"/.exec(await created)?.[1];
  if (taskId === undefined) throw new Error(`no task was made: ${await created}`);
  const resultId = id++;
  const answered = answerTo(resultId);
  fromClient.write(
    `{"jsonrpc":"2.0","id":${resultId},"method":"tasks/result","params":{"taskId":"${taskId}"}}\n`,
  );
  await answered;
}
function call() {
  if (values.kind === 'task-result') return taskCall();
  const came = linesCame(values.kind === 'notification' || values.kind === 'server-request' ? 2 : 1);
  const head = `{"jsonrpc":"2.0","id":${id++},"method":"tools/call","params":{"name":"big","arguments":{`;
  if (values.kind === 'client-call') writeBig(fromClient, `${head}"text":"`, '"}}}');
  else fromClient.write(`${head}}}}\n`);
  return came;
}

for (let i = 0; i < Number(values.warm); i++) await call();
const answers = Number(values.answers);
const before = process.resourceUsage();
for (let i = 0; i < answers; i++) await call();
const after = process.resourceUsage();
const cpuMs = (after.userCPUTime + after.systemCPUTime - before.userCPUTime - before.systemCPUTime) / 1000;
process.stdout.write(
  `${JSON.stringify({
    dist: values.dist,
    server: values.server,
    kind: values.kind,
    ...(values.kind === 'task-result' && { store: values.store }),
    size: SIZE,
    answers,
    minorFaultsPerAnswer: (after.minorPageFault - before.minorPageFault) / answers,
    cpuMsPerAnswer: cpuMs / answers,
    maxRssMiB: Math.round(after.maxRSS / 1024),
  })}\n`,
);
await session.close();
await store.close();

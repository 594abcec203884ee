// @ts-check
/**
 * Why a client that opens one connection per request in flight sees connect timeouts (bench/PROFILING.md,
 * "Shared upstreams"): N connections opened at once to a node:http server listening with a given backlog
 * (in a process of its own, answering each request after `busyMs` of work). Counts the connections that
 * took over 900 ms (a SYN retransmitted: the kernel dropped it while the accept queue was full), those not
 * connected after 10 s (undici's default connect timeout), and TcpExt ListenOverflows meanwhile.
 *
 *   node bench/lib/backlog.js [connections=10000] [busyMs=1] [backlog ...=511 4096]
 *
 * Every process is on 127.0.0.1 and stopped at the end; the wait for the connections is bounded (10 s).
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { connect } from 'node:net';
import { pathToFileURL } from 'node:url';
import { listenCounters } from './procs.js';

const CONNECT_TIMEOUT_MS = 10_000;

/** The server side (argv: --serve BACKLOG BUSY_MS): prints its port, answers after BUSY_MS of work. */
function serve(/** @type {number} */ backlog, /** @type {number} */ busyMs) {
  const server = createServer((_req, res) => {
    const until = performance.now() + busyMs;
    while (performance.now() < until);
    res.end('ok');
  });
  server.listen({ port: 0, host: '127.0.0.1', backlog }, () => {
    const address = server.address();
    process.stdout.write(`${typeof address === 'object' && address ? address.port : 0}\n`);
  });
}

/** Starts the server with `backlog`; resolves with its port and a stop(). */
function startServer(/** @type {number} */ backlog, /** @type {number} */ busyMs) {
  const child = spawn(
    process.execPath,
    [new URL(import.meta.url).pathname, '--serve', String(backlog), String(busyMs)],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  return new Promise((resolve, reject) => {
    child.stdout
      .setEncoding('utf8')
      .once('data', (/** @type {string} */ line) =>
        resolve({ port: Number(line.trim()), stop: () => child.kill() }),
      );
    child.once('exit', (code) => reject(new Error(`server exited (${code})`)));
  });
}

/** Opens `n` connections at once, each sending one request; counts slow and failed connects. */
async function storm(/** @type {number} */ port, /** @type {number} */ n) {
  const before = listenCounters();
  let slow = 0;
  let failed = 0;
  let done = 0;
  const start = performance.now();
  /** @type {import('node:net').Socket[]} */
  const sockets = [];
  await new Promise((resolve) => {
    const settle = () => ++done === n && resolve(undefined);
    for (let i = 0; i < n; i++) {
      const began = performance.now();
      const socket = connect(port, '127.0.0.1');
      sockets.push(socket);
      const timer = setTimeout(() => {
        failed++;
        socket.destroy();
        settle();
      }, CONNECT_TIMEOUT_MS);
      socket.once('connect', () => {
        clearTimeout(timer);
        if (performance.now() - began > 900) slow++;
        socket.write('GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
        settle();
      });
      socket.once('error', () => {
        clearTimeout(timer);
        failed++;
        settle();
      });
    }
  });
  const seconds = (performance.now() - start) / 1000;
  for (const socket of sockets) socket.destroy();
  const after = listenCounters();
  return {
    connections: n,
    slowConnects: slow,
    notConnectedIn10s: failed,
    seconds: Number(seconds.toFixed(2)),
    listenOverflows: after.listenOverflows - before.listenOverflows,
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const args = process.argv.slice(2);
  if (args[0] === '--serve') serve(Number(args[1]), Number(args[2]));
  else {
    const [n = 10_000, busyMs = 1, ...backlogs] = args.map(Number);
    for (const backlog of backlogs.length > 0 ? backlogs : [511, 4096]) {
      const server = /** @type {{ port: number, stop: () => void }} */ (await startServer(backlog, busyMs));
      try {
        process.stdout.write(`${JSON.stringify({ backlog, busyMs, ...(await storm(server.port, n)) })}\n`);
      } finally {
        server.stop();
      }
    }
  }
}

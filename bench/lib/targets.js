// @ts-check
/**
 * The targets the bench starts, each reached by an SDK Client: the fixture server directly (stdio and
 * Streamable HTTP), a raw byte relay, taskgate in its three shapes, and the peers supergateway and
 * mcp-proxy (installed in bench/node_modules) in front of the same stdio fixture.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Client, StdioClientTransport, StreamableHTTPClientTransport } from '../sdk.js';
import { Proc, freePort, startWithUrl, waitForPort } from './procs.js';

/** @param {string} path relative to the repository root */
export const fromRoot = (path) => fileURLToPath(new URL(`../../${path}`, import.meta.url));

export const NODE = process.execPath;
/** The shared 2025 fixture server (test/fixtures): the server behind every target here. */
export const FIXTURE = fromRoot('test/fixtures/legacy-server.js');
/** The bench's own 2025 stdio server, for the workloads FIXTURE cannot serve (sleep_ms, sleep_until). */
export const BENCH_FIXTURE = fromRoot('bench/fixture.js');
export const TASKGATE = fromRoot('dist/cli.js');
export const TASKGATE_CONFIG = fromRoot('bench/taskgate.yaml');
export const TASKGATE_FLAGS = ['--config', TASKGATE_CONFIG, '--log-level', 'warn'];
/** Node flags of the taskgate targets: BENCH_CPU_PROF=DIR profiles them (node --cpu-prof) into DIR. */
const PROFILE = process.env['BENCH_CPU_PROF'];
/** What the taskgate targets run: node's flags and a build's cli.js. @param {string} cli */
const gate = (cli) => [...(PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE}`] : []), cli];
export const SUPERGATEWAY = fromRoot('bench/node_modules/supergateway/dist/index.js');
export const MCP_PROXY = fromRoot('bench/node_modules/mcp-proxy/dist/bin/mcp-proxy.mjs');

/**
 * @typedef {object} Running
 * @property {Client} client
 * @property {number} pid the process whose CPU time is the target's server-side cost (the proxy, or the
 *   fixture itself for a direct target)
 * @property {() => Promise<void>} stop
 *
 * @typedef {object} Target
 * @property {string} name
 * @property {'stdio' | 'http'} transport the direct baseline it is compared with
 * @property {'direct' | 'relay' | 'taskgate' | 'peer'} kind
 * @property {boolean} tasks whether it serves task-augmented calls (taskgate)
 * @property {() => string | undefined} [unavailable] why it cannot run here, if it cannot
 * @property {() => Promise<Running>} start
 */

const newClient = () =>
  new Client({ name: 'taskgate-bench', version: '1' }, { capabilities: { tasks: { requests: {} } } });

/** @param {string[]} argv @param {Record<string, string>} [env] added to this process's own */
export async function overStdio(argv, env) {
  const [command, ...args] = argv;
  const transport = new StdioClientTransport({
    command: /** @type {string} */ (command),
    args,
    stderr: 'inherit',
    ...(env === undefined ? {} : { env: { .../** @type {Record<string, string>} */ (process.env), ...env } }),
  });
  const client = newClient();
  await client.connect(transport);
  const pid = transport.pid;
  if (pid === null) throw new Error(`${argv.join(' ')}: no pid`);
  return { client, pid, stop: () => client.close() };
}

/**
 * The SDK's HTTP client transport passes one AbortSignal to every fetch, and undici lets go of each
 * request's abort listener only when that request is garbage-collected: a client that makes thousands of
 * calls piles up thousands of listeners (MaxListenersExceededWarning), and adding one to a signal that
 * already holds n costs O(n). That is the load generator's cost, not the target's, so POSTs (which end on
 * their own) go without the signal; the GET stream keeps it, so that close() still ends it.
 * @type {typeof fetch}
 */
export const fetchWithoutPostSignal = (input, init) =>
  fetch(input, init?.method === 'POST' ? { ...init, signal: null } : init);

/** @param {string} url @param {Proc[]} procs stopped in reverse order @param {Proc} measured */
async function overHttp(url, procs, measured) {
  const client = newClient();
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { fetch: fetchWithoutPostSignal }));
  return {
    client,
    pid: measured.pid,
    stop: async () => {
      await client.close();
      for (const proc of [...procs].reverse()) await proc.stop();
    },
  };
}

/** The fixture over Streamable HTTP on a port it picks; resolves once it listens. */
const startHttpFixture = () =>
  startWithUrl('fixture --http', [NODE, FIXTURE, '--http', '0'], /^listening (http:\/\/\S+)$/);

/**
 * Starts a server on a port chosen here and waits until it accepts connections.
 * @param {string} label @param {(port: number) => string[]} argv
 */
export async function startOnPort(label, argv) {
  const port = await freePort();
  const proc = new Proc(label, argv(port));
  try {
    await waitForPort(port, 30_000, () => proc.exited);
  } catch (error) {
    await proc.stop();
    throw error;
  }
  return { proc, port, url: `http://127.0.0.1:${port}/mcp` };
}

/**
 * supergateway stdio→Streamable HTTP in front of `server` (a command line), on 127.0.0.1 (bench/loopback.js:
 * it has no option for that), logging off (it logs every message otherwise). `flags`: `--stateful` for a
 * child per session, as a client that keeps its session expects; none for a child per request.
 * @param {string[]} server @param {string[]} flags
 */
export const startSupergateway = (server, flags) =>
  startOnPort(['supergateway', ...flags].join(' '), (port) => [
    NODE,
    '--import',
    pathToFileURL(fromRoot('bench/loopback.js')).href,
    SUPERGATEWAY,
    '--stdio',
    server.join(' '),
    '--outputTransport',
    'streamableHttp',
    ...flags,
    '--port',
    String(port),
    '--logLevel',
    'none',
  ]);

/** mcp-proxy in front of `server` (a command line), on 127.0.0.1, with its defaults. @param {string[]} server */
export const startMcpProxy = (server) =>
  startOnPort('mcp-proxy', (port) => [
    NODE,
    MCP_PROXY,
    '--host',
    '127.0.0.1',
    '--port',
    String(port),
    '--',
    ...server,
  ]);

/** @param {string} path */
const missing = (path) => () =>
  existsSync(path) ? undefined : `${path} is not installed (npm ci --prefix bench)`;

/**
 * Every target, the taskgate ones running `cli` (this checkout's build unless told; bench/ab.js passes
 * another commit's) with the same flags and config, against the same fixture.
 * @param {string} cli
 * @returns {Target[]}
 */
export const targetsOf = (cli) => {
  const GATE = gate(cli);
  /** taskgate on a free port, its upstream given by `upstream` (the command after `--`, or a URL). */
  const listening = (/** @type {string} */ label, /** @type {string[]} */ upstream) =>
    startOnPort(label, (port) => [
      NODE,
      ...GATE,
      ...TASKGATE_FLAGS,
      '--listen',
      `127.0.0.1:${port}`,
      ...upstream,
    ]);
  return [
    {
      name: 'direct stdio',
      transport: 'stdio',
      kind: 'direct',
      tasks: false,
      start: () => overStdio([NODE, FIXTURE]),
    },
    {
      name: 'raw relay stdio→stdio',
      transport: 'stdio',
      kind: 'relay',
      tasks: false,
      start: () => overStdio([NODE, fromRoot('bench/relay.js'), '--', NODE, FIXTURE]),
    },
    {
      name: 'taskgate stdio→stdio',
      transport: 'stdio',
      kind: 'taskgate',
      tasks: true,
      start: () => overStdio([NODE, ...GATE, ...TASKGATE_FLAGS, '--', NODE, FIXTURE]),
    },
    {
      name: 'direct HTTP',
      transport: 'http',
      kind: 'direct',
      tasks: false,
      start: async () => {
        const { proc, url } = await startHttpFixture();
        return overHttp(url, [proc], proc);
      },
    },
    {
      name: 'taskgate HTTP→stdio',
      transport: 'http',
      kind: 'taskgate',
      tasks: true,
      start: async () => {
        const { proc, url } = await listening('taskgate HTTP→stdio', ['--', NODE, FIXTURE]);
        return overHttp(url, [proc], proc);
      },
    },
    {
      name: 'taskgate sidecar HTTP→HTTP',
      transport: 'http',
      kind: 'taskgate',
      tasks: true,
      start: async () => {
        const upstream = await startHttpFixture();
        const sidecar = await listening('taskgate sidecar', ['--upstream-url', upstream.url]).catch(
          async (error) => {
            await upstream.proc.stop();
            throw error;
          },
        );
        return overHttp(sidecar.url, [upstream.proc, sidecar.proc], sidecar.proc);
      },
    },
    {
      name: 'supergateway',
      transport: 'http',
      kind: 'peer',
      tasks: false,
      unavailable: missing(SUPERGATEWAY),
      start: async () => {
        // Stateful: one child per session, as a client that keeps its session expects; stateless spawns a
        // child per request. --logLevel none: it logs every message otherwise. loopback.js: see there.
        const { proc, url } = await startSupergateway([NODE, FIXTURE], ['--stateful']);
        return overHttp(url, [proc], proc);
      },
    },
    {
      name: 'mcp-proxy',
      transport: 'http',
      kind: 'peer',
      tasks: false,
      unavailable: missing(MCP_PROXY),
      start: async () => {
        const { proc, url } = await startMcpProxy([NODE, FIXTURE]);
        return overHttp(url, [proc], proc);
      },
    },
  ];
};

export const TARGETS = targetsOf(TASKGATE);

// @ts-check
/**
 * demo-client: watch taskgate turn slow calls to a server without tasks into MCP tasks.
 *
 * It starts taskgate (the built dist/cli.js) on its embedded defaults, so taskgate serves the bundled
 * example server (examples/legacy-server.js), which knows nothing about tasks. Then, as an ordinary MCP
 * client written with the SDK, it starts a few slow `slow-report` calls as tasks, shows them progressing,
 * cancels one, and prints the results.
 *
 * Run it with `npm run demo` (which builds first), or `node examples/demo-client.js` after a build.
 * On a terminal each task gets a live progress line; otherwise (a pipe, a CI log) every change is a
 * plain line of its own. taskgate's logs are kept out of the way and shown only if something fails.
 */
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  TaskStatusNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';

const TASKGATE = fileURLToPath(new URL('../dist/cli.js', import.meta.url));

/** The slow calls to make; the one marked `cancel` is cancelled once it is a quarter done. */
const JOBS = [
  { topic: 'the tides', seconds: 2, cancel: false },
  { topic: 'honey bees', seconds: 4, cancel: true },
  { topic: 'volcanoes', seconds: 3, cancel: false },
];

/**
 * @typedef {object} Row
 * @property {string} topic
 * @property {string} status
 * @property {number} progress
 * @property {number} total
 * @property {string} [taskId]
 * @property {Promise<{ status: string }>} [cancelled] the answer to tasks/cancel, once asked
 */

/** Task lines: redrawn in place on a terminal, one plain line per change elsewhere. */
class Board {
  /** @param {boolean} live */
  constructor(live) {
    this.live = live;
    /** @type {Row[]} */
    this.rows = [];
    this.drawn = 0;
  }

  /** @param {Row} row */
  add(row) {
    this.rows.push(row);
    if (this.live) this.redraw();
  }

  /** @param {Row} row */
  changed(row) {
    if (!this.live) {
      process.stdout.write(`${this.line(row)}\n`);
      return;
    }
    this.redraw();
  }

  /** A line of its own, above the task lines. @param {string} text */
  note(text) {
    if (!this.live) {
      process.stdout.write(`${text}\n`);
      return;
    }
    this.erase();
    process.stdout.write(`${text}\n`);
    this.redraw();
  }

  /** Leaves the task lines as they stand: what follows is printed below them. */
  settle() {
    this.drawn = 0;
    this.live = false;
  }

  erase() {
    if (this.drawn > 0) process.stdout.write(`\x1b[${this.drawn}A\x1b[J`);
    this.drawn = 0;
  }

  redraw() {
    this.erase();
    for (const row of this.rows) process.stdout.write(`${this.line(row)}\n`);
    this.drawn = this.rows.length;
  }

  /** @param {Row} row */
  line(row) {
    const name = `[${row.topic}]`.padEnd(14);
    const done = row.total > 0 ? row.progress / row.total : 0;
    if (!this.live) {
      const steps = row.total > 0 ? ` step ${row.progress}/${row.total}` : '';
      return `${name} ${row.status}${steps}`;
    }
    const width = 24;
    const filled = Math.round(done * width);
    const bar = '█'.repeat(filled) + '░'.repeat(width - filled);
    return `${name} ${bar} ${String(Math.round(done * 100)).padStart(3)}%  ${row.status}`;
  }
}

const board = new Board(process.stdout.isTTY === true);
const transport = new StdioClientTransport({
  command: process.execPath,
  args: [TASKGATE],
  stderr: 'pipe',
});
let taskgateLog = '';
transport.stderr?.on('data', (/** @type {Buffer} */ chunk) => (taskgateLog += chunk.toString()));
const client = new Client(
  { name: 'taskgate-demo', version: '1.0.0' },
  { capabilities: { tasks: { cancel: {}, requests: {} } } },
);

/** @type {Map<string, Row>} task id → its row */
const byTask = new Map();

async function main() {
  await client.connect(transport);
  const server = client.getServerVersion()?.name ?? 'the server';
  const tasks = client.getServerCapabilities()?.tasks;
  board.note(
    `taskgate is in front of ${server}, a server without tasks; it offers tasks: ${tasks ? 'yes' : 'no'}`,
  );
  const { tools } = await client.listTools();
  board.note(
    `tools: ${tools.map((tool) => `${tool.name} (taskSupport ${tool.execution?.taskSupport ?? 'none'})`).join(', ')}`,
  );

  client.setNotificationHandler(TaskStatusNotificationSchema, ({ params }) => {
    const row = byTask.get(params.taskId);
    if (row === undefined || row.status === params.status) return;
    row.status = params.status;
    board.changed(row);
  });

  board.note(`starting ${JOBS.length} slow-report calls as tasks`);
  const started = await Promise.all(JOBS.map((job) => start(job)));

  /** @type {string[]} */
  const results = [];
  for (const { job, row } of started) {
    if (row.taskId === undefined) continue;
    if (row.cancelled) {
      // A cancelled task has no result: its status says what became of it.
      results.push(`${job.topic}: ${(await row.cancelled).status}`);
      continue;
    }
    const result = await client.experimental.tasks.getTaskResult(row.taskId, CallToolResultSchema);
    const text = result.content.map((part) => (part.type === 'text' ? part.text : `[${part.type}]`));
    results.push(`${job.topic}: ${(await client.experimental.tasks.getTask(row.taskId)).status}`);
    results.push(
      ...text
        .join('\n')
        .split('\n')
        .map((line) => `    ${line}`),
    );
  }
  board.settle();
  board.note('results:');
  for (const line of results) board.note(`  ${line}`);
  board.note('done');
}

/**
 * Starts one slow-report call as a task; progress comes back tagged with it.
 * @param {(typeof JOBS)[number]} job
 */
async function start(job) {
  /** @type {Row} */
  const row = { topic: job.topic, status: 'starting', progress: 0, total: 0 };
  board.add(row);
  const { task } = await client.request(
    {
      method: 'tools/call',
      params: { name: 'slow-report', arguments: { topic: job.topic, seconds: job.seconds }, task: {} },
    },
    CreateTaskResultSchema,
    {
      onprogress: ({ progress, total }) => {
        if (row.status !== 'working') return;
        row.progress = progress;
        row.total = total ?? 0;
        board.changed(row);
        if (job.cancel && !row.cancelled && row.total > 0 && progress >= row.total / 4) {
          board.note(`cancelling the task for "${job.topic}"`);
          row.cancelled = client.experimental.tasks.cancelTask(String(row.taskId));
        }
      },
    },
  );
  row.taskId = task.taskId;
  byTask.set(task.taskId, row);
  row.status = task.status;
  board.note(`"${job.topic}" is task ${task.taskId}: ${task.status}, answered at once`);
  board.changed(row);
  return { job, row };
}

main().then(
  async () => {
    await client.close();
    process.exit(0);
  },
  async (/** @type {unknown} */ error) => {
    process.stderr.write(`demo failed: ${error instanceof Error ? error.message : String(error)}\n`);
    if (taskgateLog !== '') process.stderr.write(`taskgate's log:\n${taskgateLog}`);
    await client.close();
    process.exit(1);
  },
);

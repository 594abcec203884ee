/**
 * Load (issue 8): 200 concurrent sessions × 50 task-augmented calls through the HTTP front with the memory
 * store. Real peers only: SDK clients over real sockets → the built taskgate → one Streamable HTTP fixture
 * (the sidecar topology: with a stdio upstream taskgate would start one child per session, 200 node
 * processes, too many for a CI machine). Every call's result is checked exactly, every response is counted
 * (none may be lost), and taskgate's resident memory (start, peak, end) is recorded in
 * test-artifacts/load.json and one summary line. Timing and memory are recorded, not asserted: their
 * targets live in bench/.
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, describe, expect, it } from 'vitest';
import { startHttpFixture } from '../helpers/http-fixture.js';
import { Gateway, TASK_AWARE } from '../helpers/taskgate.js';

const SESSIONS = 200;
const CALLS_PER_SESSION = 50;
const CALLS = SESSIONS * CALLS_PER_SESSION;
/**
 * Calls each session keeps in flight (each one: create the task, then wait for its result), all sessions
 * at once: 2 000 calls in flight, as many connections opened together. This load found two faults, both
 * mended: the front's listen backlog (Node's default, 511) overflowed, and pooled upstream connections
 * were reused as the upstream closed them at the end of its keep-alive.
 */
const IN_FLIGHT_PER_SESSION = 10;
/** A response that has not come by then is lost: the request fails with the SDK's timeout, and is counted. */
const REQUEST_TIMEOUT_MS = 120_000;
const ARTIFACTS = fileURLToPath(new URL('../../test-artifacts/', import.meta.url));

/**
 * Per-caller limits (keyed by session here, there being no identity) sized for the load, so that a refusal,
 * which a load test must not confuse with a lost response, cannot come of a change of the HTTP front's
 * defaults (which fit it too: bursts of 1 000 task calls and 2 000 task requests, 1 000 live tasks).
 */
const CONFIG = `limits:
  taskCreationRate: 10000
  taskCreationBurst: ${CALLS_PER_SESSION}
`;

const FLAGS = [
  '--max-sessions',
  String(SESSIONS + 20),
  // The default (10 000 tasks held, live and finished) is exactly this load: room to spare, so that no
  // finished task is evicted before it is read back.
  '--max-tasks',
  String(2 * CALLS),
];

const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
}, 60_000);

/** Resident set of a process now and at its peak (VmHWM), in MiB, from /proc. */
function memoryOf(pid: number): { rssMiB: number; peakMiB: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const mib = (field: string): number => {
    const found = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(status);
    if (!found) throw new Error(`no ${field} in /proc/${pid}/status`);
    return Math.round((Number(found[1]) / 1024) * 10) / 10;
  };
  return { rssMiB: mib('VmRSS'), peakMiB: mib('VmHWM') };
}

/** An error with what the SDK and undici put under it (an HTTP status, "fetch failed" → its cause). */
function explain(error: unknown): string {
  const { code, cause } = error as { code?: unknown; cause?: unknown };
  return `${String(error)}${code === undefined ? '' : ` [code ${String(code)}]`}${cause === undefined ? '' : ` (cause: ${String(cause)})`}`;
}

/** Runs jobs 0 … count-1, at most `width` at a time. */
async function pool(count: number, width: number, job: (index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, count) }, async () => {
      while (next < count) await job(next++);
    }),
  );
}

describe('load through the HTTP front, memory store', () => {
  it(
    `${SESSIONS} concurrent sessions × ${CALLS_PER_SESSION} task-augmented calls: every result correct, none lost`,
    { timeout: 240_000 },
    async () => {
      const fixture = await startHttpFixture('legacy');
      cleanups.push(() => fixture.stop());
      const config = join(mkdtempSync(join(tmpdir(), 'taskgate-load-')), 'config.yaml');
      writeFileSync(config, CONFIG);
      const gateway = await Gateway.start([], ['--upstream-url', fixture.url, '--config', config, ...FLAGS]);
      cleanups.push(() => gateway.stop());
      const pid = gateway.child.pid!;
      const atStart = memoryOf(pid);

      const clients: Client[] = [];
      cleanups.push(() => Promise.all(clients.map((client) => client.close())));
      const connectStarted = performance.now();
      await Promise.all(
        Array.from({ length: SESSIONS }, async (_, session) => {
          const client = new Client({ name: `load-${session}`, version: '1' }, { capabilities: TASK_AWARE });
          await client.connect(new StreamableHTTPClientTransport(gateway.url));
          clients[session] = client;
        }),
      );
      const connectMs = performance.now() - connectStarted;

      const taskIds: string[][] = clients.map(() => []);
      const failures: { session: number; call: number; stage: string; problem: string }[] = [];
      let created = 0;
      let answered = 0;
      let correct = 0;
      const loadStarted = performance.now();
      await Promise.all(
        clients.map((client, session) =>
          pool(CALLS_PER_SESSION, IN_FLIGHT_PER_SESSION, async (call) => {
            const text = `session ${session} call ${call}`;
            let stage = 'tools/call';
            try {
              const { task } = await client.request(
                { method: 'tools/call', params: { name: 'echo', arguments: { text }, task: {} } },
                CreateTaskResultSchema,
                { timeout: REQUEST_TIMEOUT_MS },
              );
              created++;
              taskIds[session]![call] = task.taskId;
              stage = 'tasks/result';
              const result = await client.experimental.tasks.getTaskResult(
                task.taskId,
                CallToolResultSchema,
                {
                  timeout: REQUEST_TIMEOUT_MS,
                },
              );
              answered++;
              const expected = {
                _meta: { 'io.modelcontextprotocol/related-task': { taskId: task.taskId } },
                content: [{ type: 'text', text }],
              };
              if (isDeepStrictEqual(result, expected)) correct++;
              else failures.push({ session, call, stage, problem: `wrong result ${JSON.stringify(result)}` });
            } catch (error) {
              failures.push({ session, call, stage, problem: explain(error) });
            }
          }),
        ),
      );
      const loadMs = performance.now() - loadStarted;

      // A sample read back after the load: the first and the last task of every session.
      const sampled = await Promise.all(
        taskIds.flatMap((ids, session) =>
          [0, CALLS_PER_SESSION - 1]
            .filter((call) => ids[call] !== undefined)
            .map(async (call) => {
              const task = await clients[session]!.experimental.tasks.getTask(ids[call]!, {
                timeout: REQUEST_TIMEOUT_MS,
              });
              return task.status;
            }),
        ),
      );
      const atEnd = memoryOf(pid);

      const figures = {
        sessions: SESSIONS,
        callsPerSession: CALLS_PER_SESSION,
        inFlightPerSession: IN_FLIGHT_PER_SESSION,
        calls: CALLS,
        created,
        answered,
        correct,
        failed: failures.length,
        connectSeconds: Math.round(connectMs) / 1000,
        wallSeconds: Math.round(loadMs) / 1000,
        callsPerSecond: Math.round((CALLS / loadMs) * 1000),
        taskgateRssMiB: { start: atStart.rssMiB, peak: atEnd.peakMiB, end: atEnd.rssMiB },
        node: process.version,
        cpus: cpus().length,
        at: new Date().toISOString(),
      };
      mkdirSync(ARTIFACTS, { recursive: true });
      writeFileSync(`${ARTIFACTS}load.json`, JSON.stringify(figures, null, 2) + '\n');
      console.log(
        `load: ${SESSIONS} sessions × ${CALLS_PER_SESSION} calls (${IN_FLIGHT_PER_SESSION} in flight each) = ` +
          `${CALLS} task-augmented calls, ${correct} correct, ${failures.length} failed, ` +
          `in ${figures.wallSeconds} s (${figures.callsPerSecond} calls/s; sessions connected in ` +
          `${figures.connectSeconds} s); taskgate RSS start ${atStart.rssMiB} MiB, ` +
          `peak ${atEnd.peakMiB} MiB, end ${atEnd.rssMiB} MiB`,
      );

      // Failures by kind (with their count), then the first few with the call they hit.
      const kinds = new Map<string, number>();
      for (const { stage, problem } of failures) {
        const kind = `${stage}: ${problem.replaceAll(/session \d+ call \d+/g, '…')}`;
        kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
      }
      expect(Object.fromEntries(kinds), `${failures.length} of ${CALLS} calls failed`).toEqual({});
      expect(failures.slice(0, 5)).toEqual([]);
      expect({ created, answered, correct }).toEqual({ created: CALLS, answered: CALLS, correct: CALLS });
      expect(new Set(taskIds.flat()).size).toBe(CALLS);
      expect(sampled).toEqual(Array.from({ length: 2 * SESSIONS }, () => 'completed'));
      expect(gateway.child.exitCode).toBeNull();
      // Warnings too: under this load taskgate has nothing to warn about, and each names a failure's cause.
      const complaints = gateway.stderr.split('\n').filter((line) => /"level":(40|50|60)\b/.test(line));
      expect(complaints.slice(0, 5), `${complaints.length} warnings or errors in taskgate's log`).toEqual([]);
    },
  );
});

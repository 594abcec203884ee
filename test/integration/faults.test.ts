/**
 * Faults, on real processes and bounded in time: the upstream killed under load, a client that vanishes
 * mid-`tasks/result`, an upstream that never answers, an upstream that writes garbage to stdout, and a
 * client that never reads its SSE stream. In each: nothing hangs, no task is lost or left `working`.
 */
import { once } from 'node:events';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, describe, expect, it } from 'vitest';
import { sample } from '../helpers/prometheus.js';
import { startHttpFixture } from '../helpers/http-fixture.js';
import { Gateway, RawPeer } from '../helpers/taskgate.js';

const fixture = (name: string): string => fileURLToPath(new URL(`../fixtures/${name}`, import.meta.url));
const SILENT = fixture('silent-server.js');
const GARBAGE = fixture('garbage-server.js');
const FLOOD = fixture('flood-server.js');

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

function track(peer: RawPeer): RawPeer {
  cleanups.push(async () => {
    if (peer.child.exitCode === null && peer.child.signalCode === null) peer.child.kill('SIGKILL');
  });
  return peer;
}

const rssKb = (pid: number): number =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);

/** The peak of a process's RSS, sampled every 50 ms, while `during` runs. */
async function peakRssKb(pid: number, during: () => Promise<void>): Promise<number> {
  let peak = rssKb(pid);
  const sampler = setInterval(() => (peak = Math.max(peak, rssKb(pid))), 50);
  try {
    await during();
  } finally {
    clearInterval(sampler);
  }
  return Math.max(peak, rssKb(pid));
}

/** Resolves once `pattern` shows in what `stderr()` gives, checked as `stream` says more. */
function said(stream: NodeJS.ReadableStream, stderr: () => string, pattern: RegExp): Promise<void> {
  return new Promise((resolve) => {
    const check = (): void => {
      if (pattern.test(stderr())) resolve();
      else stream.once('data', check);
    };
    check();
  });
}

/** Rejects when `promise` has not settled within `ms`. */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** The upstream child's pid, from taskgate's `upstream server started` log line. */
async function upstreamPid(peer: RawPeer): Promise<number> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const found = /"pid":(\d+),"command"[^\n]*upstream server started/.exec(peer.stderr);
    if (found) return Number(found[1]);
    if (Date.now() > deadline) throw new Error(`no "upstream server started" line: ${peer.stderr}`);
    await new Promise((resolve) => peer.child.stderr.once('data', resolve));
  }
}

const isGone = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return false;
  } catch {
    return true;
  }
};

/** Waits, bounded, until a process is gone (it is not our child, so there is no exit event to wait on). */
async function gone(pid: number, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!isGone(pid)) {
    if (Date.now() > deadline) throw new Error(`process ${pid} is still running after ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const call = (id: string, name: string, args: Record<string, unknown>, task?: object) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: args, ...(task && { task }) },
});

async function createTask(peer: RawPeer, id: string, name: string, args: Record<string, unknown>) {
  const response = await peer.response(id);
  const task = (response.result as { task?: { taskId: string; status: string } } | undefined)?.task;
  if (!task)
    throw new Error(
      `${id}: no CreateTaskResult: ${JSON.stringify(response)} (${name} ${JSON.stringify(args)})`,
    );
  return task.taskId;
}

async function taskStatus(peer: RawPeer, taskId: string, id: string) {
  peer.send({ jsonrpc: '2.0', id, method: 'tasks/get', params: { taskId } });
  return (await peer.response(id)).result as { status: string; statusMessage?: string };
}

describe('the upstream is killed while calls are in flight', () => {
  it('answers every pending request and fails every task with the exit, under load', async () => {
    const peer = track(
      await RawPeer.initialized('legacy', ['--log-level', 'info', '--admin-listen', '127.0.0.1:0']),
    );
    const pid = await upstreamPid(peer);
    const TASKS = 20;
    const PLAIN = 10;
    for (let i = 0; i < TASKS; i++) peer.send(call(`t${i}`, 'sleep', { ms: 60_000, label: `t${i}` }, {}));
    for (let i = 0; i < PLAIN; i++) peer.send(call(`p${i}`, 'sleep', { ms: 60_000 }));
    const taskIds = await Promise.all(
      Array.from({ length: TASKS }, (_, i) => createTask(peer, `t${i}`, 'sleep', {})),
    );
    // Half the tasks have a client blocked in tasks/result.
    for (let i = 0; i < TASKS; i += 2) {
      peer.send({ jsonrpc: '2.0', id: `r${i}`, method: 'tasks/result', params: { taskId: taskIds[i] } });
    }
    // Every task is working before the kill.
    for (const [i, taskId] of taskIds.entries()) {
      expect((await taskStatus(peer, taskId, `before${i}`)).status).toBe('working');
    }

    process.kill(pid, 'SIGKILL');

    const pending = [
      ...Array.from({ length: PLAIN }, (_, i) => `p${i}`),
      ...Array.from({ length: TASKS / 2 }, (_, i) => `r${i * 2}`),
    ];
    const answers = await Promise.all(pending.map((id) => peer.response(id, 10_000)));
    for (const answer of answers) {
      expect(answer).toHaveProperty('error');
      expect(String((answer.error as { message: string }).message)).toMatch(/SIGKILL/);
    }
    for (const [i, taskId] of taskIds.entries()) {
      const task = await taskStatus(peer, taskId, `after${i}`);
      expect(task.status).toBe('failed');
      expect(task.statusMessage).toMatch(/SIGKILL/);
    }
    peer.send({ jsonrpc: '2.0', id: 'list', method: 'tasks/list' });
    const list = await peer.response('list');
    const listed = (list.result as { tasks?: { status: string }[] } | undefined)?.tasks ?? [];
    expect(listed.filter((task) => task.status === 'working')).toEqual([]);
    // Nothing is left waiting or live inside taskgate either.
    const metrics = await (await fetch(new URL('/metrics', await peer.adminUrl()))).text();
    expect(sample(metrics, 'taskgate_task_result_waiters')).toBe(0);
    expect(sample(metrics, 'taskgate_store_tasks', { state: 'live' })).toBe(0);
    expect(sample(metrics, 'taskgate_store_tasks', { state: 'finished' })).toBe(TASKS);

    // Exactly one response per request id, and taskgate is still running.
    const ids = peer.messages.items.filter((m) => 'result' in m || 'error' in m).map((m) => String(m.id));
    expect(new Set(ids).size).toBe(ids.length);
    expect(peer.child.exitCode).toBeNull();
    await within(peer.stop(), 10_000, 'taskgate to exit once the client is gone');
  });
});

describe('the client vanishes', () => {
  it('mid-tasks/result: taskgate exits cleanly and the upstream child is gone', async () => {
    const peer = track(await RawPeer.initialized('legacy', ['--log-level', 'info']));
    const pid = await upstreamPid(peer);
    peer.send(call('t', 'sleep', { ms: 60_000 }, {}));
    const taskId = await createTask(peer, 't', 'sleep', {});
    peer.send({ jsonrpc: '2.0', id: 'r', method: 'tasks/result', params: { taskId } });
    expect((await taskStatus(peer, taskId, 'get')).status).toBe('working');

    // Both ends of the pipe go away at once, as when the client process dies.
    peer.child.stdout.destroy();
    peer.child.stdin.destroy();
    const [code, signal] = await within(peer.exited, 15_000, 'taskgate to exit');
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    await gone(pid, 5_000);
    expect(peer.stderr).not.toMatch(/Unhandled|uncaught/i);
  });
});

describe('an upstream that never answers', () => {
  async function silent(): Promise<{ peer: RawPeer; pid: number }> {
    // A 2025 server: told so, taskgate does not wait the era probe's 3 s for an answer that never comes.
    const peer = track(
      RawPeer.start(['--log-level', 'info', '--upstream-era', 'legacy', '--', process.execPath, SILENT]),
    );
    await peer.initialize();
    return { peer, pid: await upstreamPid(peer) };
  }

  it('a cancelled request, then closing the client, end things cleanly', async () => {
    const { peer, pid } = await silent();
    peer.send(call('c1', 'anything', {}));
    peer.send({
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId: 'c1', reason: 'the user gave up' },
    });
    // taskgate still answers what it serves itself.
    peer.send({ jsonrpc: '2.0', id: 'alive', method: 'tasks/get', params: { taskId: 'nope' } });
    expect(await peer.response('alive')).toMatchObject({ error: { code: -32602 } });
    peer.child.stdin.end();
    const [code] = await within(peer.exited, 15_000, 'taskgate to exit');
    expect(code).toBe(0);
    // The silent server ignores the end of its stdin: taskgate must have ended it.
    await gone(pid, 5_000);
  });

  it('tasks/cancel ends a task whose call never answers, and wakes its waiter', async () => {
    const { peer, pid } = await silent();
    peer.send(call('t', 'anything', {}, {}));
    const taskId = await createTask(peer, 't', 'anything', {});
    peer.send({ jsonrpc: '2.0', id: 'r', method: 'tasks/result', params: { taskId } });
    peer.send({ jsonrpc: '2.0', id: 'cancel', method: 'tasks/cancel', params: { taskId } });
    expect(await peer.response('cancel')).toMatchObject({ result: { taskId, status: 'cancelled' } });
    expect(await peer.response('r')).toHaveProperty('error');
    expect((await taskStatus(peer, taskId, 'get')).status).toBe('cancelled');
    await within(peer.stop(), 15_000, 'taskgate to exit');
    await gone(pid, 5_000);
  });
});

/** taskgate with `upstreams` (the aggregator on stdio), the flood fixture its one server, unprefixed. */
const AGGREGATED = join(mkdtempSync(join(tmpdir(), 'taskgate-faults-')), 'upstreams.json');
writeFileSync(
  AGGREGATED,
  JSON.stringify({ upstreams: { flood: { command: process.execPath, args: [FLOOD], prefix: false } } }),
);

// A peer on stdio that stops reading: taskgate stops reading what would be written to it (valve.ts), so
// nothing piles up in its memory, and nothing is lost: once the peer reads again, everything arrives.
describe.each([
  ['', ['--', process.execPath, FLOOD]],
  [', with upstreams', ['--config', AGGREGATED]],
])('a stdio peer that stops reading%s', (_, server) => {
  it('a client that does not read its stdout stalls the upstream, and then gets every message', async () => {
    const peer = track(RawPeer.start(['--log-level', 'info', ...server]));
    await peer.initialize();
    const pid = peer.child.pid!;
    peer.child.stdout.pause();
    const before = rssKb(pid);
    // 30 MB of notifications in all: over three times what the valve lets through, and what unbounded
    // taskgate takes in well within the 4 s (with the valve taken out, at load 12: in about 1 s).
    const COUNT = 3_000;
    const BYTES = 10_000;
    peer.send({
      jsonrpc: '2.0',
      id: 'f',
      method: 'tools/call',
      params: { name: 'flood', arguments: { count: COUNT, bytes: BYTES }, _meta: { progressToken: 'p' } },
    });
    // Unbounded, taskgate takes the whole flood in and the upstream finishes it within seconds.
    const peak = await peakRssKb(pid, () =>
      within(
        said(peer.child.stderr, () => peer.stderr, /flood done/),
        4_000,
        'the flood to end',
      ).catch(() => undefined),
    );
    const sent = Math.max(0, ...[...peer.stderr.matchAll(/flood sent (\d+)/g)].map((m) => Number(m[1])));
    console.log(`stdio client not reading: RSS before ${before} kB, peak ${peak} kB; upstream sent ${sent}`);
    expect(peer.stderr).not.toMatch(/flood done/);
    // The valve's mark (8 MiB), a message and the garbage of the burst before it shut: +18 MB seen; +41 to +43 MB
    // unbounded (the end of the flood, or all of it written, above, is what tells most surely).
    expect(peak - before).toBeLessThan(40 * 1024);

    peer.child.stdout.resume();
    expect(await peer.response('f', 60_000)).toMatchObject({
      result: { content: [{ text: `flooded ${COUNT}` }] },
    });
    const progress = peer.messages.items.filter((m) => m.method === 'notifications/progress');
    expect(progress).toHaveLength(COUNT);
    expect(peer.alive).toBe(true);
  });

  it('an upstream that does not read its stdin stops taskgate reading the client, and then gets every call', async () => {
    const peer = track(RawPeer.start(['--log-level', 'info', ...server]));
    await peer.initialize();
    const pid = peer.child.pid!;
    const upstream = await upstreamPid(peer);
    peer.send(call('deaf', 'deaf', {}));
    await peer.response('deaf');
    const before = rssKb(pid);
    // 30 MB of calls in all, as in the test above.
    const CALLS = 120;
    const text = 'x'.repeat(256 * 1024);
    for (let i = 0; i < CALLS; i++) peer.send(call(`e${i}`, 'echo', { text }));
    // Unbounded, taskgate reads every call at once, and all of them sit in its memory.
    const peak = await peakRssKb(pid, () =>
      within(once(peer.child.stdin, 'drain'), 4_000, 'the client to write it all').then(
        () => undefined,
        () => undefined,
      ),
    );
    console.log(
      `stdio upstream not reading: RSS before ${before} kB, peak ${peak} kB; client's unwritten ${peer.child.stdin.writableLength} bytes`,
    );
    expect(peer.child.stdin.writableLength).toBeGreaterThan(0);
    // The valve's mark (8 MiB), a message and the garbage of the burst before it shut: +18 MB seen; +41 to +43 MB
    // unbounded (the end of the flood, or all of it written, above, is what tells most surely).
    expect(peak - before).toBeLessThan(40 * 1024);

    process.kill(upstream, 'SIGUSR2');
    for (let i = 0; i < CALLS; i++) {
      const answer = await peer.response(`e${i}`, 60_000);
      expect((answer.result as { content: { text: string }[] }).content[0]!.text).toHaveLength(text.length);
    }
    expect(peer.alive).toBe(true);
  });
});

describe('an HTTP upstream, a stdio client that stops reading', () => {
  it("the server's stream is not read while the client is behind, and then every message arrives", async () => {
    const fixture = await startHttpFixture('legacy');
    cleanups.push(() => fixture.stop());
    const peer = track(RawPeer.start(['--log-level', 'info', '--upstream-url', fixture.url]));
    await peer.initialize();
    const pid = peer.child.pid!;
    const STEPS = 6_000;
    const BYTES = 10_000; // 60 MB of notifications in all, on the call's SSE stream
    const flood = (id: string, steps: number) =>
      peer.send({
        jsonrpc: '2.0',
        id,
        method: 'tools/call',
        params: {
          name: 'progress',
          arguments: { steps, intervalMs: 0, bytes: BYTES },
          _meta: { progressToken: id },
        },
      });
    // A first small one read in full: what the first call costs taskgate is not counted.
    flood('warm', 20);
    await peer.response('warm');
    peer.child.stdout.pause();
    const before = rssKb(pid);
    flood('p', STEPS);
    // Unbounded, taskgate reads the stream as the server sends it, and holds it all for the client. The
    // peak is not what tells: the first second of the call alone makes a transient of up to 33 MB that
    // the collector takes back (instrumented: 1.3 MB of the stream was read before the valve shut). What
    // is still held once taskgate has had 10 s to read, or has taken in 64 MB, is: 19–26 MB of that
    // transient's heap is seen still held with the valve, so the bound is 32 MB, half of what the
    // unbounded read has taken in when the wait ends.
    const BOUND_KB = 32 * 1024;
    const peak = await peakRssKb(pid, () =>
      within(
        new Promise<void>((resolve) => {
          const sampler = setInterval(() => {
            if (rssKb(pid) - before < 2 * BOUND_KB) return;
            clearInterval(sampler);
            resolve();
          }, 50);
          cleanups.push(async () => clearInterval(sampler));
        }),
        10_000,
        'taskgate to take in the stream',
      ).catch(() => undefined),
    );
    const held = rssKb(pid) - before;
    console.log(
      `stdio client not reading, HTTP upstream: RSS before ${before} kB, peak ${peak} kB, held ${held} kB`,
    );
    expect(held).toBeLessThan(BOUND_KB);

    peer.child.stdout.resume();
    expect(await peer.response('p', 60_000)).toMatchObject({
      result: { content: [{ text: `done ${STEPS} steps` }] },
    });
    const progress = peer.messages.items.filter(
      (m) =>
        m.method === 'notifications/progress' &&
        (m.params as { progressToken: string }).progressToken === 'p',
    );
    expect(progress).toHaveLength(STEPS);
    expect(peer.alive).toBe(true);
  });
});

describe('an upstream that writes garbage to stdout', () => {
  it('logs it and keeps routing the valid messages', async () => {
    const peer = track(RawPeer.start(['--log-level', 'info', '--', process.execPath, GARBAGE]));
    await peer.initialize();
    peer.send({ jsonrpc: '2.0', id: 'list', method: 'tools/list' });
    const tools = (await peer.response('list')).result as { tools: { name: string }[] };
    expect(tools.tools.map((tool) => tool.name)).toEqual(['echo', 'sleep']);
    for (let i = 0; i < 20; i++) peer.send(call(`e${i}`, 'echo', { text: `hello ${i}` }));
    for (let i = 0; i < 20; i++) {
      expect(await peer.response(`e${i}`)).toMatchObject({ result: { content: [{ text: `hello ${i}` }] } });
    }
    peer.send(call('t', 'sleep', { ms: 10 }, {}));
    const taskId = await createTask(peer, 't', 'sleep', {});
    peer.send({ jsonrpc: '2.0', id: 'r', method: 'tasks/result', params: { taskId } });
    expect(await peer.response('r')).toMatchObject({ result: { content: [{ text: 'slept' }] } });
    expect(peer.stderr).toMatch(/not valid JSON/);
    // Nothing of the garbage reached the client: every line was a JSON-RPC message (RawPeer parses them).
    for (const message of peer.messages.items) expect(message.jsonrpc).toBe('2.0');
    expect(peer.child.exitCode).toBeNull();
    await within(peer.stop(), 10_000, 'taskgate to exit');
  });
});

describe('a client that never reads its SSE stream', () => {
  interface Posted {
    response: IncomingMessage;
    body: () => Promise<string>;
  }
  function post(url: URL, message: object, session?: string): Promise<Posted> {
    return new Promise((resolve, reject) => {
      const req = httpRequest(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2025-11-25',
          ...(session && { 'mcp-session-id': session }),
        },
      });
      req.on('error', reject);
      req.on('response', (response) =>
        resolve({
          response,
          body: async () => {
            let text = '';
            for await (const chunk of response) text += String(chunk);
            return text;
          },
        }),
      );
      req.end(JSON.stringify(message));
    });
  }

  /**
   * One slow client floods itself with 150 MB of progress notifications it never reads, while another
   * session calls a tool. Returns taskgate's RSS before the flood and its peak during it.
   */
  async function flood(): Promise<{ before: number; peak: number }> {
    const gateway = await Gateway.start([process.execPath, FLOOD], ['--log-level', 'info']);
    cleanups.push(() => gateway.stop());
    const pid = gateway.child.pid!;

    // The slow client: initialize, then a flooding call whose SSE response it never reads.
    const init = await post(gateway.url, {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'slow', version: '1' } },
    });
    const session = String(init.response.headers['mcp-session-id']);
    await init.body();
    await (await post(gateway.url, { jsonrpc: '2.0', method: 'notifications/initialized' }, session)).body();

    // A well-behaved client in another session.
    const client = new Client({ name: 'other', version: '1' }, { capabilities: {} });
    await client.connect(new StreamableHTTPClientTransport(gateway.url));
    cleanups.push(() => client.close());
    expect(await client.callTool({ name: 'echo', arguments: { text: 'before' } })).toMatchObject({
      content: [{ text: 'before' }],
    });

    const before = rssKb(pid);
    const COUNT = 15_000;
    const BYTES = 10_000; // 150 MB of notifications in all
    const slow = await post(
      gateway.url,
      {
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'flood', arguments: { count: COUNT, bytes: BYTES }, _meta: { progressToken: 'p' } },
      },
      session,
    );
    slow.response.pause(); // and never read again
    cleanups.push(async () => void slow.response.destroy());

    // Either taskgate applies backpressure (the flood stalls) or it drops what the client cannot take
    // (the flood ends): wait for the end, bounded, sampling the peak of taskgate's RSS meanwhile.
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, rssKb(pid))), 50);
    try {
      await within(
        new Promise<void>((resolve) => {
          const check = (): void => {
            if (/flood done/.test(gateway.stderr)) resolve();
            else gateway.child.stderr.once('data', check);
          };
          check();
        }),
        15_000,
        'the flood to end',
      ).catch(() => undefined);
      // The other session is still served while the slow one is stuck.
      expect(await client.callTool({ name: 'echo', arguments: { text: 'during' } })).toMatchObject({
        content: [{ text: 'during' }],
      });
    } finally {
      clearInterval(sampler);
    }
    const after = rssKb(pid);
    const sent = Math.max(0, ...[...gateway.stderr.matchAll(/flood sent (\d+)/g)].map((m) => Number(m[1])));
    console.log(
      `slow SSE reader: RSS before ${before} kB, peak ${peak} kB, after ${after} kB; upstream sent ${sent} of ${COUNT} notifications`,
    );
    expect(gateway.child.exitCode).toBeNull();
    return { before, peak };
  }

  // Both tests look at one flood (150 MB through taskgate, the costliest run in this file); either run
  // alone floods by itself.
  let flooded: Promise<{ before: number; peak: number }> | undefined;
  const floodOnce = (): Promise<{ before: number; peak: number }> => (flooded ??= flood());

  it('keeps serving other sessions while the upstream floods a client that never reads', async () => {
    // The other session's calls, and taskgate staying up, are checked inside.
    await floodOnce();
  });

  // BUG: taskgate's RSS grows by about as much as the upstream sends to a client that does not read its
  // SSE stream (measured: 94 MB → 350 MB for the 200 MB flood; the upstream got to send all 20 000
  // notifications). The HTTP front writes each event without heeding backpressure
  // (src/transport/event-stream.ts writeEvent ignores the return value of write(), so node buffers it all
  // in the response), and nothing slows the upstream down or drops for a stuck stream.
  // Input: POST tools/call {name: 'flood', arguments: {count: 20000, bytes: 10000}, _meta: {progressToken: 'p'}}
  // on one session of test/fixtures/flood-server.js behind the HTTP front, and never read the response.
  it('keeps taskgate memory bounded while the upstream floods a client that never reads', async () => {
    const { before, peak } = await floodOnce();
    // The 150 MB flood must not end up in taskgate's memory (unbounded, the peak rose by 256 MB for the
    // 200 MB flood this test first sent, by 197 MB for this one). The peak includes garbage not yet
    // collected: 90–99 MB on fca3fb9 for 200 MB, 100–105 MB after issue 27's merges, 57 MB for 150 MB at
    // acdf06d, so the bound is 120 MB, which still fails on the unbounded growth this test was written for.
    expect(peak - before).toBeLessThan(120 * 1024);
  });
});

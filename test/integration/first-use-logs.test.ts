/**
 * Issue 14.7 and 14.10 through the built CLI: a server that cannot start is reported with its exit status
 * and the end of its stderr, and taskgate's log is JSON lines a person and a program can follow.
 */
import { writeFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterEach, describe, expect, it } from 'vitest';
import { httpTransport } from '../helpers/http-client.js';
import { FIXTURES, Gateway, INITIALIZE, RawPeer, TASK_AWARE, connect } from '../helpers/taskgate.js';

const FAILING = ['sh', '-c', 'echo "starting up" >&2; echo "fatal: missing API key" >&2; exit 7'];

interface LogRecord {
  level: number;
  name: string;
  msg: string;
  [key: string]: unknown;
}

/** Every line taskgate wrote to stderr, each of which must be a JSON log record. */
function records(stderr: string): LogRecord[] {
  return stderr
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      try {
        return JSON.parse(line) as LogRecord;
      } catch {
        throw new Error(`not a JSON log line: ${line}`);
      }
    });
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function track(peer: RawPeer): RawPeer {
  cleanups.push(() => peer.stop());
  return peer;
}

describe('issue 14.7: a server that exits at once', () => {
  it('reaches a stdio client as its exit code and the end of its stderr, and is logged so', async () => {
    const failed = await connect('legacy', { upstream: FAILING }).then(
      () => undefined,
      (error: unknown) => error as Error,
    );
    expect(failed?.message).toMatch(
      /exited with code 7 \(stderr: starting up \| fatal: missing API key\) before answering initialize/,
    );

    const peer = track(RawPeer.start(['--', ...FAILING]));
    peer.send(INITIALIZE);
    const [code] = await peer.exited;
    expect(code).toBe(1);
    const stderr = peer.stderr;
    const exit = records(stderr).find((record) => record.msg === 'upstream server exited with code 7');
    expect(exit).toMatchObject({ level: 40, code: 7, stderr: 'starting up | fatal: missing API key' });
    expect(
      records(stderr).some(
        (record) =>
          record.level === 50 && /exited with code 7 \(stderr: .*fatal: missing API key/.test(record.msg),
      ),
    ).toBe(true);
  });

  it('reaches a stdio client that asks only after the server is gone, in the answer to its initialize', async () => {
    const peer = track(RawPeer.start(['--', ...FAILING]));
    await peer.logged('stopped before it answered initialize');
    peer.send(INITIALIZE);
    expect((await peer.response('init')).error).toMatchObject({
      code: -32000,
      message: expect.stringMatching(/exited with code 7 \(stderr: starting up \| fatal: missing API key\)/),
    });
    expect((await peer.exited)[0]).toBe(1);
  });

  it('reaches a client of the HTTP front in the JSON-RPC error of its initialize', async () => {
    const gateway = await Gateway.start(FAILING);
    cleanups.push(() => gateway.stop());
    const client = new Client({ name: 'taskgate-test', version: '1.0.0' }, { capabilities: TASK_AWARE });
    const failed = await client.connect(httpTransport(gateway.url)).then(
      () => undefined,
      (error: unknown) => error as Error,
    );
    expect(failed?.message).toMatch(/exited with code 7 \(stderr: starting up \| fatal: missing API key\)/);
    await gateway.logged('"msg":"upstream server exited with code 7"');
    expect(records(gateway.stderr)).toContainEqual(
      expect.objectContaining({ level: 40, stderr: 'starting up | fatal: missing API key' }),
    );
  });

  it('keeps only the last lines, bounded, for the report', async () => {
    const many = ['sh', '-c', 'for i in 1 2 3 4 5 6 7 8; do echo "line $i" >&2; done; exit 3'];
    const peer = track(RawPeer.start(['--', ...many]));
    peer.send(INITIALIZE);
    const answer = await peer.response('init');
    expect(answer).toMatchObject({
      error: { message: expect.stringContaining('(stderr: line 4 | line 5 | line 6 | line 7 | line 8)') },
    });
  });

  it("keeps a crash's error line when the stack trace behind it fills the last lines (issue 27)", async () => {
    const missing = join(tmpdir(), 'taskgate-no-such-server.js');
    const peer = track(RawPeer.start(['--', process.execPath, missing]));
    peer.send(INITIALIZE);
    const answer = await peer.response('init');
    expect(answer).toMatchObject({
      error: {
        message: expect.stringContaining(`(stderr: Error: Cannot find module '${missing}' | … | `),
      },
    });
    expect((await peer.exited)[0]).toBe(1);
    expect(records(peer.stderr)).toContainEqual(
      expect.objectContaining({
        msg: 'upstream server exited with code 1',
        stderr: expect.stringMatching(/^Error: Cannot find module .* \| … \| .*Node\.js v\d/),
      }),
    );
  });
});

describe('issue 14.10: the log', () => {
  it("wraps each line of the server's stderr as a record of the logger upstream, long ones cut, the last partial one flushed", async () => {
    const script =
      'echo "first line" >&2; head -c 10000 /dev/zero | tr "\\0" x >&2; echo >&2; printf "no newline at the end" >&2; exit 3';
    const peer = track(RawPeer.start(['--', 'sh', '-c', script]));
    peer.send(INITIALIZE);
    await peer.exited;
    const all = records(peer.stderr);
    const upstream = all.filter((record) => record.name === 'upstream');
    const started = all.find((record) => record.msg === 'upstream server started');
    expect(upstream.map((record) => record.msg.slice(0, 25))).toEqual([
      'first line',
      'x'.repeat(25),
      'no newline at the end',
    ]);
    for (const record of upstream) expect(record).toMatchObject({ level: 30, pid: started?.pid });
    expect(upstream[1]!.msg.length).toBeLessThanOrEqual(2_001);
    expect(upstream[1]!.msg.endsWith('…')).toBe(true);
  });

  it('has one "name" per audit line, and one session id, cut the same way, on task and limit lines', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'taskgate-logs-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const file = join(dir, 'taskgate.yaml');
    await writeFile(file, 'limits:\n  maxLiveTasks: 1\n');
    const peer = track(await RawPeer.initialized('legacy', ['--config', file]));
    const sleep = (id: string) => ({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name: 'sleep', arguments: { ms: 30_000 }, task: {} },
    });
    peer.send(sleep('a'));
    expect(await peer.response('a')).toHaveProperty('result');
    peer.send(sleep('b'));
    expect(await peer.response('b')).toHaveProperty('error');
    await peer.logged('"event":"limit.hit"');

    const lines = peer.stderr.split('\n').filter((line) => line.includes('"event":"'));
    for (const line of lines) expect(line.match(/"name":/g)).toHaveLength(1);
    const audit = records(lines.join('\n'));
    expect(audit.every((record) => record.name === 'audit')).toBe(true);
    const created = audit.find((record) => record.event === 'task.created');
    const hit = audit.find((record) => record.event === 'limit.hit');
    expect(created?.session).toMatch(/^.{8}$/);
    expect(hit?.session).toBe(created?.session);
  });

  it('logs the exit of a server taskgate stopped as info, an unexpected one as a warning', async () => {
    const peer = track(await RawPeer.initialized('legacy'));
    await peer.stop();
    const exit = records(peer.stderr).filter((record) => /^upstream server exited/.test(record.msg));
    expect(exit).toEqual([expect.objectContaining({ level: 30, code: 0 })]);

    const crashing = track(await RawPeer.initialized('legacy', ['--no-upstream-restart']));
    crashing.send({
      jsonrpc: '2.0',
      id: 'crash',
      method: 'tools/call',
      params: { name: 'crash', arguments: { code: 0 } },
    });
    await crashing.response('crash');
    await crashing.logged('upstream server exited');
    expect(records(crashing.stderr)).toContainEqual(
      expect.objectContaining({ level: 40, code: 0, msg: 'upstream server exited with code 0' }),
    );
  });

  it('says taskgate is shutting down, not that the client went away, when a signal stops it over stdio', async () => {
    const peer = track(await RawPeer.initialized('legacy'));
    peer.child.kill('SIGTERM');
    await peer.exited;
    const messages = records(peer.stderr).map((record) => record.msg);
    expect(messages).toContainEqual(expect.stringMatching(/^taskgate is shutting down \(SIGTERM\)/));
    expect(messages.filter((msg) => msg.includes('client went away'))).toEqual([]);
  });

  it('says taskgate is shutting down when SIGTERM ends the sessions of the HTTP front', async () => {
    const gateway = await Gateway.start([process.execPath, FIXTURES.legacy]);
    cleanups.push(() => gateway.stop());
    const client = new Client({ name: 'taskgate-test', version: '1.0.0' }, { capabilities: TASK_AWARE });
    await client.connect(httpTransport(gateway.url));
    cleanups.push(() => client.close());
    await client.listTools();
    await gateway.stop();
    const all = records(gateway.stderr);
    expect(all).toContainEqual(expect.objectContaining({ msg: 'session closed: taskgate is shutting down' }));
    expect(all.filter((record) => record.msg.includes('client went away'))).toEqual([]);
  });
});

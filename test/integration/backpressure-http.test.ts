/**
 * Backpressure from the HTTP front to a stdio server (issue 33): while the server does not read its stdin,
 * taskgate reads no more of the bodies POSTed for it (they stay in the sockets, TCP holds the client back),
 * rather than holding every one in its memory; once the server reads again, all of them reach it. For a
 * session's own server, for one server shared by several sessions, and for a 2026-07-28 caller's bridge.
 */
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { MODERN_VERSION } from '../helpers/modern-client.js';
import { modernRequest } from '../helpers/modern-raw.js';
import { ACCEPT_BOTH, inSession, openSession, post } from '../helpers/raw-http.js';
import { Gateway } from '../helpers/taskgate.js';

const FLOOD = [process.execPath, fileURLToPath(new URL('../fixtures/flood-server.js', import.meta.url))];
const MIB = 1024 * 1024;

let gateways: Gateway[] = [];
afterEach(async () => {
  await Promise.all(gateways.map((gateway) => gateway.stop()));
  gateways = [];
});

const rssKb = (pid: number): number =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);

/** The text of a tools/call answer, answered as JSON or on an SSE stream. */
async function callTool(url: URL, sessionId: string, id: string, name: string): Promise<string> {
  const response = await post(
    url,
    { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } },
    inSession(sessionId),
  );
  const body = await response.text();
  const json = response.headers.get('content-type')?.startsWith('text/event-stream')
    ? body
        .split('\n')
        .filter((line) => line.startsWith('data: '))
        .map((line) => JSON.parse(line.slice(6)) as { id?: string })
        .find((message) => message.id === id)
    : (JSON.parse(body) as unknown);
  return (json as { result: { content: { text: string }[] } }).result.content[0]!.text;
}

/** The stdio server's pid, from taskgate's `upstream server started` log line. */
async function serverPid(gateway: Gateway): Promise<number> {
  await gateway.logged('upstream server started', 10_000);
  return Number(/"pid":(\d+),"command"[^\n]*upstream server started/.exec(gateway.stderr)![1]);
}

/**
 * Resolves once `done` settles or `count()` has not grown for `quietMs`, within `withinMs`. A POST that is
 * not read is a non-event: only a while without progress shows it. Under load, a pause of the unbounded
 * gateway could pass for a stall; the accepted count then still tells what was taken in.
 */
async function untilStalled(count: () => number, done: Promise<unknown>, quietMs: number, withinMs: number) {
  const deadline = Date.now() + withinMs;
  let finished = false;
  void done.finally(() => (finished = true));
  let seen = -1;
  while (!finished && count() !== seen && Date.now() < deadline) {
    seen = count();
    await Promise.race([done, delay(quietMs)]).catch(() => undefined);
  }
}

describe.each([
  { sharing: 'session', sessions: 1 },
  { sharing: 'shared', sessions: 2 },
])(
  'an HTTP front on a stdio server that stops reading its stdin (sharing: $sharing)',
  ({ sharing, sessions }) => {
    it('reads no more POSTed bodies while the server is behind, and then delivers every one', async () => {
      const gateway = await Gateway.start(FLOOD, ['--log-level', 'info', '--upstream-sharing', sharing]);
      gateways.push(gateway);
      const ids = await Promise.all(Array.from({ length: sessions }, () => openSession(gateway.url)));
      const upstream = await serverPid(gateway);
      expect(await callTool(gateway.url, ids[0]!, 'deaf', 'deaf')).toBe('deaf');
      const pid = gateway.child.pid!;
      const before = rssKb(pid);

      // 24 MiB in all, in turn from each session: over twice what the valve lets in; the rest, sent one
      // after the other once the server reads again, is most of the test's time.
      const COUNT = 24;
      const filler = 'x'.repeat(MIB);
      let accepted = 0;
      const sending = (async () => {
        for (let i = 0; i < COUNT; i++) {
          const response = await post(
            gateway.url,
            { jsonrpc: '2.0', method: 'notifications/roots/list_changed', params: { filler } },
            inSession(ids[i % sessions]!),
          );
          expect(response.status).toBe(202);
          accepted++;
        }
      })();
      // Its failure is the test's, when it is awaited below; not an unhandled rejection after the test.
      sending.catch(() => undefined);
      // Unbounded, taskgate takes in all 24 at once, and they sit in its memory for the server's stdin.
      await untilStalled(() => accepted, sending, 3_000, 30_000);
      const held = rssKb(pid) - before;
      console.log(
        `HTTP front, stdio server not reading (${sharing}): ${accepted} of ${COUNT} MiB accepted, RSS +${held} kB`,
      );
      // The valve's mark (8 MiB), the message that crossed it, less the pipe's 64 KiB: 8 seen; all 24
      // unbounded.
      expect(accepted).toBeLessThanOrEqual(11);
      expect(held).toBeLessThan(40 * 1024);

      process.kill(upstream, 'SIGUSR2');
      await sending;
      expect(accepted).toBe(COUNT);
      expect(await callTool(gateway.url, ids[0]!, 'heard', 'heard')).toBe(`${COUNT} ${COUNT * MIB}`);
      expect(gateway.child.exitCode).toBeNull();
    }, 120_000);
  },
);

/** The `_meta` of a 2026-07-28 client without the tasks extension: its calls are answered with their result. */
const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': MODERN_VERSION,
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'raw-client', version: '1' },
};

/**
 * A 2026-07-28 `echo` of `text`, POSTed on a connection of its own: `sent` settles once the whole body is
 * handed to the socket, `text` with the echoed text (off JSON or the SSE stream).
 */
function modernEcho(url: URL, id: number, text: string): { sent: Promise<void>; text: Promise<string> } {
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name: 'echo', arguments: { text }, _meta: MODERN_META },
  });
  let sent!: () => void;
  const uploaded = new Promise<void>((resolve) => (sent = resolve));
  const answered = new Promise<string>((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        agent: false,
        headers: {
          accept: ACCEPT_BOTH,
          'content-type': 'application/json',
          'mcp-protocol-version': MODERN_VERSION,
          'mcp-method': 'tools/call',
          'mcp-name': 'echo',
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const data = Buffer.concat(chunks).toString('utf8');
          const json = res.headers['content-type']?.startsWith('text/event-stream')
            ? data
                .split('\n')
                .find((line) => line.startsWith('data: '))!
                .slice(6)
            : data;
          resolve((JSON.parse(json) as { result: { content: { text: string }[] } }).result.content[0]!.text);
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body, sent);
  });
  return { sent: uploaded, text: answered };
}

describe('an HTTP front on a stdio server that stops reading its stdin, for a 2026-07-28 caller', () => {
  it("reads no more of the caller's POSTed requests while its bridge's server is behind, then answers every one", async () => {
    const gateway = await Gateway.start(FLOOD, ['--log-level', 'info']);
    gateways.push(gateway);
    const deaf = await modernRequest(gateway.url, 'tools/call', { name: 'deaf', arguments: {} }, MODERN_META);
    expect((deaf.result as { content: { text: string }[] }).content[0]!.text).toBe('deaf');
    const upstream = await serverPid(gateway);
    const pid = gateway.child.pid!;
    const before = rssKb(pid);

    // 48 MiB in all: bodies bigger than what the kernel buffers of an unread connection hold, so that a
    // body taskgate does not read is not all sent.
    const COUNT = 12;
    const text = 'x'.repeat(4 * MIB);
    let accepted = 0;
    const answers: Promise<string>[] = [];
    const sending = (async () => {
      for (let i = 0; i < COUNT; i++) {
        const echo = modernEcho(gateway.url, 1_000 + i, text);
        // Its failure is the test's, when it is awaited below; not an unhandled rejection after the test.
        echo.text.catch(() => undefined);
        answers.push(echo.text);
        await echo.sent;
        accepted++;
      }
    })();
    sending.catch(() => undefined);
    await untilStalled(() => accepted, sending, 3_000, 30_000);
    const held = rssKb(pid) - before;
    console.log(
      `HTTP front, 2026-07-28, stdio server not reading: ${accepted} of ${COUNT} × 4 MiB sent, RSS +${held} kB`,
    );
    // The valve's mark (8 MiB) is two bodies: 2 sent, RSS +32 MB seen; unbounded, 12 of 12 and +129 MB.
    expect(accepted).toBeLessThanOrEqual(4);
    expect(held).toBeLessThan(64 * 1024);

    process.kill(upstream, 'SIGUSR2');
    await sending;
    const echoed = await Promise.all(answers);
    expect(echoed.every((each) => each === text)).toBe(true);
    expect(gateway.child.exitCode).toBeNull();
  }, 120_000);
});

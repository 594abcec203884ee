/**
 * The Streamable HTTP front against clients that misuse it: cancelled and failed requests, duplicate ids,
 * resumptions that race their own stream, initializations that fail, floods of large events, sessions
 * ended while their tasks run, and callers who should not see the operator's pages.
 */
import { once } from 'node:events';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { pino } from 'pino';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { KeptBytes, KeptMessages } from '../../src/transport/event-stream.js';
import { HttpFront } from '../../src/transport/http-front.js';
import type { HttpSession } from '../../src/transport/http-session.js';
import { Inbox } from '../helpers/inbox.js';
import { inSession, openSession, post } from '../helpers/raw-http.js';
import { FIXTURES, Gateway, INITIALIZE, TASK_AWARE } from '../helpers/taskgate.js';
import { frontOptions } from '../helpers/front-options.js';

const LEGACY = [process.execPath, FIXTURES.legacy];
const FLOOD = [process.execPath, fileURLToPath(new URL('../fixtures/flood-server.js', import.meta.url))];
const MIB = 1024 * 1024;

let gateways: Gateway[] = [];
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(gateways.map((gateway) => gateway.stop()));
  gateways = [];
  await Promise.all(cleanups.splice(0).map((cleanup) => cleanup()));
});

const start = async (flags: string[] = [], upstream = LEGACY): Promise<Gateway> => {
  const gateway = await Gateway.start(upstream, flags);
  gateways.push(gateway);
  return gateway;
};

/** One gateway with no flags, for the tests that need none: each opens sessions of its own on it. */
let plain: Promise<Gateway> | undefined;
const plainGateway = (): Promise<Gateway> => (plain ??= Gateway.start(LEGACY));
afterAll(async () => (await plain)?.stop());

/** A tools/call of the fixture's `progress` tool: an SSE response that stays open for steps × intervalMs. */
const progressCall = (id: string, steps: number, intervalMs: number) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name: 'progress', arguments: { steps, intervalMs }, _meta: { progressToken: `tok-${id}` } },
});

interface SseMessage {
  id?: string | number;
  method?: string;
  params?: { progress?: number };
  result?: unknown;
  error?: { code: number; message: string };
}

/** Reads an SSE response as it arrives: its event ids and messages, and when it ends. */
class SseReader {
  readonly eventIds = new Inbox<string>();
  readonly messages = new Inbox<SseMessage>();
  readonly ended: Promise<void>;

  constructor(response: Response) {
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    this.ended = this.read(response);
    this.ended.catch(() => undefined);
  }

  /** Resolves when the stream ends; fails after `withinMs`. */
  async end(withinMs = 10_000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the stream did not end within ${withinMs} ms`)), withinMs);
    });
    try {
      await Promise.race([this.ended, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  private async read(response: Response): Promise<void> {
    const decoder = new TextDecoder();
    let text = '';
    for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
      text += decoder.decode(chunk, { stream: true });
      let end;
      while ((end = text.indexOf('\n\n')) !== -1) {
        const event = text.slice(0, end);
        text = text.slice(end + 2);
        const id = /^id: (.*)$/m.exec(event)?.[1];
        const data = /^data: (.*)$/m.exec(event)?.[1];
        if (id !== undefined) this.eventIds.push(id);
        if (data !== undefined) this.messages.push(JSON.parse(data) as SseMessage);
      }
    }
  }
}

/** Resolves within `withinMs` with what the promise gives, or fails saying what did not happen. */
async function within<T>(promise: Promise<T>, withinMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not happen within ${withinMs} ms`)), withinMs);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

describe('streams that must end', () => {
  it('issue 13.9: a POST cancelled with notifications/cancelled ends its stream without an answer', async () => {
    const { url } = await plainGateway();
    const sessionId = await openSession(url);
    const stream = new SseReader(await post(url, progressCall('c1', 100, 100), inSession(sessionId)));
    await stream.messages.waitFor((m) => m.method === 'notifications/progress', 'a first progress event');
    const cancel = await post(
      url,
      { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'c1', reason: 'timeout' } },
      inSession(sessionId),
    );
    expect(cancel.status).toBe(202);
    await stream.end(5_000);
    expect(stream.messages.items.filter((m) => m.id === 'c1')).toEqual([]);
  });

  it('issue 13.9: the POST of a call an SDK client timed out (and so cancelled) ends', async () => {
    const gateway = await plainGateway();
    let done!: () => void;
    const ended = new Promise<void>((resolve) => (done = resolve));
    // The client's fetch, watching the response to the call's POST to its end.
    const watching = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const watched = init?.method === 'POST' && String(init.body).includes('"sleep"');
      const response = await fetch(input, init);
      if (!watched || !response.body) return response;
      const body = response.body.pipeThrough(new TransformStream({ flush: () => done() }));
      return new Response(body, { status: response.status, headers: response.headers });
    };
    const client = new Client({ name: 'hostile', version: '1' }, { capabilities: TASK_AWARE });
    await client.connect(new StreamableHTTPClientTransport(gateway.url, { fetch: watching }));
    cleanups.push(() => client.close());
    await expect(
      client.callTool({ name: 'sleep', arguments: { ms: 60_000 } }, undefined, { timeout: 300 }),
    ).rejects.toThrow(/timed out/i);
    await within(ended, 5_000, 'the end of the cancelled POST');
  });

  it('issue 13.9: a session whose SDK client timed out a call and went away expires when idle', async () => {
    const gateway = await start(['--session-idle-timeout', '1000']);
    const client = new Client({ name: 'hostile', version: '1' }, { capabilities: TASK_AWARE });
    await client.connect(new StreamableHTTPClientTransport(gateway.url));
    await expect(
      client.callTool({ name: 'sleep', arguments: { ms: 60_000 } }, undefined, { timeout: 300 }),
    ).rejects.toThrow(/timed out/i);
    await client.close();
    await gateway.logged('ending an idle session', 5_000);
  });

  it('issue 13.9 / 13.18: a request that fails inside taskgate gets HTTP 500 with its id, and the session still expires', async () => {
    const logs = new Inbox<string>();
    const logger = pino(
      { level: 'info' },
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          logs.push(chunk.toString());
          done();
        },
      }),
    );
    const front = new HttpFront(
      frontOptions({ sessionIdleTimeoutMs: 300 }),
      {
        openSession: async (session: HttpSession) => {
          session.start({
            message: (raw) => {
              const message = JSON.parse(raw.toString()) as { id?: string | number; method: string };
              if (message.method === 'initialize') {
                session.send(
                  { jsonrpc: '2.0', id: message.id, result: { ...INITIALIZE.params, serverInfo: {} } },
                  { responseTo: message.id! },
                );
              } else if (message.method === 'explode') {
                throw new Error('a bug in the session');
              }
            },
            malformed: () => undefined,
            closed: () => undefined,
          });
        },
        notReady: async () => undefined,
      },
      logger,
    );
    const url = await front.listen();
    cleanups.push(() => front.close());
    const sessionId = await openSession(url);
    const failed = await post(url, { jsonrpc: '2.0', id: 77, method: 'explode' }, inSession(sessionId));
    expect(failed.status).toBe(500);
    expect(await failed.json()).toMatchObject({ jsonrpc: '2.0', id: 77, error: { code: -32603 } });
    await logs.waitFor((line) => line.includes('ending an idle session'), 'the idle session ending', 5_000);
    expect(front.sessionCount).toBe(0);
  });
});

describe('request ids and resumption', () => {
  it('issue 13.18: ids beyond 2^53 come back with their own digits, answered or refused', async () => {
    const { url } = await plainGateway();
    const sessionId = await openSession(url);
    const body = (id: string, rest: string) => `{"jsonrpc":"2.0","id":${id},${rest}}`;
    const answered = await post(url, body('9007199254740993', '"method":"tools/list"'), inSession(sessionId));
    expect(await answered.text()).toMatch(
      /"id":9007199254740993[,}][\s\S]*"tools"|"tools"[\s\S]*"id":9007199254740993[,}]/,
    );
    const refused = await post(
      url,
      body('-12345678901234567890', '"method":"ping","params":[1]'),
      inSession(sessionId),
    );
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain('"id":-12345678901234567890,');
  });

  it('issue 13.10: a second POST with the id of a request in flight is refused at once; the first is answered', async () => {
    const { url } = await plainGateway();
    const sessionId = await openSession(url);
    const first = new SseReader(await post(url, progressCall('same', 5, 100), inSession(sessionId)));
    await first.messages.waitFor((m) => m.method === 'notifications/progress', 'a first progress event');
    const second = await within(
      post(url, { jsonrpc: '2.0', id: 'same', method: 'tools/list' }, inSession(sessionId)),
      2_000,
      'the refusal of the duplicate id',
    );
    expect(second.status).toBe(409);
    const refusal = (await second.json()) as SseMessage;
    expect(refusal).toMatchObject({ id: 'same', error: { code: -32600 } });
    expect(refusal.error!.message).toMatch(/already in use/);
    const answer = await first.messages.waitFor((m) => m.id === 'same', 'the answer to the first request');
    expect(answer.result).toMatchObject({ content: [{ text: 'done 5 steps' }] });
    await first.end();
  });

  it('issue 13.11: a GET with Last-Event-ID of a stream still open on its POST takes it over; the POST ends cleanly', async () => {
    const { url } = await plainGateway();
    const sessionId = await openSession(url);
    const stream = new SseReader(await post(url, progressCall('r1', 5, 200), inSession(sessionId)));
    const eventId = await stream.eventIds.waitFor(() => true, 'a first event id');
    const resumed = await fetch(url, {
      headers: { accept: 'text/event-stream', 'last-event-id': eventId, ...inSession(sessionId) },
    });
    expect(resumed.status).toBe(200);
    await stream.end(5_000);
    const taken = new SseReader(resumed);
    const answer = await taken.messages.waitFor((m) => m.id === 'r1', 'the answer on the resumed stream');
    expect(answer.result).toMatchObject({ content: [{ text: 'done 5 steps' }] });
    await taken.end();
    // Every message exactly once, across the two.
    const progress = [...stream.messages.items, ...taken.messages.items]
      .filter((m) => m.method === 'notifications/progress')
      .map((m) => m.params?.progress);
    expect(progress).toEqual([1, 2, 3, 4, 5]);
  });
});

describe('sessions that must not hold a slot', () => {
  it('issue 13.7: an initialize the upstream died before answering gets no session id and holds no slot', async () => {
    const dying = [process.execPath, '-e', "process.stdin.once('data', () => process.exit(3))"];
    const { url } = await start(['--max-sessions', '1'], dying);
    for (let attempt = 0; attempt < 2; attempt++) {
      const response = await post(url, INITIALIZE);
      const body = (await response.json()) as SseMessage;
      expect(body).toMatchObject({ id: 'init', error: { code: -32000 } });
      expect(body.error!.message).toMatch(/exited with code 3/);
      expect(response.headers.get('mcp-session-id')).toBeNull();
    }
  });
});

/** A process's peak resident set size so far, in MiB (Linux). */
function peakRssMib(pid: number): number {
  const kib = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kib) / 1024;
}

describe('server processes', () => {
  it('issue 13.6: sessions ended while their tasks run hold their max-sessions slot until their upstream stops; the 503 says so', async () => {
    const gateway = await start(['--max-sessions', '2']);
    const { url } = gateway;
    for (let cycle = 0; cycle < 2; cycle++) {
      const sessionId = await openSession(url);
      const call = await post(
        url,
        {
          jsonrpc: '2.0',
          id: `t${cycle}`,
          method: 'tools/call',
          params: { name: 'sleep', arguments: { ms: 5_000 }, task: {} },
        },
        inSession(sessionId),
      );
      expect(await call.json()).toMatchObject({ result: { task: { status: 'working' } } });
      expect((await fetch(url, { method: 'DELETE', headers: inSession(sessionId) })).status).toBe(200);
    }
    const refused = await post(url, INITIALIZE);
    expect(refused.status).toBe(503);
    const body = (await refused.json()) as SseMessage;
    expect(body.error!.message).toMatch(
      /max-sessions.*2 of them by ended sessions whose upstream servers are still finishing tasks/,
    );
    // Once their tasks are done their servers stop, and the slots are free again.
    const signal = AbortSignal.timeout(15_000);
    while ((gateway.stderr.match(/upstream server exited/g) ?? []).length < 2) {
      await once(gateway.child.stderr, 'data', { signal });
    }
    const opened = await post(url, INITIALIZE);
    expect(opened.status).toBe(200);
    await opened.text();
  });
});

describe('memory kept for clients', () => {
  it('issue 13.8: 300 events of 1 MB on a stream its client left keep only http.eventLogBytes (16 MiB); a resumption that needs a dropped one gets 410', async () => {
    const gateway = await start([], FLOOD);
    const sessionId = await openSession(gateway.url);
    const controller = new AbortController();
    const flood = {
      jsonrpc: '2.0',
      id: 'flood',
      method: 'tools/call',
      params: { name: 'flood', arguments: { count: 300, bytes: MIB }, _meta: { progressToken: 'f' } },
    };
    const response = await post(gateway.url, flood, inSession(sessionId), controller.signal);
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const reader = response.body!.getReader();
    let head = '';
    while (!/^id: (\S+)$/m.test(head)) head += new TextDecoder().decode((await reader.read()).value);
    const firstId = /^id: (\S+)$/m.exec(head)![1]!;
    // The client goes away; the 300 events and the answer are kept for it, within bounds.
    controller.abort();
    await gateway.logged('flood done 300', 60_000);
    const streamId = firstId.slice(0, firstId.lastIndexOf('.'));
    const headers = { accept: 'text/event-stream', ...inSession(sessionId) };
    // The answer follows the last progress event (301 events); keeping them all is what 13.8 was about.
    await within(
      (async () => {
        for (;;) {
          const late = await fetch(gateway.url, {
            headers: { ...headers, 'last-event-id': `${streamId}.300` },
          });
          const text = await late.text();
          if (late.status === 200 && text.includes('flooded 300')) return;
        }
      })(),
      10_000,
      'a resumption from the last progress event with the answer',
    );
    const peak = peakRssMib(gateway.child.pid!);
    console.log(`issue 13.8: taskgate peak RSS ${peak.toFixed(0)} MiB after 300 events of 1 MiB`);
    const early = await fetch(gateway.url, { headers: { ...headers, 'last-event-id': firstId } });
    expect(early.status).toBe(410);
    const refusal = (await early.json()) as SseMessage;
    expect(refusal.error).toMatchObject({ code: -32600 });
    expect(refusal.error!.message).toMatch(/no longer kept/);
    // Kept in full it was over 400 MiB; kept within the bound, about 200 (the rest is garbage not yet swept).
    expect(peak).toBeLessThan(300);
  });

  it('issue 13.8: what all sessions keep together is bounded too, the oldest anywhere dropped first', () => {
    const shared = new KeptBytes(3 * MIB);
    const alice = new KeptMessages<{ data: Buffer; n: number }>(100, 10 * MIB, shared);
    const bob = new KeptMessages<{ data: Buffer; n: number }>(100, 10 * MIB, shared);
    for (let n = 0; n < 4; n++) (n % 2 === 0 ? alice : bob).push({ data: Buffer.alloc(MIB), n });
    expect(alice.all.map((kept) => kept.n)).toEqual([2]);
    expect(bob.all.map((kept) => kept.n)).toEqual([1, 3]);
    // Taking one out frees its room: nothing else has to go for the next.
    bob.shift();
    alice.push({ data: Buffer.alloc(MIB), n: 4 });
    expect(alice.all.map((kept) => kept.n)).toEqual([2, 4]);
    expect(bob.all.map((kept) => kept.n)).toEqual([3]);
  });
});

describe("the operator's pages", () => {
  it('issue 13.16: with auth, /metrics and /dashboard on the front are for auth.adminSubjects only; any other caller gets 403', async () => {
    const alice = 'token-of-alice-0123456789';
    const bob = 'token-of-bob-0123456789ab';
    const config = join(mkdtempSync(join(tmpdir(), 'taskgate-hostile-http-')), 'config.yaml');
    writeFileSync(
      config,
      `auth:\n  tokens:\n    - { token: ${alice}, subject: alice }\n    - { token: ${bob}, subject: bob }\n  adminSubjects: [alice]\n`,
    );
    const { url } = await start(['--config', config]);
    const page = (path: string, token?: string) =>
      fetch(new URL(path, url), token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } });
    for (const path of ['/metrics', '/dashboard', '/dashboard/data']) {
      const refused = await page(path, bob);
      expect(refused.status).toBe(403);
      expect(await refused.text()).toMatch(/for operators/);
      expect((await page(path)).status).toBe(401);
      const served = await page(path, alice);
      expect(served.status).toBe(200);
      await served.text();
    }
  });

  it('issue 13.16: with auth and no admin subjects, the pages are not readable on the front by any token', async () => {
    const token = 'token-of-alice-0123456789';
    const { url } = await start(['--auth-token', `${token}=alice`]);
    const metrics = await fetch(new URL('/metrics', url), { headers: { authorization: `Bearer ${token}` } });
    expect(metrics.status).toBe(403);
    expect(await metrics.text()).toMatch(/--admin-listen/);
  });
});

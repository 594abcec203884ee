/**
 * Issue 33: a big notification of the upstream that taskgate only routes (a log line, a list change, any
 * it does not read the params of) reaches the client as the bytes the server wrote, never JSON.parsed, and
 * scanned once: from a 2025 server and from a 2026-07-28 one (behind the era probe and the translator) over
 * stdio, the Session between LineChannels over in-memory pipes; and through a shared upstream (the
 * multiplexer routes it by the scan's `_meta` and `level`), a real SDK server over HTTP in the test's own
 * process.
 */
import type { PassThrough } from 'node:stream';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { resolveConfig } from '../../src/config/load.js';
import { ProbingUpstream } from '../../src/modern/probing-upstream.js';
import { MODERN_VERSIONS } from '../../src/protocol/modern/meta.js';
import { serveInProcess } from '../helpers/in-process-http.js';
import { watchBytes } from '../helpers/byte-watch.js';
import { Inbox } from '../helpers/inbox.js';
import { memoryGateway } from '../helpers/memory-gateway.js';
import { pipedSession } from '../helpers/piped-session.js';
import { inSession, openSession, post } from '../helpers/raw-http.js';
import { INITIALIZE } from '../helpers/taskgate.js';
import { runCleanups, type Cleanups } from '../helpers/upstream-harness.js';

type Json = Record<string, unknown>;

const LENGTH = 1_000_000;
const PIPE_CHUNK = 64 * 1024;
/** A notification no rule reads: routed by the stream it came on alone (no log line's fallback to the one call). */
const CUSTOM = 'notifications/example/data';

const cleanups: Cleanups = [];
afterEach(() => runCleanups(cleanups));

/** A line as a pipe delivers it: in reads of at most 64 KiB, the newline with the last. */
function writeLine(stream: PassThrough, line: Buffer): void {
  const whole = Buffer.concat([line, Buffer.from('\n')]);
  for (let at = 0; at < whole.length; at += PIPE_CHUNK) stream.write(whole.subarray(at, at + PIPE_CHUNK));
}

/**
 * A log line as a server may write it, with what a re-serialization would change (escapes JSON.stringify
 * writes otherwise, spaces, key order) and a `_meta` that names no request or task.
 */
function logLine(method: string, bytes: number): Buffer {
  const text = String.raw`caf\u00e9 \/ \"quoted\" \\ line\n`;
  const data = text.repeat(Math.ceil(bytes / text.length));
  return Buffer.from(
    `{ "params" : { "data" : "${data}", "_meta":{"k":1} , "level":"info" }, "method" : "${method}", "jsonrpc":"2.0" }`,
  );
}

/** The Session over stdio pipes, in front of a 2025 server or, behind the probe, a 2026-07-28 one. */
async function stdioGateway(era: 'legacy' | 'modern') {
  const logger = pino({ level: 'silent' });
  const { fromClient, toClient, fromServer, toServer, close } = pipedSession({
    limit: 8 * 1024 * 1024,
    maxResultBytes: 1024,
    ...(era === 'modern' && {
      upstream: (server) => new ProbingUpstream(server, 'modern', 5_000, logger),
    }),
  });
  cleanups.push(close);
  // The client's output as it came, and how many bytes it has come to: never joined while watched.
  const output: Buffer[] = [];
  const total = new Inbox<number>();
  let bytes = 0;
  toClient.on('data', (chunk: Buffer) => {
    output.push(chunk);
    total.push((bytes += chunk.length));
  });
  let pending = '';
  toServer.on('data', (chunk: Buffer) => {
    pending += chunk.toString();
    for (let nl = pending.indexOf('\n'); nl !== -1; nl = pending.indexOf('\n')) {
      const message = JSON.parse(pending.slice(0, nl)) as Json;
      pending = pending.slice(nl + 1);
      const result =
        message.method === 'server/discover'
          ? { supportedVersions: MODERN_VERSIONS, capabilities: { tools: {}, logging: {} }, _meta: {} }
          : message.method === 'initialize'
            ? {
                protocolVersion: '2025-11-25',
                capabilities: { tools: {}, logging: {} },
                serverInfo: { name: 's', version: '1' },
              }
            : undefined;
      if (result !== undefined) {
        writeLine(fromServer, Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: message.id, result })));
      }
    }
  });
  fromClient.write(`${JSON.stringify(INITIALIZE)}\n`);
  await total.waitFor(() => output.at(-1)!.includes('\n'), 'the initialize answer');
  fromClient.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
  /** The server writes the line; the bytes the client got from then on, once they are as many. */
  const relayed = async (line: Buffer): Promise<Buffer[]> => {
    const [from, start] = [output.length, bytes];
    writeLine(fromServer, line);
    await total.waitFor((count) => count > start + line.length, 'the line at the client');
    return output.slice(from);
  };
  return { relayed };
}

describe('issue 33: a big notification the session only routes goes to the client as its bytes', () => {
  for (const era of ['legacy', 'modern'] as const) {
    for (const method of ['notifications/message', 'notifications/resources/list_changed']) {
      it(`${method} of a ${era === 'legacy' ? '2025' : '2026-07-28'} server over stdio: byte for byte, scanned once, never JSON.parsed`, async () => {
        const gate = await stdioGateway(era);
        const line = logLine(method, LENGTH);
        const { value: got, ...watch } = await watchBytes(LENGTH, () => gate.relayed(line));
        expect(Buffer.concat(got).equals(Buffer.concat([line, Buffer.from('\n')]))).toBe(true);
        expect(watch.parsedAnywhere).toBe(0);
        expect(watch.joins).toEqual([]);
        expect(watch.scannedBytes).toBe(line.length);
      });
    }
  }
});

/** A real SDK server whose `log` tool sends a notification `method` with `length` characters of data, then answers. */
async function loggingServer(): Promise<string> {
  const makeServer = () => {
    const server = new McpServer({ name: 'log', version: '1' }, { capabilities: { logging: {} } });
    server.registerTool(
      'log',
      { inputSchema: { length: z.number(), method: z.string() } },
      async (args, extra) => {
        const { length, method } = args;
        await extra.sendNotification({
          method: method as 'notifications/message',
          params: { level: 'info', data: 'a "b" \\ c\n'.repeat(length / 10) },
        });
        return { content: [{ type: 'text', text: 'logged' }] };
      },
    );
    return server.server;
  };
  const served = await serveInProcess(makeServer, 'log');
  cleanups.push(served.close);
  return served.url;
}

describe('issue 33: a big log line of an HTTP upstream, on the stream of the call it came during', () => {
  for (const sharing of ['session', 'shared'] as const) {
    it(`upstream.sharing ${sharing}: reaches that session, never JSON.parsed, scanned once`, async () => {
      const config = resolveConfig({
        http: { listen: '127.0.0.1:0' },
        upstream: { url: await loggingServer(), era: 'legacy', sharing },
      });
      const gateway = await memoryGateway(config);
      cleanups.push(() => gateway.close());
      const sessions = [await openSession(gateway.url), await openSession(gateway.url)];
      const call = {
        jsonrpc: '2.0',
        id: 3,
        method: 'tools/call',
        params: { name: 'log', arguments: { length: LENGTH, method: CUSTOM } },
      };
      const { value: streams, ...watch } = await watchBytes(LENGTH, async () => {
        const response = await post(gateway.url, call, inSession(sessions[0]!));
        expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
        return response.text();
      });
      expect(watch.parsedAnywhere).toBe(0);
      expect(watch.scannedBytes).toBeGreaterThan(LENGTH);
      expect(watch.scannedBytes).toBeLessThan(2 * LENGTH);
      const events = [...streams.matchAll(/^data: (.*)$/gm)].map((match) => JSON.parse(match[1]!) as Json);
      expect(events).toHaveLength(2);
      expect(events[0]).toMatchObject({
        method: CUSTOM,
        params: { level: 'info', data: 'a "b" \\ c\n'.repeat(LENGTH / 10) },
      });
      expect(events[1]).toMatchObject({ id: 3, result: { content: [{ type: 'text', text: 'logged' }] } });
    });
  }

  it('upstream.sharing shared: dropped, unparsed, for a session whose log level it is below', async () => {
    const config = resolveConfig({
      http: { listen: '127.0.0.1:0' },
      upstream: { url: await loggingServer(), era: 'legacy', sharing: 'shared' },
    });
    const gateway = await memoryGateway(config);
    cleanups.push(() => gateway.close());
    const session = await openSession(gateway.url);
    const setLevel = { jsonrpc: '2.0', id: 2, method: 'logging/setLevel', params: { level: 'error' } };
    expect(await (await post(gateway.url, setLevel, inSession(session))).text()).toContain('"result"');
    const call = {
      jsonrpc: '2.0',
      id: 3,
      method: 'tools/call',
      params: { name: 'log', arguments: { length: LENGTH, method: 'notifications/message' } },
    };
    const { value: stream, ...watch } = await watchBytes(LENGTH, async () =>
      (await post(gateway.url, call, inSession(session))).text(),
    );
    expect(watch.parsedAnywhere).toBe(0);
    expect(watch.scannedBytes).toBeGreaterThan(LENGTH);
    expect(stream).not.toContain('notifications/message');
    expect(stream).toContain('"logged"');
  });
});

/**
 * A real SDK server whose `wait` tool holds until the test opens its gate, then, with `length`, sends a
 * CUSTOM notification of that many characters on its own request stream, and answers.
 */
async function gatedServer() {
  const entered = new Inbox<string>();
  const gates = new Map<string, () => void>();
  const makeServer = () => {
    const server = new McpServer({ name: 'gated', version: '1' }, { capabilities: { logging: {} } });
    server.registerTool(
      'wait',
      { inputSchema: { gate: z.string(), length: z.number() } },
      async ({ gate, length }, extra) => {
        await new Promise<void>((open) => {
          gates.set(gate, open);
          entered.push(gate);
        });
        if (length > 0) {
          await extra.sendNotification({
            method: CUSTOM as 'notifications/message',
            params: { level: 'info', data: gate.repeat(length / gate.length) },
          });
        }
        return { content: [{ type: 'text', text: gate }] };
      },
    );
    return server.server;
  };
  const { url, close } = await serveInProcess(makeServer, 'gated');
  cleanups.push(async () => {
    for (const open of gates.values()) open();
    await close();
  });
  /** The gate, once its call is at the server, opened. */
  const open = async (gate: string) => {
    await entered.waitFor((name) => name === gate, `the call of gate ${gate} at the server`);
    gates.get(gate)!();
  };
  return { url, entered, open };
}

/** What an answer carried: each event's data of an SSE stream, or a JSON body, parsed. */
const eventsOf = (body: string): Json[] =>
  body.startsWith('{')
    ? [JSON.parse(body) as Json]
    : [...body.matchAll(/^data: (.*)$/gm)].map((match) => JSON.parse(match[1]!) as Json);

const sizeOf = (data: unknown) =>
  typeof data === 'string' ? `${data.length} characters: ${data.slice(0, 10)}…` : data;

const wait = (id: number, gate: string, length: number) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name: 'wait', arguments: { gate, length } },
});

describe('issues 28 and 33: a notification on a call stream of an HTTP upstream keeps its route', () => {
  // A big one goes as its bytes; a small one (under SCAN_FROM_BYTES), parsed, the same way.
  for (const [size, length] of [
    ['big', LENGTH],
    ['small', 200],
  ] as const) {
    for (const sharing of ['session', 'shared'] as const) {
      it(`upstream.sharing ${sharing}, ${size}: two calls of a session and one of another in flight, on the first's stream only`, async () => {
        const server = await gatedServer();
        const config = resolveConfig({
          http: { listen: '127.0.0.1:0' },
          upstream: { url: server.url, era: 'legacy', sharing },
        });
        const gateway = await memoryGateway(config);
        cleanups.push(() => gateway.close());
        const [session, other] = [await openSession(gateway.url), await openSession(gateway.url)];
        const { value: streams, ...watch } = await watchBytes(LENGTH, async () => {
          // Each call opens after the one before: an unrouted message would take a newer stream than the first's.
          const calls = [
            post(gateway.url, wait(3, 'first', length), inSession(session)),
            post(gateway.url, wait(4, 'second', 0), inSession(session)),
            post(gateway.url, wait(5, 'other', 0), inSession(other)),
          ];
          for (const gate of ['first', 'second', 'other']) {
            await server.entered.waitFor((name) => name === gate, `the call of gate ${gate} at the server`);
          }
          await server.open('first');
          const first = await (await calls[0]!).text();
          await server.open('second');
          await server.open('other');
          return { first, second: await (await calls[1]!).text(), other: await (await calls[2]!).text() };
        });
        expect(watch.parsedAnywhere).toBe(0);
        // Each event by what it is, the notification's data by its size and first characters.
        const seen = (stream: string) =>
          eventsOf(stream).map((event) =>
            event.method === undefined
              ? { id: event.id, result: event.result }
              : { method: event.method, data: sizeOf((event.params as Json).data) },
          );
        const answer = (id: number, text: string) => ({ id, result: { content: [{ type: 'text', text }] } });
        expect(seen(streams.first)).toEqual([
          { method: CUSTOM, data: sizeOf('first'.repeat(length / 5)) },
          answer(3, 'first'),
        ]);
        expect(seen(streams.second)).toEqual([answer(4, 'second')]);
        expect(seen(streams.other)).toEqual([answer(5, 'other')]);
      });
    }
  }
});

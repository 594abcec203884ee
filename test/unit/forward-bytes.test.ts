/**
 * Issue 33: an upstream answer taskgate does not change reaches a stdio client as the bytes the server
 * wrote, never decoded and re-encoded; when taskgate renumbered the request, only the id's bytes differ.
 * So does a client request taskgate renumbers reach the server.
 * taskgate's Session between two LineChannels over in-memory pipes, a server that writes its own lines
 * (in pipe-sized chunks) and a client that reads raw lines.
 */
import type { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { memoryChannelPair } from '../../src/transport/memory-channel.js';
import { byteLines } from '../helpers/byte-lines.js';
import { Inbox } from '../helpers/inbox.js';
import { pipedSession } from '../helpers/piped-session.js';
import { INITIALIZE } from '../helpers/taskgate.js';

type Json = Record<string, unknown>;

const LIMIT = 8 * 1024 * 1024;
const PIPE_CHUNK = 64 * 1024;
const LARGE = '9007199254740993';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A line written as a pipe delivers it: in chunks of at most 64 KiB, the newline with the last. */
function writeInChunks(stream: PassThrough, line: Buffer): Buffer {
  const whole = Buffer.concat([line, Buffer.from('\n')]);
  for (let at = 0; at < whole.length; at += PIPE_CHUNK) stream.write(whole.subarray(at, at + PIPE_CHUNK));
  return whole;
}

/** `memory`: the client is a peer in memory (as the 2026-07-28 bridge is), which is handed parsed values. */
async function gateway(clientKind: 'stdio' | 'memory' = 'stdio', serverTasks = false) {
  const inMemory = memoryChannelPair();
  const { fromClient, toClient, fromServer, toServer, close } = pipedSession({
    limit: LIMIT,
    maxResultBytes: 1024,
    ...(clientKind === 'memory' ? { client: inMemory.b } : {}),
  });
  cleanups.push(close);
  const client = new Inbox<Buffer>();
  const handed: (object | undefined)[] = [];
  byteLines(toClient, (line) => client.push(line));
  inMemory.a.start({
    message: (raw, _arrival, parsed) => {
      handed.push(parsed);
      client.push(raw);
    },
    malformed: () => undefined,
    closed: () => undefined,
  });
  const server = new Inbox<Json>();
  const serverLines = new Inbox<Buffer>();
  byteLines(toServer, (line) => {
    serverLines.push(line);
    const message = JSON.parse(line.toString()) as Json;
    // The server answers what taskgate asks on its own; the test answers the rest.
    if (message.method === 'initialize') {
      serverSends({
        jsonrpc: '2.0',
        id: message.id,
        result: {
          protocolVersion: '2025-11-25',
          capabilities: {
            tools: {},
            ...(serverTasks && { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } }),
          },
          serverInfo: { name: 's', version: '1' },
        },
      });
    } else if (message.method === 'tools/list') {
      serverSends({
        jsonrpc: '2.0',
        id: message.id,
        result: { tools: [{ name: 'big', inputSchema: { type: 'object' } }] },
      });
    } else {
      server.push(message);
    }
  });
  const serverSends = (message: Json): void =>
    void writeInChunks(fromServer, Buffer.from(JSON.stringify(message)));
  const clientSends = (line: string): void =>
    clientKind === 'stdio' ? void fromClient.write(`${line}\n`) : inMemory.a.sendRaw(line);
  clientSends(JSON.stringify(INITIALIZE));
  await client.waitFor((line) => line.includes('"protocolVersion"'), 'the initialize answer');
  clientSends(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
  return {
    client,
    handed,
    server,
    serverLines,
    clientSends,
    serverWrites: (line: Buffer) => writeInChunks(fromServer, line),
    toClient,
  };
}

const call = (id: string): string =>
  `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"big","arguments":{}}}`;

/**
 * A result as a server may write it, with what a re-serialization would change: escapes JSON.stringify
 * writes otherwise (`\u00e9`, `\/`), spaces, and the id last.
 */
function resultLine(id: string, bytes: number): Buffer {
  const text = String.raw`caf\u00e9 \/ \"quoted\" \\ line\n`;
  const body = text.repeat(Math.ceil(bytes / text.length));
  return Buffer.from(
    `{ "result" : {"content":[{"type":"text","text":"${body}"}], "_meta":{"k":1}}, "jsonrpc":"2.0" , "id" : ${id} }`,
  );
}

describe('issue 33: an unchanged answer goes to the client as the bytes the server wrote', () => {
  it('a 5 MB result, byte for byte', async () => {
    const gate = await gateway();
    gate.clientSends(call('1'));
    const asked = await gate.server.waitFor((m) => m.method === 'tools/call', 'the call upstream');
    expect(asked.id).toBe(1);
    const line = resultLine('1', 5_000_000);
    gate.serverWrites(line);
    const got = await gate.client.waitFor((l) => l.length > 1_000_000, 'the result');
    expect(got.length).toBe(line.length);
    expect(got.equals(line)).toBe(true);
  });

  it('a 5 MB result goes out as the very reads it came in, the id written over in one: no copy of it made', async () => {
    const gate = await gateway();
    const written: Buffer[] = [];
    gate.toClient.on('data', (chunk: Buffer) => written.push(chunk));
    gate.clientSends(call(LARGE));
    const asked = await gate.server.waitFor((m) => m.method === 'tools/call', 'the call upstream');
    const line = resultLine(JSON.stringify(asked.id), 5_000_000);
    const whole = gate.serverWrites(line);
    const got = await gate.client.waitFor((l) => l.length > 1_000_000, 'the result');
    expect(got.toString('latin1', got.length - 60)).toMatch(new RegExp(`"id" : ${LARGE} +}$`));
    const big = written.filter((chunk) => chunk.length > 1000);
    expect(big.reduce((sum, chunk) => sum + chunk.length, 0)).toBe(line.length);
    expect(big.filter((chunk) => chunk.buffer !== whole.buffer)).toHaveLength(0);
  });

  it('an id beyond 2^53: the server’s bytes with the exact digits written over its id, in place', async () => {
    const gate = await gateway();
    gate.clientSends(call(LARGE));
    const asked = await gate.server.waitFor((m) => m.method === 'tools/call', 'the call upstream');
    // The server gets a string that stands for the number (exact-ids.ts), and answers with it.
    expect(typeof asked.id).toBe('string');
    const line = resultLine(JSON.stringify(asked.id), 5_000_000);
    gate.serverWrites(line);
    const got = await gate.client.waitFor((l) => l.length > 1_000_000, 'the result');
    expect(got.length).toBe(line.length);
    const idAt = line.lastIndexOf(JSON.stringify(asked.id));
    const idEnd = idAt + JSON.stringify(asked.id).length;
    expect(got.subarray(0, idAt).equals(line.subarray(0, idAt))).toBe(true);
    expect(got.subarray(idEnd).equals(line.subarray(idEnd))).toBe(true);
    expect(got.toString('latin1', idAt, idEnd).trimEnd()).toBe(LARGE);
    expect(got.toString('latin1', got.length - 60)).toMatch(new RegExp(`"id" : ${LARGE} +}$`));
  });

  it('an id taskgate renumbered (the client reused one in flight): only the id differs', async () => {
    const gate = await gateway();
    gate.clientSends(call('7'));
    const first = await gate.server.waitFor((m) => m.method === 'tools/call', 'the first call upstream');
    gate.clientSends(call('7'));
    const second = await gate.server.waitFor((m) => m.method === 'tools/call' && m !== first, 'the second');
    expect(first.id).toBe(7);
    expect(second.id).not.toBe(7);
    const line = resultLine(JSON.stringify(second.id), 2_000_000);
    gate.serverWrites(line);
    const got = await gate.client.waitFor((l) => l.length > 1_000_000, 'the result');
    const idText = JSON.stringify(second.id);
    const idAt = line.lastIndexOf(idText);
    expect(got.length).toBe(line.length);
    expect(got.subarray(0, idAt).equals(line.subarray(0, idAt))).toBe(true);
    expect(got.subarray(idAt + idText.length).equals(line.subarray(idAt + idText.length))).toBe(true);
    expect((JSON.parse(got.toString()) as Json).id).toBe(7);
  });

  it('a renumbered id longer than the server’s: the bytes around it as the server wrote them', async () => {
    const gate = await gateway();
    const long = JSON.stringify('a request id longer than the one taskgate gives a reused id'.repeat(2));
    gate.clientSends(call(long));
    const first = await gate.server.waitFor((m) => m.method === 'tools/call', 'the first call upstream');
    gate.clientSends(call(long));
    const second = await gate.server.waitFor((m) => m.method === 'tools/call' && m !== first, 'the second');
    const idText = JSON.stringify(second.id);
    expect(idText.length).toBeLessThan(long.length);
    const line = resultLine(idText, 2_000_000);
    gate.serverWrites(line);
    const got = await gate.client.waitFor((l) => l.length > 1_000_000, 'the result');
    const idAt = line.lastIndexOf(idText);
    expect(got.length).toBe(line.length - idText.length + long.length);
    expect(got.subarray(0, idAt).equals(line.subarray(0, idAt))).toBe(true);
    expect(got.toString('utf8', idAt, idAt + long.length)).toBe(long);
    expect(got.subarray(idAt + long.length).equals(line.subarray(idAt + idText.length))).toBe(true);
  });

  it('a renumbered answer with its id twice goes the usual way: the client gets one id, its own', async () => {
    const gate = await gateway();
    gate.clientSends(call(LARGE));
    const asked = await gate.server.waitFor((m) => m.method === 'tools/call', 'the call upstream');
    const idText = JSON.stringify(asked.id);
    gate.serverWrites(Buffer.from(`{"id":${idText},${resultLine(idText, 100_000).toString().slice(1)}`));
    const got = await gate.client.waitFor((l) => l.length > 50_000, 'the result');
    const text = got.toString();
    expect(text.match(/"id"\s*:/g)).toHaveLength(1);
    expect(text.startsWith(`{"id":${LARGE},`)).toBe(true);
  });

  it('to a client in memory, which reads the value handed beside the bytes, it is parsed once and handed', async () => {
    const gate = await gateway('memory');
    gate.clientSends(call('1'));
    await gate.server.waitFor((m) => m.method === 'tools/call', 'the call upstream');
    const line = resultLine('1', 100_000);
    gate.serverWrites(line);
    const got = await gate.client.waitFor((l) => l.length > 50_000, 'the result');
    expect(got.equals(line)).toBe(true);
    expect(gate.handed.at(-1)).toEqual(JSON.parse(line.toString()));
  });

  it('a tasks/result of the server’s own task, renumbered: as bytes, the id in place', async () => {
    const gate = await gateway('stdio', true);
    gate.clientSends(`{"jsonrpc":"2.0","id":${LARGE},"method":"tasks/result","params":{"taskId":"t1"}}`);
    const asked = await gate.server.waitFor((m) => m.method === 'tasks/result', 'tasks/result upstream');
    const idText = JSON.stringify(asked.id);
    const line = Buffer.from(
      `{"result":{"content":[{"type":"text","text":"${'caf\\u00e9 '.repeat(100_000)}"}],"isError":true},"jsonrpc":"2.0","id":${idText}}`,
    );
    gate.serverWrites(line);
    const got = await gate.client.waitFor((l) => l.length > 100_000, 'the result');
    const idAt = line.lastIndexOf(idText);
    expect(got.length).toBe(line.length);
    expect(got.subarray(0, idAt).equals(line.subarray(0, idAt))).toBe(true);
    expect(got.toString('latin1', idAt, idAt + idText.length).trimEnd()).toBe(LARGE);
  });

  it('a large answer that is not JSON, or too deep, never reaches the client: the call fails as before', async () => {
    const gate = await gateway();
    gate.clientSends(call('1'));
    await gate.server.waitFor((m) => m.id === 1, 'the first call upstream');
    const broken = resultLine('1', 100_000);
    broken[50_000] = 0x01; // a control character inside the text
    gate.serverWrites(broken);
    gate.clientSends(call('2'));
    await gate.server.waitFor((m) => m.id === 2, 'the second call upstream');
    gate.serverWrites(
      Buffer.from(`{"jsonrpc":"2.0","id":2,"result":{"a":${'['.repeat(600)}${']'.repeat(600)}}}`),
    );
    const errors = await Promise.all(
      [1, 2].map((id) =>
        gate.client.waitFor((l) => (JSON.parse(l.toString()) as Json).id === id, `the answer to ${id}`),
      ),
    );
    for (const line of errors) {
      const answer = JSON.parse(line.toString()) as { error?: { message: string } };
      expect(answer.error?.message).toBeTypeOf('string');
    }
    for (const line of gate.client.items) expect(() => JSON.parse(line.toString())).not.toThrow();
  });
});

describe('issue 33: a client request taskgate renumbers goes upstream as the bytes the client wrote', () => {
  it('a 2 MB request with odd spacing and escapes, byte for byte but for its id', async () => {
    const gate = await gateway();
    gate.clientSends(call('7'));
    await gate.server.waitFor((m) => m.method === 'tools/call', 'the first call upstream');
    // What a re-serialization would change: escapes JSON.stringify writes otherwise, spaces, key order.
    const text = String.raw`caf\u00e9 \/ \"quoted\" \\ line\n`.repeat(60_000);
    const before = `{ "jsonrpc" : "2.0" ,"method":"tools/call" , "id" :  `;
    const after = ` , "params" : { "arguments" : {"text" : "${text}"} , "name":"big" } }`;
    gate.clientSends(`${before}7${after}`);
    const got = await gate.serverLines.waitFor((l) => l.length > 1_000_000, 'the renumbered call upstream');
    const wireId = (JSON.parse(got.toString()) as Json).id;
    expect(wireId).not.toBe(7);
    expect(got.toString()).toBe(`${before}${JSON.stringify(wireId)}${after}`);
  });

  it('one with its id twice goes serialised, with one id: the wire id', async () => {
    const gate = await gateway();
    gate.clientSends(call('7'));
    await gate.server.waitFor((m) => m.method === 'tools/call', 'the first call upstream');
    gate.clientSends(`{"id":"first",${call('7').slice(1)}`);
    const got = await gate.serverLines.waitFor(
      (l) => l.includes('tools/call') && !l.includes('"id":7'),
      'the renumbered call upstream',
    );
    const text = got.toString();
    expect(text.match(/"id"\s*:/g)).toHaveLength(1);
    expect((JSON.parse(text) as Json).id).not.toBe(7);
  });
});

describe('issue 33: a small answer (under 1 KiB, read by smallAnswer) goes as its bytes too', () => {
  const small = (id: string): Buffer => resultLine(id, 200);

  it('renumbered, or an id beyond 2^53: only the id differs, written in place', async () => {
    const gate = await gateway();
    gate.clientSends(call('7'));
    const first = await gate.server.waitFor((m) => m.method === 'tools/call', 'the first call upstream');
    gate.clientSends(call('7'));
    const second = await gate.server.waitFor((m) => m.method === 'tools/call' && m !== first, 'the second');
    gate.clientSends(call(LARGE));
    const third = await gate.server.waitFor((m) => String(m.id).endsWith(`:${LARGE}`), 'the large id');
    for (const [asked, expected] of [
      [second.id, '7'],
      [third.id, LARGE],
    ] as const) {
      const idText = JSON.stringify(asked);
      const line = small(idText);
      expect(line.length).toBeLessThan(1024);
      gate.serverWrites(line);
      const got = await gate.client.waitFor((l) => l.includes('caf\\u00e9') && !l.includes(idText), expected);
      const idAt = line.lastIndexOf(idText);
      expect(got.length).toBe(line.length);
      expect(got.subarray(0, idAt).equals(line.subarray(0, idAt))).toBe(true);
      expect(got.toString('latin1', idAt, idAt + idText.length).trimEnd()).toBe(expected);
      expect(got.subarray(idAt + idText.length).equals(line.subarray(idAt + idText.length))).toBe(true);
      gate.client.items.splice(gate.client.items.indexOf(got), 1);
    }
  });

  it('one with its id twice, not JSON, or too deep goes the usual way', async () => {
    const gate = await gateway();
    gate.clientSends(call(LARGE));
    const asked = await gate.server.waitFor((m) => m.method === 'tools/call', 'the call upstream');
    const idText = JSON.stringify(asked.id);
    gate.serverWrites(Buffer.from(`{"id":${idText},${small(idText).toString().slice(1)}`));
    const twice = (await gate.client.waitFor((l) => l.includes('caf'), 'the answer')).toString();
    expect(twice.match(/"id"\s*:/g)).toHaveLength(1);
    expect(twice.startsWith(`{"id":${LARGE},`)).toBe(true);
    const broken = small('2');
    broken[100] = 0x01; // a control character inside the text
    const lines = [broken, Buffer.from(`{"jsonrpc":"2.0","id":3,"result":{"a":${'['.repeat(600)}}}`)];
    for (const [k, line] of lines.entries()) {
      gate.clientSends(call(String(k + 2)));
      await gate.server.waitFor((m) => m.id === k + 2, `call ${k + 2} upstream`);
      gate.serverWrites(line);
      const got = await gate.client.waitFor(
        (l) => (JSON.parse(l.toString()) as Json).id === k + 2,
        `${k + 2}`,
      );
      expect((JSON.parse(got.toString()) as { error?: { message: string } }).error?.message).toBeTypeOf(
        'string',
      );
    }
  });
});

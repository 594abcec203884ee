/**
 * A message handed beside its bytes (Channel.sendRaw's `parsed`, as the modern bridge hands its requests
 * to the Session over a memory channel) is read from the value, and handed on with the bytes it came with.
 */
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { Policy } from '../../src/config/policy.js';
import { resolveConfig } from '../../src/config/load.js';
import { Session } from '../../src/session/session.js';
import { MemoryTaskStore } from '../../src/tasks/memory-store.js';
import { memoryChannelPair, type MemoryChannel } from '../../src/transport/memory-channel.js';
import { Inbox } from '../helpers/inbox.js';

interface Delivery {
  text: string;
  parsed: Record<string, unknown> | undefined;
}

const sessions: Session[] = [];
afterEach(async () => {
  for (const session of sessions.splice(0)) await session.close();
});

function peer(channel: MemoryChannel): Inbox<Delivery> {
  const inbox = new Inbox<Delivery>();
  channel.start({
    message: (raw, _arrival, parsed) =>
      inbox.push({ text: raw.toString(), parsed: parsed as Record<string, unknown> | undefined }),
    malformed: () => undefined,
    closed: () => undefined,
  });
  return inbox;
}

describe('Session and a message handed beside its bytes', () => {
  it('reads the handed request, not its bytes, and hands it on to the upstream with them', async () => {
    const config = resolveConfig({});
    const toClient = memoryChannelPair();
    const toServer = memoryChannelPair();
    const store = new MemoryTaskStore({ maxTasks: 10, maxResultBytes: 1024 });
    const session = new Session(
      toClient.b,
      toServer.a,
      { id: 'handed', config, policy: new Policy(config), store, logger: pino({ level: 'silent' }) },
      { upstreamGone: () => undefined, closed: () => undefined },
    );
    sessions.push(session);
    session.start();
    const client = peer(toClient.a);
    const server = peer(toServer.b);

    const initialize = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'c', version: '1' } },
    };
    toClient.a.sendRaw(JSON.stringify(initialize));
    const asked = await server.waitFor((d) => d.text.includes('"initialize"'), 'initialize upstream');
    const id = (JSON.parse(asked.text) as { id: unknown }).id;
    toServer.b.send({
      jsonrpc: '2.0',
      id,
      result: {
        protocolVersion: '2025-11-25',
        capabilities: { resources: {} },
        serverInfo: { name: 's', version: '1' },
      },
    });
    await client.waitFor((d) => d.text.includes('"protocolVersion"'), 'the initialize answer');
    toClient.a.sendRaw(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));

    // Bytes that are not the request: had the Session read them, it would have refused them (-32600).
    const list = { jsonrpc: '2.0', id: 2, method: 'resources/list', params: {} };
    toClient.a.sendRaw('{"not": "the request"}', undefined, list);
    const forwarded = await server.waitFor((d) => d.parsed?.method === 'resources/list', 'the call upstream');
    expect(forwarded).toEqual({ text: '{"not": "the request"}', parsed: list });
    expect(client.items.filter((d) => d.text.includes('"error"'))).toEqual([]);
  });
});

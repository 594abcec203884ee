/**
 * The Channel contract (test/channel-contract.ts) for the channels that need no process or socket: the
 * memory pair, the line channel over a pair of in-memory streams (as over stdin/stdout or a child's
 * pipes), and a port of a shared upstream (its peer the server on the far end of a memory pair).
 */
import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import { pino } from 'pino';
import { LineChannel } from '../../src/transport/line-channel.js';
import { memoryChannelPair } from '../../src/transport/memory-channel.js';
import { sharedSessionRules } from '../../src/session/shared-sessions.js';
import { SharedUpstream } from '../../src/transport/shared-upstream.js';
import { describeChannelContract, type ChannelUnderTest } from '../channel-contract.js';
import { Inbox } from '../helpers/inbox.js';

function memoryUnderTest(): ChannelUnderTest {
  const { a, b } = memoryChannelPair();
  const received = new Inbox<string>();
  const closesSeen = new Inbox<'closed'>();
  b.start({
    message: (raw) => received.push(raw.toString('utf8')),
    malformed: () => undefined,
    closed: () => closesSeen.push('closed'),
  });
  return {
    channel: a,
    peer: { send: (raw) => b.sendRaw(raw), received, close: () => void b.close(), closesSeen },
    dispose: async () => {
      await a.close();
      await b.close();
    },
  };
}

const LINE_LIMIT = 64 * 1024;

function lineUnderTest(): ChannelUnderTest {
  const toChannel = new PassThrough();
  const fromChannel = new PassThrough();
  const received = new Inbox<string>();
  const closesSeen = new Inbox<'closed'>();
  let pending = '';
  fromChannel.on('data', (chunk: Buffer) => {
    const lines = (pending + chunk.toString('utf8')).split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) received.push(line);
  });
  fromChannel.on('end', () => closesSeen.push('closed'));
  return {
    channel: new LineChannel(toChannel, fromChannel, LINE_LIMIT, 'the peer'),
    peer: { send: (raw) => toChannel.write(`${raw}\n`), received, close: () => toChannel.end(), closesSeen },
    dispose: async () => {
      // A peer that went away: its end reaches the channel before the streams go.
      if (toChannel.writableEnded && !toChannel.readableEnded) await once(toChannel, 'end');
      toChannel.destroy();
      fromChannel.destroy();
    },
  };
}

describeChannelContract('MemoryChannel', memoryUnderTest, { keepsEarlyMessages: true });
describeChannelContract('LineChannel over streams', lineUnderTest, {
  keepsEarlyMessages: true,
  maxMessageBytes: LINE_LIMIT,
});

function sharedPortUnderTest(): ChannelUnderTest {
  const { a, b: server } = memoryChannelPair();
  const shared = new SharedUpstream(a, pino({ level: 'silent' }), sharedSessionRules());
  const received = new Inbox<string>();
  const closesSeen = new Inbox<'closed'>();
  server.start({
    message: (raw) => received.push(raw.toString('utf8')),
    malformed: () => undefined,
    closed: () => closesSeen.push('closed'),
  });
  return {
    channel: shared.port(),
    peer: { send: (raw) => server.sendRaw(raw), received, close: () => void server.close(), closesSeen },
    dispose: () => shared.close(),
  };
}

describeChannelContract('a port of a SharedUpstream', sharedPortUnderTest, {
  keepsEarlyMessages: false,
  peerSeesClose: false,
});

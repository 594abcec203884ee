/**
 * The Channel contract (test/channel-contract.ts) for the channels that need no process or socket: the
 * memory pair, and the line channel over a pair of in-memory streams (as over stdin/stdout or a child's
 * pipes).
 */
import { PassThrough } from 'node:stream';
import { LineChannel } from '../../src/transport/line-channel.js';
import { memoryChannelPair } from '../../src/transport/memory-channel.js';
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

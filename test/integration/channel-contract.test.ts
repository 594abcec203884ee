/**
 * The Channel contract (test/channel-contract.ts) for the channels that need a process or a socket: the
 * supervised stdio upstream, whose peer is a real child process. The child relays its stdin and stdout to
 * a socket of the test's, so that the test drives the far end of the pipes.
 */
import { once } from 'node:events';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { pino } from 'pino';
import { SupervisedStdioUpstream } from '../../src/transport/supervised-upstream.js';
import { describeChannelContract, type ChannelUnderTest } from '../channel-contract.js';
import { Inbox } from '../helpers/inbox.js';

const LIMIT = 64 * 1024;

/** A child whose stdin goes to the socket at argv[1], and the socket's data to its stdout. */
const RELAY = `
const socket = require('node:net').connect(Number(process.argv[1]), '127.0.0.1', () => {
  process.stdin.pipe(socket);
  socket.pipe(process.stdout);
});
socket.on('end', () => process.stdout.end(() => process.exit(0)));
`;

async function supervisedUnderTest(): Promise<ChannelUnderTest> {
  const listener = createServer();
  listener.listen(0, '127.0.0.1');
  await once(listener, 'listening');
  const port = (listener.address() as AddressInfo).port;
  const connected = once(listener, 'connection') as Promise<[Socket]>;
  const channel = await SupervisedStdioUpstream.start(
    { command: process.execPath, args: ['-e', RELAY, String(port)] },
    { enabled: false, delay: 500, maxDelay: 500, holdRequests: 0 },
    LIMIT,
    pino({ level: 'silent' }),
  );
  const [socket] = await connected;
  const received = new Inbox<string>();
  const closesSeen = new Inbox<'closed'>();
  let pending = '';
  socket.on('data', (chunk: Buffer) => {
    const lines = (pending + chunk.toString('utf8')).split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) received.push(line);
  });
  socket.on('end', () => closesSeen.push('closed'));
  return {
    channel,
    peer: { send: (raw) => socket.write(`${raw}\n`), received, close: () => socket.end(), closesSeen },
    dispose: async () => {
      await channel.stop();
      socket.destroy();
      listener.close();
    },
  };
}

describeChannelContract('SupervisedStdioUpstream (a child process)', supervisedUnderTest, {
  keepsEarlyMessages: true,
  maxMessageBytes: LIMIT,
});

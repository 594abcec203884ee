/**
 * The Channel contract (test/channel-contract.ts) for the channels that need a process or a socket: the
 * supervised stdio upstream, whose peer is a real child process (it relays its stdin and stdout to a
 * socket of the test's, so that the test drives the far end of the pipes), and the HTTP upstream, whose
 * peer is a Streamable HTTP server of the test's, answering the handshake and holding the GET stream.
 */
import { once } from 'node:events';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { text } from 'node:stream/consumers';
import { pino } from 'pino';
import { HttpUpstream } from '../../src/transport/http-upstream.js';
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

const INITIALIZE = {
  jsonrpc: '2.0',
  id: 'init',
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'contract', version: '1' } },
};

/**
 * An HttpUpstream past its handshake with a server of the test's: what the channel POSTs (but the
 * handshake) is received, what the peer sends goes on the GET stream, a DELETE is the close it sees.
 */
async function httpUpstreamUnderTest(): Promise<ChannelUnderTest> {
  const received = new Inbox<string>();
  const closesSeen = new Inbox<'closed'>();
  const getStreams = new Inbox<ServerResponse>();
  const server = createHttpServer((req: IncomingMessage, res: ServerResponse) => {
    if (req.method === 'GET') {
      res.writeHead(200, { 'content-type': 'text/event-stream' }).flushHeaders();
      getStreams.push(res);
      return;
    }
    if (req.method === 'DELETE') {
      closesSeen.push('closed');
      res.writeHead(200).end();
      return;
    }
    void text(req).then((body) => {
      const message = JSON.parse(body) as { method?: string };
      if (message.method === 'initialize') {
        const result = {
          protocolVersion: '2025-11-25',
          capabilities: {},
          serverInfo: { name: 'peer', version: '1' },
        };
        res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'contract-session' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: 'init', result }));
        return;
      }
      if (message.method !== 'notifications/initialized') received.push(body);
      res.writeHead(202).end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const channel = new HttpUpstream(
    { url: `http://127.0.0.1:${port}/mcp`, maxMessageBytes: LIMIT },
    pino({ level: 'silent' }),
  );
  channel.send(INITIALIZE);
  channel.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  const stream = await getStreams.waitFor(() => true, 'the GET stream');
  return {
    channel,
    peer: {
      send: (raw) => stream.write(`event: message\ndata: ${raw}\n\n`),
      received,
      close: () => stream.end(),
      closesSeen,
    },
    dispose: async () => {
      await channel.close();
      server.closeAllConnections();
      server.close();
    },
  };
}

describeChannelContract('HttpUpstream (a Streamable HTTP server)', httpUpstreamUnderTest, {
  // What comes before start() has no handler to go to: the session starts its channels at once.
  keepsEarlyMessages: false,
  maxMessageBytes: LIMIT,
  reportsPeerGone: false,
});

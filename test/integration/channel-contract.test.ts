/**
 * The Channel contract (test/channel-contract.ts) for the channels that need a process or a socket: the
 * supervised stdio upstream, whose peer is a real child process (it relays its stdin and stdout to a
 * socket of the test's, so that the test drives the far end of the pipes); the HTTP upstream, whose
 * peer is a Streamable HTTP server of the test's, answering the handshake and holding the GET stream; and
 * the HTTP session of taskgate's own front, whose peer is an HTTP client POSTing and holding a GET stream.
 */
import { once } from 'node:events';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { text } from 'node:stream/consumers';
import { pino } from 'pino';
import { HttpFront } from '../../src/transport/http-front.js';
import type { HttpSession } from '../../src/transport/http-session.js';
import { HttpUpstream } from '../../src/transport/http-upstream.js';
import { SseParser } from '../../src/transport/sse.js';
import { SupervisedStdioUpstream } from '../../src/transport/supervised-upstream.js';
import { describeChannelContract, type ChannelUnderTest } from '../channel-contract.js';
import { Inbox } from '../helpers/inbox.js';
import { frontOptions } from '../helpers/front-options.js';

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

const SESSION_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

/**
 * An HttpSession of the real front, past its handshake (answered by the pair itself, before the contract
 * starts the channel for good): the peer POSTs one message at a time, as a client that wants them in
 * order does, reads the GET stream, and DELETEs the session to go away.
 */
async function httpSessionUnderTest(): Promise<ChannelUnderTest> {
  let opened!: (session: HttpSession) => void;
  const sessionOpened = new Promise<HttpSession>((resolve) => (opened = resolve));
  const front = new HttpFront(
    frontOptions({
      maxMessageBytes: LIMIT,
      maxSessions: 4,
      eventLogSize: 1_000,
      eventLogBytes: 1_000_000,
      eventLogTotalBytes: 1_000_000,
    }),
    {
      openSession: async (session) => {
        session.start({
          message: (raw) => {
            const { id } = JSON.parse(raw.toString('utf8')) as { id: string };
            const result = {
              protocolVersion: '2025-11-25',
              capabilities: {},
              serverInfo: { name: 'gw', version: '1' },
            };
            queueMicrotask(() => session.send({ jsonrpc: '2.0', id, result }, { responseTo: id }));
          },
          malformed: () => undefined,
          closed: () => undefined,
        });
        opened(session);
      },
      notReady: async () => undefined,
    },
    pino({ level: 'silent' }),
  );
  const url = await front.listen();
  const initialized = await fetch(url, {
    method: 'POST',
    headers: SESSION_HEADERS,
    body: JSON.stringify(INITIALIZE),
  });
  await initialized.text();
  const sessionId = initialized.headers.get('mcp-session-id') ?? '';
  const headers = { ...SESSION_HEADERS, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' };
  const session = await sessionOpened;

  const received = new Inbox<string>();
  const closesSeen = new Inbox<'closed'>();
  const stream = await fetch(url, { headers: { ...headers, accept: 'text/event-stream' } });
  const parser = new SseParser(LIMIT, {
    event: ({ data }) => {
      if (data.length > 0) received.push(data.toString('utf8'));
    },
    retry: () => undefined,
    oversized: () => undefined,
  });
  void (async () => {
    try {
      for await (const chunk of stream.body as AsyncIterable<Uint8Array>) parser.push(Buffer.from(chunk));
    } catch {
      // The stream was cut rather than ended: the close is seen all the same.
    }
    closesSeen.push('closed');
  })();

  let posting = Promise.resolve();
  const inTurn = (request: () => Promise<Response>): void => {
    posting = posting.then(async () => void (await (await request()).text()));
  };
  return {
    channel: session,
    peer: {
      send: (raw) => inTurn(() => fetch(url, { method: 'POST', headers, body: raw })),
      received,
      close: () => inTurn(() => fetch(url, { method: 'DELETE', headers })),
      closesSeen,
    },
    dispose: async () => {
      await posting.catch(() => undefined);
      await front.close();
    },
  };
}

describeChannelContract('HttpSession (the front’s, its peer an HTTP client)', httpSessionUnderTest, {
  // What is POSTed before start() has no handler to go to: the front starts the session's channel at once.
  keepsEarlyMessages: false,
});

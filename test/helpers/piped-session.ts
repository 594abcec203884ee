import { PassThrough } from 'node:stream';
import { pino } from 'pino';
import { resolveConfig } from '../../src/config/load.js';
import { Policy } from '../../src/config/policy.js';
import { Session } from '../../src/session/session.js';
import { MemoryTaskStore } from '../../src/tasks/memory-store.js';
import type { TaskStore } from '../../src/tasks/store.js';
import type { Channel } from '../../src/transport/channel.js';
import { LineChannel } from '../../src/transport/line-channel.js';

/**
 * taskgate's Session on its defaults, its server a LineChannel over in-memory pipes (the test writes the
 * server's lines to `fromServer` and reads what taskgate sent it from `toServer`); its client likewise over
 * `fromClient`/`toClient`, unless `client` is given; `upstream` puts something between the Session and
 * the server's LineChannel (a translator).
 */
export function pipedSession(options: {
  limit: number;
  maxResultBytes: number;
  client?: Channel;
  upstream?: (server: Channel) => Channel;
  /** Its task store, in place of a MemoryTaskStore of `maxResultBytes`; the caller closes it. */
  store?: TaskStore;
}) {
  const config = resolveConfig({});
  const [fromClient, toClient, fromServer, toServer] = [0, 1, 2, 3].map(() => new PassThrough()) as [
    PassThrough,
    PassThrough,
    PassThrough,
    PassThrough,
  ];
  const store =
    options.store ?? new MemoryTaskStore({ maxTasks: 10, maxResultBytes: options.maxResultBytes });
  const session = new Session(
    options.client ?? new LineChannel(fromClient, toClient, options.limit, 'the client'),
    (options.upstream ?? ((server: Channel) => server))(
      new LineChannel(fromServer, toServer, options.limit, 'the upstream server'),
    ),
    { id: 'bytes', config, policy: new Policy(config), store, logger: pino({ level: 'silent' }) },
    { upstreamGone: () => undefined, closed: () => undefined },
  );
  session.start();
  const close = async (): Promise<void> => {
    await session.close();
    if (options.store === undefined) await store.close();
  };
  return { fromClient, toClient, fromServer, toServer, close };
}

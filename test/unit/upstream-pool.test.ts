/**
 * `upstream.sharing: pool` over memory channels: each member's server is the far end of a pair, so a
 * session's member is the server its requests reach.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { Channel } from '../../src/transport/channel.js';
import { memoryChannelPair } from '../../src/transport/memory-channel.js';
import { sharedSessionRules } from '../../src/session/shared-sessions.js';
import { UpstreamPool, type PoolUpstream } from '../../src/transport/upstream-pool.js';
import { Inbox } from '../helpers/inbox.js';

interface Member {
  index: number;
  /** Methods of the requests its server received. */
  heard: Inbox<string>;
  stopped: boolean;
}

function pool(size: number, failFirstOpenOf?: number) {
  const members: Member[] = [];
  let failed = false;
  const open = async (index: number): Promise<PoolUpstream> => {
    if (index === failFirstOpenOf && !failed) {
      failed = true;
      throw new Error('the server did not start');
    }
    const { a, b: server } = memoryChannelPair();
    const member: Member = { index, heard: new Inbox<string>(), stopped: false };
    server.start({
      message: (raw) => member.heard.push((JSON.parse(raw.toString()) as { method: string }).method),
      malformed: () => undefined,
      closed: () => undefined,
    });
    members.push(member);
    return {
      channel: a,
      stop: async () => {
        member.stopped = true;
        await a.close();
      },
    };
  };
  return {
    upstreams: new UpstreamPool(size, open, pino({ level: 'silent' }), () => sharedSessionRules()),
    members,
  };
}

/** The member whose server a request sent through `channel` reaches. */
async function memberOf(channel: Channel, members: Member[], tag: string): Promise<number> {
  channel.start({ message: () => undefined, malformed: () => undefined, closed: () => undefined });
  channel.send({ jsonrpc: '2.0', id: 1, method: tag });
  const reached = await Promise.race(
    members.map((member) => member.heard.waitFor((method) => method === tag, tag, 2_000).then(() => member)),
  );
  return reached.index;
}

describe('UpstreamPool', () => {
  it('gives each new session the member with the fewest, and a stopped session frees its place', async () => {
    const { upstreams, members } = pool(2);
    const ports = [];
    for (let i = 0; i < 4; i++) ports.push(await upstreams.port());
    expect(members.map((member) => member.index)).toEqual([0, 1]);
    const placed = [];
    for (const [i, port] of ports.entries()) placed.push(await memberOf(port.channel, members, `s${i}`));
    expect(placed).toEqual([0, 1, 0, 1]);
    await ports[3]!.stop();
    await ports[3]!.stop();
    const next = await upstreams.port();
    expect(await memberOf(next.channel, members, 'next')).toBe(1);
    expect(members).toHaveLength(2);
  });

  it('starts a member only when a session is first given to it', async () => {
    const { upstreams, members } = pool(3);
    await upstreams.port();
    expect(members).toHaveLength(1);
  });

  it('gives the session a member could not start for its failure, and starts that member for the next', async () => {
    const { upstreams, members } = pool(2, 0);
    await expect(upstreams.port()).rejects.toThrow('the server did not start');
    const port = await upstreams.port();
    expect(await memberOf(port.channel, members, 'after')).toBe(0);
  });

  it('stops every member it started when closed', async () => {
    const { upstreams, members } = pool(3);
    await upstreams.port();
    await upstreams.port();
    await upstreams.close();
    expect(members.map((member) => member.stopped)).toEqual([true, true]);
  });

  it('tells the sessions still on a member that its server is gone once closed, and a stopped one nothing', async () => {
    const { upstreams } = pool(1);
    const [staying, leaving] = [await upstreams.port(), await upstreams.port()];
    const heard: string[][] = [[], []];
    for (const [i, port] of [staying, leaving].entries()) {
      port.channel.start({
        message: () => undefined,
        malformed: () => undefined,
        closed: ({ reason, reopening }) => heard[i]!.push(`${reason}${reopening ? ' (reopening)' : ''}`),
      });
    }
    await leaving.stop();
    // The member's own channel does not report its owner's close: the pool's multiplexer says it.
    await upstreams.close();
    expect(heard).toEqual([['taskgate stopped the shared upstream server'], []]);
  });
});

/**
 * Client sessions spread over a few shared upstream connections (`upstream.sharing: pool`; `shared` is a
 * pool of one). A session is given a port of the member with the fewest sessions and stays on it for its
 * life, so whatever the server keeps per connection for it (its tasks, its subscriptions) is found again.
 * A member's server is started when a session first needs it; one that could not start is tried again by
 * the next session given to it.
 */
import type { Channel } from './channel.js';
import type { SharedRules } from './shared-rules.js';
import { SharedUpstream } from './shared-upstream.js';
import type { Logger } from 'pino';
import type { Valve } from './valve.js';

export interface PoolUpstream {
  channel: Channel;
  /** For people: the server's command line or URL. */
  description?: string;
  stop(): Promise<void>;
  /** Shut while the server's stdin is behind: each of its ports' sessions waits on it (valve.ts). */
  intake?: Valve | undefined;
}

interface Member {
  opening: Promise<{ upstream: PoolUpstream; multiplexer: SharedUpstream }> | undefined;
  /** Sessions given a port of it (or about to be), not yet stopped. */
  sessions: number;
}

export class UpstreamPool {
  private readonly members: Member[];

  constructor(
    size: number,
    /** Starts member `index`'s upstream; `logger` is the member's own. */
    private readonly open: (index: number, logger: Logger) => Promise<PoolUpstream>,
    private readonly logger: Logger,
    /** The session layer's rules for one member's sessions (src/session/shared-sessions.ts). */
    private readonly rules: () => SharedRules,
  ) {
    this.members = Array.from({ length: size }, () => ({ opening: undefined, sessions: 0 }));
  }

  /** A port for one more session on the least-used member; `stop` closes it and frees its place. */
  async port(): Promise<PoolUpstream> {
    const index = this.leastUsed();
    const member = this.members[index]!;
    member.sessions++;
    let upstream: PoolUpstream;
    let multiplexer: SharedUpstream;
    try {
      ({ upstream, multiplexer } = await this.opened(index));
    } catch (error) {
      member.sessions--;
      throw error;
    }
    const channel = multiplexer.port();
    let stopped = false;
    return {
      channel,
      ...(upstream.description === undefined ? {} : { description: upstream.description }),
      intake: upstream.intake,
      stop: async () => {
        if (stopped) return;
        stopped = true;
        member.sessions--;
        await channel.close();
      },
    };
  }

  /** Stops every member's server; the sessions still on its ports hear that it went away. */
  async close(): Promise<void> {
    await Promise.all(
      this.members.map(async (member) => {
        const opened = await member.opening?.catch(() => undefined);
        await opened?.upstream.stop();
        opened?.multiplexer.stopped();
      }),
    );
  }

  private leastUsed(): number {
    let fewest = 0;
    for (let i = 1; i < this.members.length; i++) {
      if (this.members[i]!.sessions < this.members[fewest]!.sessions) fewest = i;
    }
    return fewest;
  }

  private opened(index: number): Promise<{ upstream: PoolUpstream; multiplexer: SharedUpstream }> {
    const member = this.members[index]!;
    if (member.opening !== undefined) return member.opening;
    const logger = this.members.length === 1 ? this.logger : this.logger.child({ member: index });
    const opening = this.open(index, logger).then((upstream) => ({
      upstream,
      multiplexer: new SharedUpstream(upstream.channel, logger, this.rules()),
    }));
    opening.catch(() => {
      if (member.opening === opening) member.opening = undefined;
    });
    member.opening = opening;
    return opening;
  }
}

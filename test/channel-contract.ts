/**
 * The Channel contract (src/transport/channel.ts), as one suite that every implementation runs:
 *
 *   describeChannelContract('MemoryChannel', () => memoryPeerPair(), { keepsEarlyMessages: true });
 *
 * Each implementation gives the channel under test and a Peer: the far end (the other memory channel, the
 * other ends of a pair of pipes, a child process, an HTTP peer), driven by the test. Only the Channel
 * interface is used on the near side. Every wait is for an event, bounded by the Inbox's timeout.
 */
import { setImmediate } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import type { ProtocolError } from '../src/protocol/errors.js';
import type { RequestId } from '../src/protocol/messages.js';
import type { Channel, ChannelHandlers, CloseInfo } from '../src/transport/channel.js';
import { Inbox } from './helpers/inbox.js';

export interface Peer {
  /** Sends the bytes of one message to the channel under test. */
  send(raw: string): void;
  /** What the channel sent, each message's bytes as text, in order. */
  readonly received: Inbox<string>;
  /** The peer goes away. */
  close(): void;
  /** How many times the peer has seen the channel go away (its input ended, its connection closed). */
  readonly closesSeen: Inbox<'closed'>;
}

export interface ChannelUnderTest {
  channel: Channel;
  peer: Peer;
  /**
   * Frees what the pair holds (streams, processes, sockets) after the test, once what they had going is
   * over (a child process has exited). Safe to call again: a test may call it to see what follows.
   */
  dispose(): Promise<void>;
}

export interface ChannelContractOptions {
  /** What the peer sent before start() is delivered once started (a stream that buffers, an early queue). */
  keepsEarlyMessages: boolean;
  /** For channels with a size limit: the limit the pair is opened with; a larger frame is malformed. */
  maxMessageBytes?: number;
  /**
   * The peer going away ends the channel (a pipe's end, an exit). False where the channel outlives its
   * peer and reconnects instead (an HTTP upstream: only close() ends it).
   */
  reportsPeerGone?: boolean;
  /**
   * close() ends the channel at the peer. False where the peer outlives it (a port of a shared upstream:
   * the server goes on serving the other ports).
   */
  peerSeesClose?: boolean;
}

/** The near side's handlers, recording what they are told. */
class Recorder implements ChannelHandlers {
  readonly messages = new Inbox<string>();
  readonly malformations = new Inbox<{ error: ProtocolError; id: RequestId | null }>();
  readonly closes = new Inbox<CloseInfo>();

  message(raw: Buffer): void {
    this.messages.push(raw.toString('utf8'));
  }

  malformed(error: ProtocolError, id: RequestId | null): void {
    this.malformations.push({ error, id });
  }

  closed(info: CloseInfo): void {
    this.closes.push(info);
  }
}

const notification = (n: number, spacing = ''): string =>
  `{"jsonrpc":"2.0",${spacing}"method":"notifications/message","params":{"n":${n}}}`;

const receivedAll = (inbox: Inbox<string>, count: number, what: string): Promise<string> =>
  inbox.waitFor(() => inbox.items.length >= count, `${count} ${what}`);

export function describeChannelContract(
  name: string,
  open: () => Promise<ChannelUnderTest> | ChannelUnderTest,
  options: ChannelContractOptions,
): void {
  describe(`Channel contract: ${name}`, () => {
    const opened: ChannelUnderTest[] = [];
    afterEach(async () => {
      await Promise.all(opened.splice(0).map((pair) => pair.dispose()));
    });

    const openPair = async (): Promise<ChannelUnderTest> => {
      const pair = await open();
      opened.push(pair);
      return pair;
    };

    const started = async (): Promise<ChannelUnderTest & { near: Recorder }> => {
      const pair = await openPair();
      const near = new Recorder();
      pair.channel.start(near);
      return { ...pair, near };
    };

    it('delivers the peer’s messages in order, each as its exact bytes', async () => {
      const { peer, near } = await started();
      const sent = Array.from({ length: 50 }, (_, n) => notification(n, n % 2 === 0 ? ' ' : ''));
      for (const raw of sent) peer.send(raw);
      await receivedAll(near.messages, sent.length, 'messages from the peer');
      expect(near.messages.items).toEqual(sent);
    });

    it('sends to the peer in order: sendRaw’s bytes as they are, send’s message as JSON', async () => {
      const { channel, peer } = await started();
      channel.sendRaw(Buffer.from(notification(0, ' ')));
      channel.send({ jsonrpc: '2.0', method: 'notifications/message', params: { n: 1 } });
      channel.sendRaw(notification(2, '  '));
      for (let n = 3; n < 50; n++) channel.sendRaw(notification(n));
      await receivedAll(peer.received, 50, 'messages at the peer');
      expect(peer.received.items[0]).toBe(notification(0, ' '));
      expect(JSON.parse(peer.received.items[1]!)).toEqual(JSON.parse(notification(1)));
      expect(peer.received.items[2]).toBe(notification(2, '  '));
      expect(peer.received.items.slice(3)).toEqual(Array.from({ length: 47 }, (_, i) => notification(i + 3)));
    });

    if (options.keepsEarlyMessages)
      it('keeps what the peer sent before start() and delivers it then', async () => {
        const { channel, peer } = await openPair();
        for (const n of [1, 2, 3]) peer.send(notification(n));
        // A turn of the event loop, so that what can arrive early has arrived.
        await setImmediate();
        const near = new Recorder();
        channel.start(near);
        peer.send(notification(4));
        await receivedAll(near.messages, 4, 'messages from the peer');
        expect(near.messages.items).toEqual([1, 2, 3, 4].map((n) => notification(n)));
      });

    const reportsPeerGone = options.reportsPeerGone ?? true;
    if (options.keepsEarlyMessages && reportsPeerGone)
      it('reports a peer that went away before start(), once, after delivering what it sent', async () => {
        const { channel, peer } = await openPair();
        peer.send(notification(1));
        peer.close();
        await setImmediate();
        const near = new Recorder();
        channel.start(near);
        await near.closes.waitFor(() => true, 'the closure reported');
        expect(near.messages.items).toEqual([notification(1)]);
        expect(near.closes.items).toHaveLength(1);
      });

    const peerSeesClose = options.peerSeesClose ?? true;
    /** Once the peer has seen the channel's close(), or, where it does not see it, has what was sent before. */
    const closeReached = async (peer: Peer, sentBefore: number): Promise<void> => {
      if (peerSeesClose) await peer.closesSeen.waitFor(() => true, 'the peer seeing the close');
      else if (sentBefore > 0) await receivedAll(peer.received, sentBefore, 'messages sent before close()');
    };

    it(`still delivers what was sent before close()${peerSeesClose ? ', then the peer sees the close, once' : ''}`, async () => {
      const { channel, peer } = await started();
      channel.sendRaw(notification(1));
      await channel.close();
      await closeReached(peer, 1);
      expect(peer.received.items).toEqual([notification(1)]);
      // Safe to call again; nothing more is reported.
      await channel.close();
      await setImmediate();
      expect(peer.closesSeen.items).toHaveLength(peerSeesClose ? 1 : 0);
    });

    it('never reports its own close() back to its owner, even once all it held is freed', async () => {
      const pair = await started();
      pair.channel.sendRaw(notification(1));
      await pair.channel.close();
      await closeReached(pair.peer, 1);
      // Whatever the close set going (a child's exit, the end of an HTTP session) is over once disposed.
      await pair.dispose();
      await setImmediate();
      expect(pair.near.closes.items).toHaveLength(0);
    });

    it('does not report the peer going away while close() is under way: the close is the owner’s', async () => {
      const pair = await started();
      const closing = pair.channel.close();
      pair.peer.close();
      await closing;
      // The peer left by itself: it may never see the close. What either set going is over once disposed.
      await pair.dispose();
      await setImmediate();
      await setImmediate();
      expect(pair.near.closes.items).toHaveLength(0);
    });

    it('drops what is sent after close(), without throwing', async () => {
      const { channel, peer } = await started();
      await channel.close();
      expect(() => channel.sendRaw(notification(1))).not.toThrow();
      expect(() => channel.send({ jsonrpc: '2.0', method: 'notifications/message' })).not.toThrow();
      await closeReached(peer, 0);
      await setImmediate();
      expect(peer.received.items).toEqual([]);
    });

    if (reportsPeerGone)
      it('reports the peer going away once, with a reason, after the messages it sent before', async () => {
        const { channel, peer, near } = await started();
        peer.send(notification(1));
        peer.close();
        const [info] = [await near.closes.waitFor(() => true, 'the closure reported')];
        expect(info?.reason).toEqual(expect.any(String));
        expect(near.messages.items).toEqual([notification(1)]);
        await channel.close();
        await setImmediate();
        expect(near.closes.items).toHaveLength(1);
      });

    const limit = options.maxMessageBytes;
    if (limit !== undefined)
      it('reports a frame over the size limit as malformed, with its id, and goes on with the next', async () => {
        const { peer, near } = await started();
        const oversized = `{"jsonrpc":"2.0","id":"big-1","method":"tools/call","params":{"pad":"${'x'.repeat(limit ?? 0)}"}}`;
        peer.send(oversized);
        peer.send(notification(2));
        const { error, id } = await near.malformations.waitFor(() => true, 'the oversized frame reported');
        expect(id).toBe('big-1');
        expect(error.code).toBe(-32600);
        expect(error.message).toMatch(/exceeds the limit/);
        await near.messages.waitFor((raw) => raw === notification(2), 'the message after it');
        expect(near.messages.items).toEqual([notification(2)]);
      });
  });
}

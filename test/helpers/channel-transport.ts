/**
 * The SDK's Transport over one of taskgate's Channels, so that a real SDK Client or Server can be the peer
 * at the far end of a memory channel pair, in the test's own process.
 */
import type { Transport, TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js';
import { JSONRPCMessageSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { Channel } from '../../src/transport/channel.js';

export class ChannelTransport implements Transport {
  onmessage?: Transport['onmessage'];
  onclose?: Transport['onclose'];
  onerror?: Transport['onerror'];
  private closed = false;

  /**
   * `streams`: a message the SDK sends about a request goes with that request's route, as Streamable HTTP
   * carries it on the request's stream (the receiver then knows whose it is); stdio has no such thing.
   */
  constructor(
    private readonly channel: Channel,
    private readonly options: { streams?: boolean } = {},
  ) {}

  async start(): Promise<void> {
    this.channel.start({
      message: (raw) => {
        const parsed = JSONRPCMessageSchema.safeParse(JSON.parse(raw.toString('utf8')));
        if (parsed.success) this.onmessage?.(parsed.data);
        else this.onerror?.(new Error(`not a JSON-RPC message: ${raw.toString('utf8').slice(0, 300)}`));
      },
      malformed: (error) => this.onerror?.(new Error(error.message)),
      closed: () => this.reportClosed(),
    });
  }

  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    if (this.closed) throw new Error('the channel is closed');
    const relatedTo = this.options.streams ? options?.relatedRequestId : undefined;
    this.channel.send(message, relatedTo === undefined ? undefined : { relatedTo });
  }

  /** The SDK expects its own close to be reported back through onclose, as every transport of its does. */
  async close(): Promise<void> {
    await this.channel.close();
    this.reportClosed();
  }

  private reportClosed(): void {
    if (this.closed) return;
    this.closed = true;
    this.onclose?.();
  }
}

/**
 * A 2026-07-28 client on a channel of its own (stdio): each request is served by the bridge on its own,
 * answered when its answer is ready, and given up on the client's notifications/cancelled (stdio has no
 * stream to close: basic/patterns/cancellation.mdx). When the client's input ends, what it asked is still
 * answered before the front closes.
 */
import type { Logger } from 'pino';
import { ErrorCode } from '../protocol/errors.js';
import { toJsonRpcError } from '../tasks/wire-errors.js';
import { digitsOf, serialize, withExactRequestId } from '../protocol/exact-ids.js';
import { errorResponse, idKey, type Request } from '../protocol/messages.js';
import { readMessage } from '../protocol/read-message.js';
import { clientFrameRefusal, unreadClientFrameRefusal, type Refusal } from '../session/bad-frames.js';
import type { Channel } from '../transport/channel.js';
import type { ModernBridge } from './bridge.js';

export class ModernChannelFront {
  private readonly open = new Map<string | number, AbortController>();
  private inputEnded = false;
  private closing: Promise<void> | undefined;

  constructor(
    private readonly client: Channel,
    private readonly bridge: ModernBridge,
    private readonly logger: Logger,
    private readonly closed: () => Promise<void> | void,
  ) {}

  start(): void {
    this.client.start({
      message: (raw) => this.fromClient(raw),
      // The rules of bad-frames.ts: a response is never answered. This front asks the client nothing, so
      // there is no request of taskgate's for it to fail.
      malformed: (error, id) => this.refuse(unreadClientFrameRefusal(error, id)),
      closed: ({ reason, inputEnded }) => {
        this.logger.info(`modern client ${inputEnded ? 'ended its input' : 'went away'}: ${reason}`);
        this.inputEnded = true;
        if (!inputEnded) for (const controller of this.open.values()) controller.abort();
        this.closeWhenAnswered();
      },
    });
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      for (const controller of this.open.values()) controller.abort();
      await this.bridge.close();
      await this.client.close();
      await this.closed();
    })();
    return this.closing;
  }

  private refuse({ reply }: Refusal): void {
    if (reply !== undefined) this.send(reply);
  }

  private fromClient(raw: Buffer): void {
    const read = readMessage(raw, 'the client');
    if (!read.ok) return this.refuse(clientFrameRefusal(read.error, read.value, raw));
    const { message } = read;
    if (message.kind === 'request') return this.request(message.msg);
    if (message.kind === 'notification' && message.msg.method === 'notifications/cancelled') {
      const requestId = withExactRequestId(message.msg, raw).params?.requestId;
      if (typeof requestId === 'string' || typeof requestId === 'number') {
        this.open.get(idKey(requestId))?.abort();
      }
    }
    // Other notifications, and responses (a modern client is never asked anything), need nothing here.
  }

  private request(request: Request): void {
    const key = idKey(request.id);
    if (this.open.has(key)) {
      this.send(
        errorResponse(request.id, {
          code: ErrorCode.InvalidRequest,
          message: `Request id ${digitsOf(request.id) ?? JSON.stringify(request.id)} is already in use by a request in flight`,
        }),
      );
      return;
    }
    const controller = new AbortController();
    this.open.set(key, controller);
    const over = (): void => {
      this.open.delete(key);
      this.closeWhenAnswered();
    };
    this.bridge.serveTo(
      { request, notify: (message) => this.send(message), signal: controller.signal },
      {
        answer: (answer) => {
          if (answer !== undefined) this.send(answer.response);
          over();
        },
        failed: (error) => {
          this.logger.error({ err: error }, 'modern request failed');
          this.send(errorResponse(request.id, toJsonRpcError(error)));
          over();
        },
      },
    );
  }

  private send(message: object): void {
    this.client.sendRaw(serialize(message));
  }

  private closeWhenAnswered(): void {
    if (this.inputEnded && this.open.size === 0) void this.close();
  }
}

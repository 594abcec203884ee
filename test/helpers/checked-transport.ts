/**
 * Wraps a client transport so that every message taskgate sends to the client is checked against the
 * SDK's schemas: a malformed rewrite fails the test that caused it.
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  JSONRPCMessageSchema,
  ListRootsRequestSchema,
  ProgressNotificationSchema,
  TaskStatusNotificationSchema,
  type JSONRPCMessage,
} from '@modelcontextprotocol/sdk/types.js';
import { Inbox } from './inbox.js';

export class CheckedTransport implements Transport {
  readonly violations: string[] = [];
  readonly received = new Inbox<JSONRPCMessage>();
  onmessage?: Transport['onmessage'];
  onclose?: Transport['onclose'];
  onerror?: Transport['onerror'];

  constructor(readonly inner: Transport) {
    inner.onmessage = (message, extra) => {
      this.check(message);
      this.received.push(message);
      this.onmessage?.(message, extra);
    };
    inner.onclose = () => this.onclose?.();
    inner.onerror = (error) => this.onerror?.(error);
  }

  start(): Promise<void> {
    return this.inner.start();
  }

  send(...args: Parameters<Transport['send']>): Promise<void> {
    return this.inner.send(...args);
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  get sessionId(): string | undefined {
    return this.inner.sessionId;
  }

  setProtocolVersion(version: string): void {
    this.inner.setProtocolVersion?.(version);
  }

  private check(message: JSONRPCMessage): void {
    const envelope = JSONRPCMessageSchema.safeParse(message);
    if (!envelope.success) {
      this.violations.push(`not a JSON-RPC message: ${JSON.stringify(message).slice(0, 300)}`);
      return;
    }
    if (!('method' in message)) return;
    // Messages taskgate rewrites or creates must match their schema; others are the server's business.
    const schema = SCHEMAS[message.method];
    const parsed = schema?.safeParse(message);
    if (parsed && !parsed.success) {
      this.violations.push(
        `${message.method} breaks its schema: ${(parsed.error?.message ?? '').slice(0, 500)}`,
      );
    }
  }
}

const SCHEMAS: Record<
  string,
  { safeParse(value: unknown): { success: boolean; error?: { message: string } } } | undefined
> = {
  'notifications/progress': ProgressNotificationSchema,
  'notifications/tasks/status': TaskStatusNotificationSchema,
  'elicitation/create': ElicitRequestSchema,
  'sampling/createMessage': CreateMessageRequestSchema,
  'roots/list': ListRootsRequestSchema,
};

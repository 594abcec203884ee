/**
 * Wraps a client transport so that every message taskgate sends to the client is checked against the
 * SDK's schemas: a malformed rewrite fails the test that caused it. Responses are checked against the
 * result schema of the request they answer, which this transport saw go out.
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolResultSchema,
  CancelTaskResultSchema,
  CreateMessageRequestSchema,
  CreateTaskResultSchema,
  EmptyResultSchema,
  GetTaskPayloadResultSchema,
  GetTaskResultSchema,
  InitializeResultSchema,
  ListTasksResultSchema,
  ListToolsResultSchema,
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
  /** Requests sent and not answered yet: id → the key of the result schema their answer must match. */
  private readonly asked = new Map<string | number, string>();
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
    const [message] = args;
    if ('method' in message && 'id' in message) {
      const asTask = isObject(message.params) && message.params.task !== undefined;
      this.asked.set(message.id, asTask ? `${message.method} as a task` : message.method);
    }
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
    if (!('method' in message)) return this.checkResponse(message);
    // Messages taskgate rewrites or creates must match their schema; others are the server's business.
    const schema = SCHEMAS[message.method];
    const parsed = schema?.safeParse(message);
    if (parsed && !parsed.success) {
      this.violations.push(
        `${message.method} breaks its schema: ${(parsed.error?.message ?? '').slice(0, 500)}`,
      );
    }
  }

  private checkResponse(message: JSONRPCMessage): void {
    if (!('id' in message) || message.id === undefined) return;
    const asked = this.asked.get(message.id);
    if (asked === undefined) return;
    this.asked.delete(message.id);
    if (!('result' in message)) return;
    const parsed = RESULT_SCHEMAS[asked]?.safeParse(message.result);
    if (parsed && !parsed.success) {
      this.violations.push(
        `the result of ${asked} breaks its schema: ${(parsed.error?.message ?? '').slice(0, 500)}`,
      );
    }
  }
}

type Schema = { safeParse(value: unknown): { success: boolean; error?: { message: string } } };

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The results taskgate rewrites or serves itself. */
const RESULT_SCHEMAS: Record<string, Schema | undefined> = {
  initialize: InitializeResultSchema,
  'tools/list': ListToolsResultSchema,
  'tools/call': CallToolResultSchema,
  'tools/call as a task': CreateTaskResultSchema,
  'tasks/get': GetTaskResultSchema,
  'tasks/result': GetTaskPayloadResultSchema,
  'tasks/list': ListTasksResultSchema,
  'tasks/cancel': CancelTaskResultSchema,
  ping: EmptyResultSchema,
};

const SCHEMAS: Record<string, Schema | undefined> = {
  'notifications/progress': ProgressNotificationSchema,
  'notifications/tasks/status': TaskStatusNotificationSchema,
  'elicitation/create': ElicitRequestSchema,
  'sampling/createMessage': CreateMessageRequestSchema,
  'roots/list': ListRootsRequestSchema,
};

/** 2026-07-28 requests by hand over Streamable HTTP: the routing headers set, the answer read off JSON or SSE. */
import { MODERN_VERSION } from './modern-client.js';
import { post } from './raw-http.js';

export interface ModernAnswer {
  id: unknown;
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: unknown };
}

/** The per-request `_meta` of a client that declares elicitation and the tasks extension. */
export const EXTENSION_META = {
  'io.modelcontextprotocol/protocolVersion': MODERN_VERSION,
  'io.modelcontextprotocol/clientCapabilities': {
    elicitation: { form: {} },
    extensions: { 'io.modelcontextprotocol/tasks': {} },
  },
  'io.modelcontextprotocol/clientInfo': { name: 'raw-extension-client', version: '1' },
};

let nextId = 1;

/** POSTs one request with `meta`, the routing headers it needs and `headers`; resolves with its JSON-RPC answer. */
export async function modernRequest(
  url: URL,
  method: string,
  params: Record<string, unknown>,
  meta: object = EXTENSION_META,
  headers: Record<string, string> = {},
): Promise<ModernAnswer> {
  const id = nextId++;
  const name = params.name ?? params.taskId;
  const response = await post(
    url,
    { jsonrpc: '2.0', id, method, params: { ...params, _meta: meta } },
    {
      'mcp-protocol-version': MODERN_VERSION,
      'mcp-method': method,
      ...(typeof name === 'string' ? { 'mcp-name': name } : {}),
      ...headers,
    },
  );
  const body = await response.text();
  const answer = response.headers.get('content-type')?.includes('text/event-stream')
    ? body
        .split('\n')
        .filter((line) => line.startsWith('data: '))
        .map((line) => JSON.parse(line.slice('data: '.length)) as ModernAnswer)
        .find((message) => message.id === id)
    : (JSON.parse(body) as ModernAnswer);
  if (answer === undefined) throw new Error(`no answer to ${method} ${id} in: ${body.slice(0, 300)}`);
  return answer;
}

/** A message on a listen stream. */
export interface StreamMessage {
  method?: string;
  params?: Record<string, unknown>;
}

/** An open `subscriptions/listen` stream: each message as it comes, until `close`. */
export interface ListenStream {
  /** Resolves with the first message `wanted` holds of (earlier ones included), within `timeoutMs`. */
  until(wanted: (message: StreamMessage) => boolean, timeoutMs?: number): Promise<StreamMessage>;
  close(): void;
}

/** Opens `subscriptions/listen` with `notifications` as its filter, reading the SSE stream as it comes. */
export async function listen(
  url: URL,
  notifications: Record<string, unknown>,
  meta: object = EXTENSION_META,
): Promise<ListenStream> {
  const controller = new AbortController();
  const response = await post(
    url,
    { jsonrpc: '2.0', id: nextId++, method: 'subscriptions/listen', params: { notifications, _meta: meta } },
    { 'mcp-protocol-version': MODERN_VERSION, 'mcp-method': 'subscriptions/listen' },
    controller.signal,
  );
  const seen: StreamMessage[] = [];
  const waiting = new Set<() => void>();
  void (async () => {
    const decoder = new TextDecoder();
    let buffered = '';
    for await (const chunk of response.body!) {
      buffered += decoder.decode(chunk as Uint8Array, { stream: true });
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      for (const line of lines) {
        if (line.startsWith('data: ')) seen.push(JSON.parse(line.slice('data: '.length)) as StreamMessage);
      }
      for (const wake of waiting) wake();
    }
  })().catch(() => undefined);
  return {
    until: (wanted, timeoutMs = 5_000) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiting.delete(look);
          reject(new Error(`no such message on the listen stream; seen: ${JSON.stringify(seen)}`));
        }, timeoutMs);
        const look = () => {
          const found = seen.find(wanted);
          if (found === undefined) return;
          clearTimeout(timer);
          waiting.delete(look);
          resolve(found);
        };
        waiting.add(look);
        look();
      }),
    close: () => controller.abort(),
  };
}

/** Streamable HTTP by hand, for tests that send what an SDK client never would. */
import { expect } from 'vitest';
import { INITIALIZE } from './taskgate.js';

export const ACCEPT_BOTH = 'application/json, text/event-stream';

export const post = (url: URL, body: unknown, headers: Record<string, string> = {}, signal?: AbortSignal) =>
  fetch(url, {
    method: 'POST',
    headers: { accept: ACCEPT_BOTH, 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    ...(signal ? { signal } : {}),
  });

/** The headers of a request in an open 2025-11-25 session. */
export const inSession = (sessionId: string): Record<string, string> => ({
  'mcp-session-id': sessionId,
  'mcp-protocol-version': '2025-11-25',
});

/** A session opened by hand: its id, after initialize and initialized. */
export async function openSession(url: URL): Promise<string> {
  const response = await post(url, INITIALIZE);
  expect(response.status).toBe(200);
  await response.text();
  const sessionId = response.headers.get('mcp-session-id')!;
  const accepted = await post(
    url,
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    inSession(sessionId),
  );
  expect(accepted.status).toBe(202);
  return sessionId;
}

/** A `text` tool's call of `length` characters in the session, answered as one JSON body: that body. */
export async function postTextCall(
  url: URL,
  sessionId: string,
  id: string | number,
  length: number,
): Promise<string> {
  const call = { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'text', arguments: { length } } };
  const response = await post(url, call, inSession(sessionId));
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  return response.text();
}

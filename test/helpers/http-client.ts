/**
 * The SDK's Streamable HTTP client transport for tests. It passes one AbortSignal to every fetch, and
 * undici lets go of each request's abort listener only when that request is garbage-collected: a test
 * client that makes thousands of calls piles up thousands of listeners on that one signal
 * (MaxListenersExceededWarning, and each new one costs O(n)). POSTs end on their own, so they go without
 * it; the GET stream keeps it, so that close() still ends it (as bench/lib/targets.js does).
 */
import {
  StreamableHTTPClientTransport,
  type StreamableHTTPClientTransportOptions,
} from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const fetchWithoutPostSignal: typeof fetch = (input, init) =>
  fetch(input, init?.method === 'POST' ? { ...init, signal: null } : init);

export function httpTransport(
  url: URL,
  options: StreamableHTTPClientTransportOptions = {},
): StreamableHTTPClientTransport {
  return new StreamableHTTPClientTransport(url, { fetch: fetchWithoutPostSignal, ...options });
}

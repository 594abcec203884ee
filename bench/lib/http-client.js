// @ts-check
/**
 * Bare Streamable HTTP clients for the modern workloads (bench/modern.js), on undici's Pool: they parse
 * each answer once (JSON, or the SSE events of a streamed answer) and validate nothing, so that the load
 * generator is not what the figures measure, and the 2026-07-28 and the 2025 client cost the same.
 *
 * - ModernHttpClient: a 2026-07-28 client (no session): every request carries `_meta` (protocolVersion,
 *   clientCapabilities, clientInfo) and the routing headers MCP-Protocol-Version, Mcp-Method, Mcp-Name.
 *   The SDK v2 client refuses tasks/*, hence this one.
 * - LegacyHttpClient: a 2025-11-25 client in one session (initialize, Mcp-Session-Id).
 *
 * Both count the HTTP requests they made (`requests`), so a workload can say how many a call took.
 */
import { Pool } from '../../node_modules/undici/index.js';

export const MODERN_VERSION = '2026-07-28';
export const LEGACY_VERSION = '2025-11-25';
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

/** What routes a request in Mcp-Name (streamable-http.mdx "Request Metadata"). */
const NAMED = /** @type {Record<string, string>} */ ({
  'tools/call': 'name',
  'prompts/get': 'name',
  'resources/read': 'uri',
  'tasks/get': 'taskId',
  'tasks/update': 'taskId',
  'tasks/cancel': 'taskId',
});

class HttpBase {
  /**
   * @param {string} url
   * @param {{ connections?: number, pool?: Pool }} [options] `pool`: an undici Pool on the URL's origin that
   *   the caller owns and shares among many clients (close() leaves it open); else one of `connections`.
   */
  constructor(url, options = {}) {
    const parsed = new URL(url);
    this.path = parsed.pathname;
    this.ownsPool = options.pool === undefined;
    this.pool =
      options.pool ?? new Pool(parsed.origin, { connections: options.connections ?? 64, pipelining: 1 });
    this.nextId = 1;
    /** HTTP requests made so far. */
    this.requests = 0;
  }

  /**
   * POSTs one JSON-RPC message; resolves with the answer to `id` (undefined for a notification).
   * @param {object} message @param {Record<string, string>} headers @param {number | undefined} id
   * @returns {Promise<{ status: number, headers: Record<string, unknown>, answer: any }>}
   */
  async post(message, headers, id) {
    this.requests++;
    const response = await this.pool.request({
      path: this.path,
      method: 'POST',
      headers: {
        accept: 'application/json, text/event-stream',
        'content-type': 'application/json',
        ...headers,
      },
      body: JSON.stringify(message),
    });
    const text = await response.body.text();
    const type = String(response.headers['content-type'] ?? '');
    let answer;
    if (text === '') answer = undefined;
    else if (type.startsWith('text/event-stream')) answer = answerInEvents(text, id);
    else if (response.statusCode >= 400 && !type.startsWith('application/json')) answer = { httpError: text };
    else answer = JSON.parse(text);
    return { status: response.statusCode, headers: response.headers, answer };
  }

  close() {
    return this.ownsPool ? this.pool.close() : Promise.resolve();
  }
}

/** The message answering `id` among the SSE events of a streamed answer. @param {string} text @param {number | undefined} id */
function answerInEvents(text, id) {
  for (const event of text.split(/\n\n/)) {
    const data = event
      .split('\n')
      .filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(5).trimStart())
      .join('\n');
    if (data === '') continue;
    const message = JSON.parse(data);
    if (message.id === id && message.method === undefined) return message;
  }
  return undefined;
}

/** @param {any} answer @param {string} method */
function resultOf(answer, method) {
  if (answer?.error) {
    throw Object.assign(new Error(`${method}: ${answer.error.code} ${answer.error.message}`), answer.error);
  }
  if (answer?.result === undefined) throw new Error(`${method}: no answer (${JSON.stringify(answer)})`);
  return answer.result;
}

export class ModernHttpClient extends HttpBase {
  /**
   * @param {string} url
   * @param {{ connections?: number, pool?: Pool, tasks?: boolean, elicitation?: boolean }} [options] a
   *   `pool` as HttpBase takes it; what the client declares in every request: the tasks extension, and
   *   form elicitation
   */
  constructor(url, options = {}) {
    super(url, options);
    /** @type {Record<string, unknown>} */
    const capabilities = {};
    if (options.elicitation) capabilities['elicitation'] = { form: {} };
    if (options.tasks) capabilities['extensions'] = { [TASKS_EXTENSION]: {} };
    this.meta = {
      'io.modelcontextprotocol/protocolVersion': MODERN_VERSION,
      'io.modelcontextprotocol/clientCapabilities': capabilities,
      'io.modelcontextprotocol/clientInfo': { name: 'taskgate-bench-modern', version: '1' },
    };
  }

  /**
   * One 2026-07-28 request; resolves with its result (which has `resultType`), rejects with its error.
   * @param {string} method @param {Record<string, unknown>} [params]
   */
  async request(method, params = {}) {
    const id = this.nextId++;
    const field = NAMED[method];
    const name = field === undefined ? undefined : params[field];
    /** @type {Record<string, string>} */
    const headers = { 'mcp-protocol-version': MODERN_VERSION, 'mcp-method': method };
    if (typeof name === 'string') headers['mcp-name'] = name;
    const { answer } = await this.post(
      { jsonrpc: '2.0', id, method, params: { ...params, _meta: this.meta } },
      headers,
      id,
    );
    return resultOf(answer, method);
  }
}

export class LegacyHttpClient extends HttpBase {
  /** @type {string | undefined} */
  sessionId = undefined;

  /**
   * @param {string} url
   * @param {{ connections?: number, pool?: Pool, stateless?: boolean }} [options] `stateless`: a server that
   *   answers initialize without Mcp-Session-Id (supergateway without --stateful) is taken as it is
   */
  constructor(url, options = {}) {
    super(url, options);
    this.stateless = options.stateless === true;
  }

  /**
   * initialize + notifications/initialized, declaring client-side tasks support as the SDK client does.
   * An HTTP error status (503 when the gateway is full) rejects with an Error whose `status` says it.
   */
  async initialize() {
    const { status, headers, answer } = await this.post(
      {
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: {
          protocolVersion: LEGACY_VERSION,
          capabilities: { tasks: { requests: {} } },
          clientInfo: { name: 'taskgate-bench-legacy', version: '1' },
        },
      },
      {},
      0,
    );
    if (status >= 400) {
      const why = answer?.error?.message ?? answer?.httpError;
      throw Object.assign(new Error(`initialize: HTTP ${status}${why ? `: ${why}` : ''}`), { status });
    }
    resultOf(answer, 'initialize');
    const sessionId = headers['mcp-session-id'];
    if (typeof sessionId === 'string') this.sessionId = sessionId;
    else if (!this.stateless) throw new Error('initialize: no Mcp-Session-Id');
    await this.post(
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      this.sessionHeaders(),
      undefined,
    );
  }

  /** @returns {Record<string, string>} */
  sessionHeaders() {
    return this.sessionId === undefined
      ? { 'mcp-protocol-version': LEGACY_VERSION }
      : { 'mcp-session-id': this.sessionId, 'mcp-protocol-version': LEGACY_VERSION };
  }

  /** @param {string} method @param {Record<string, unknown>} [params] */
  async request(method, params = {}) {
    const id = this.nextId++;
    const { answer } = await this.post({ jsonrpc: '2.0', id, method, params }, this.sessionHeaders(), id);
    return resultOf(answer, method);
  }

  /**
   * Ends the session (DELETE), then the pool.
   * @override
   */
  async close() {
    if (this.sessionId !== undefined) {
      await this.pool
        .request({ path: this.path, method: 'DELETE', headers: this.sessionHeaders() })
        .then((response) => response.body.dump())
        .catch(() => undefined);
    }
    await super.close();
  }
}

// @ts-check
/**
 * What the per-request steps only the 2026-07-28 path takes cost alone, in this process, on dist/: the
 * steps bench/modern-cost.js --prof finds in a modern call's profile that a 2025 call has not. Each is
 * run `COUNT` times after a warm-up; µs per run, median of 5 batches.
 *
 *   node bench/modern-micro.js [COUNT]
 */
import { median } from './lib/stats.js';

const COUNT = Number(process.argv[2] ?? 100_000);
const dist = (/** @type {string} */ path) => new URL(`../dist/${path}`, import.meta.url).href;
const { requestDigest } = await import(dist('protocol/modern/request-state.js'));
const { checkModernHeaders } = await import(dist('protocol/modern/headers.js'));
const { readRequestMeta } = await import(dist('protocol/modern/meta.js'));
const { toModernResult } = await import(dist('protocol/modern/results.js'));
const { ALL_VERSIONS } = await import(dist('protocol/versions.js'));
const { ClientGiveUp } = await import(dist('protocol/modern/exchange.js'));
const { successResponse } = await import(dist('protocol/messages.js'));
const { serialize } = await import(dist('protocol/exact-ids.js'));
const resultBytes = await import(dist('protocol/modern/result-bytes.js')).catch(() => undefined);
const { readMessage } = await import(dist('protocol/read-message.js'));
const { smallAnswer } = await import(dist('protocol/small-answer.js'));

const meta = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'taskgate-bench-modern', version: '1' },
};
const request = {
  jsonrpc: '2.0',
  id: 7,
  method: 'tools/call',
  params: { name: 'echo', arguments: { text: 'ping' }, _meta: meta },
};
// The headers undici sends for one of bench/lib/http-client.js's requests, as node:http gives them.
const headers = {
  host: '127.0.0.1:40000',
  connection: 'keep-alive',
  accept: 'application/json, text/event-stream',
  'content-type': 'application/json',
  'mcp-protocol-version': '2026-07-28',
  'mcp-method': 'tools/call',
  'mcp-name': 'echo',
  'content-length': '220',
};
const result = { content: [{ type: 'text', text: 'ping' }] };
const serverInfo = { name: 'bench-fixture', version: '1.0.0' };
// The echo's answer as the upstream sent it, and one of 10 kB with escapes in every line.
const echoRaw = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 3, result }));
const bigResult = {
  content: Array.from({ length: 10 }, (_, i) => ({
    type: 'text',
    text: `line ${i} "q" \\ é 😀 `.repeat(40),
  })),
};
const bigRaw = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 3, result: bigResult }));
const added = resultBytes?.addedMembers(serverInfo);
/** The answer's bytes as the HTTP front wrote them before result-bytes.ts (serialize, then res.end's UTF-8). */
const parsedAnswer = (/** @type {object} */ answerResult) =>
  Buffer.from(serialize(successResponse(7, toModernResult('tools/call', answerResult, { serverInfo }))));

/** @type {Record<string, () => unknown>} */
const steps = {
  'requestDigest (SHA-256 of canonical params; bridge.forward, every call)': () =>
    requestDigest(request.method, request.params),
  'checkModernHeaders (http-front.modernPost)': () => checkModernHeaders(headers, request),
  'readRequestMeta (bridge.handle)': () => readRequestMeta(request.params, ALL_VERSIONS),
  'new AbortController + add/remove one abort listener (modernPost, bridge.wait)': () => {
    const controller = new AbortController();
    const listener = () => undefined;
    controller.signal.addEventListener('abort', listener, { once: true });
    controller.signal.removeEventListener('abort', listener);
  },
  ...(ClientGiveUp === undefined
    ? {}
    : {
        'new ClientGiveUp + add/remove one abort listener (modernPost, bridge.wait since f4ec4fe)': () => {
          const given = new ClientGiveUp();
          const listener = () => undefined;
          given.addEventListener('abort', listener, { once: true });
          given.removeEventListener('abort', listener);
        },
      }),
  'toModernResult (bridge.responseTo)': () => toModernResult('tools/call', result, { serverInfo }),
  'answer bytes, parsed way: toModernResult + serialize + UTF-8 (echo)': () => parsedAnswer(result),
  'answer bytes, parsed way (10 kB result)': () => parsedAnswer(bigResult),
  ...(resultBytes === undefined
    ? {}
    : {
        "answer bytes from the upstream's (result-bytes.ts; echo)": () =>
          resultBytes.toolResultBytes(echoRaw, 7, result, added),
        "answer bytes from the upstream's (10 kB result)": () =>
          resultBytes.toolResultBytes(bigRaw, 7, bigResult, added),
        'the echo answer read, then its bytes made (the bridge before issue 28 session 19)': () =>
          resultBytes.toolResultBytes(
            echoRaw,
            7,
            readMessage(echoRaw, 'the upstream').message.msg.result,
            added,
          ),
      }),
  ...(resultBytes?.smallAnswerBytes === undefined
    ? {}
    : {
        'the echo answer read by smallAnswer only, its bytes made of what it found (since)': () =>
          resultBytes.smallAnswerBytes(echoRaw, smallAnswer(echoRaw), 7, added),
      }),
  'JSON.stringify + JSON.parse of the request (one extra hop through the memory channel)': () =>
    JSON.parse(JSON.stringify(request)),
};

const out = /** @type {Record<string, number>} */ ({});
for (const [name, step] of Object.entries(steps)) {
  for (let i = 0; i < Math.min(COUNT, 20_000); i++) step();
  const batches = [];
  for (let b = 0; b < 5; b++) {
    const start = performance.now();
    for (let i = 0; i < COUNT; i++) step();
    batches.push(((performance.now() - start) * 1000) / COUNT);
  }
  out[name] = Number(median(batches).toFixed(3));
}
process.stdout.write(`${JSON.stringify({ count: COUNT, usPerRun: out }, null, 2)}\n`);

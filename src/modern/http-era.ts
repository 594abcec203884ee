/**
 * Which era a Streamable HTTP upstream speaks, asked with one modern `server/discover` POST
 * (streamable-http.mdx "Backward Compatibility"; the verdict is protocol/modern/probe.ts's). A modern
 * server's DiscoverResult is what the translator shows the Session as its initialize; a modern error that
 * names the versions it supports is asked again once in one of them. The verdict belongs to the server:
 * it is kept per URL for the life of the process, except one that decided nothing (401, 5xx, no
 * connection), which is asked again next time. A server that says nothing in time is taken for 2025.
 * A modern server is asked for its 2025 face too (one initialize, its session ended at once), so that each
 * session can be put on the face that offers what its client sees (era.ts `legacyFaceNeeded`).
 * The gateway asks once at start-up (`probeEraAtStartUp`), so that its first session does not pay for it.
 * That probe's silence is not kept (a server still starting beside taskgate is not 2025), nor is any
 * answer that decides nothing; and a session that comes while it is still under way waits for it
 * JOIN_MS at most, then asks too and takes the first verdict that decides, rather than wait out a probe
 * that a server still starting may leave unanswered to its bound.
 */
import type { Logger } from 'pino';
import type { UpstreamCredential } from '../security/upstream-credentials.js';
import { parseFrame } from '../protocol/frames.js';
import { isObject, type JsonObject } from '../protocol/messages.js';
import {
  CLIENT_CAPABILITIES_META,
  CLIENT_INFO_META,
  MODERN_VERSIONS,
  PROTOCOL_VERSION_META,
} from '../protocol/modern/meta.js';
import { chooseVersion, httpProbeVerdict, type EraVerdict } from '../protocol/modern/probe.js';
import { LEGACY_VERSIONS } from '../protocol/versions.js';
import {
  discard,
  header,
  HttpOrigin,
  mediaType,
  networkReason,
  pump,
  readLimited,
} from '../transport/http-wire.js';
import { SseParser } from '../transport/sse.js';
import { TASKGATE_INFO } from './defaults.js';

export type HttpEra =
  | {
      era: 'modern';
      discover: JsonObject;
      version: string;
      /** The capabilities of the server's 2025 face; undefined when it has none (it refused initialize). */
      legacyCapabilities: JsonObject | undefined;
    }
  | { era: 'legacy'; reason: string; kept: boolean };

const PROBE_ID = 'taskgate-era-probe';
/** How long a session waits for the start-up probe under way before it asks too. */
const JOIN_MS = 1_000;
/** A DiscoverResult is small; a larger answer is not one. */
const MAX_PROBE_BYTES = 1024 * 1024;

interface Asked {
  era: Promise<HttpEra>;
  /** Asked before any session: its silence is not kept, and a session does not wait on it alone. */
  atStartUp: boolean;
  settled: boolean;
}

/** Each URL's verdict, or the probe under way. */
const verdicts = new Map<string, Asked>();

/** The era of the server at `url`, probed once per process (see above). */
export function httpUpstreamEra(
  url: string,
  headers: Record<string, string> | undefined,
  timeoutMs: number,
  logger: Logger,
  credential?: UpstreamCredential,
): Promise<HttpEra> {
  const known = verdicts.get(url);
  if (known === undefined) return ask(url, headers, timeoutMs, logger, credential, false);
  // A settled probe that decided nothing is forgotten as it settles: a settled one here decided.
  if (!known.atStartUp || known.settled) return known.era;
  return firstDecided(known.era, () => {
    // Another session may have asked already.
    const now = verdicts.get(url);
    return now !== undefined && now !== known
      ? now.era
      : ask(url, headers, timeoutMs, logger, credential, false);
  });
}

/** The probe made at start-up, before any session; nothing waits for it. */
export function probeEraAtStartUp(
  url: string,
  headers: Record<string, string> | undefined,
  timeoutMs: number,
  logger: Logger,
  credential?: UpstreamCredential,
): void {
  if (!verdicts.has(url)) void ask(url, headers, timeoutMs, logger, credential, true);
}

function ask(
  url: string,
  headers: Record<string, string> | undefined,
  timeoutMs: number,
  logger: Logger,
  credential: UpstreamCredential | undefined,
  atStartUp: boolean,
): Promise<HttpEra> {
  const forget = (): void => {
    if (verdicts.get(url) === asked) verdicts.delete(url);
  };
  const asked: Asked = {
    era: probe(url, headers, timeoutMs, credential, !atStartUp).then((era) => {
      asked.settled = true;
      if (!decided(era)) forget();
      return era;
    }),
    atStartUp,
    settled: false,
  };
  verdicts.set(url, asked);
  asked.era.catch(forget);
  void asked.era.then((era) =>
    logger.info(
      era.era === 'modern'
        ? `the upstream server speaks ${era.version}: taskgate speaks it over HTTP, and translates for 2025 clients`
        : atStartUp && !era.kept
          ? `the upstream server's era is asked again with the first session (server/discover over HTTP at start-up: ${era.reason})`
          : `the upstream server speaks 2025 (server/discover over HTTP: ${era.reason})`,
    ),
  );
  return asked.era;
}

/** Whether a verdict holds for later sessions: a 2026 server, or a 2025 one that said so. */
function decided(era: HttpEra): boolean {
  return era.era === 'modern' || era.kept;
}

/**
 * The start-up probe's verdict if it decides within JOIN_MS, or later but before the session's own probe
 * (asked after JOIN_MS, or as soon as the start-up probe decided nothing) answers; else the latter's.
 */
function firstDecided(atStartUp: Promise<HttpEra>, askOwn: () => Promise<HttpEra>): Promise<HttpEra> {
  return new Promise((resolve, reject) => {
    let asked = false;
    const askNow = (): void => {
      if (asked) return;
      asked = true;
      clearTimeout(timer);
      askOwn().then(resolve, reject);
    };
    const timer = setTimeout(askNow, JOIN_MS);
    atStartUp.then((era) => {
      if (!decided(era)) return askNow();
      clearTimeout(timer);
      resolve(era);
    }, askNow);
  });
}

/** `keepSilence`: a server that says nothing in time is taken for 2025 for good (not at start-up). */
async function probe(
  url: string,
  headers: Record<string, string> | undefined,
  timeoutMs: number,
  credential: UpstreamCredential | undefined,
  keepSilence: boolean,
): Promise<HttpEra> {
  const origin = new HttpOrigin(new URL(url), credential);
  try {
    let version = MODERN_VERSIONS[0]!;
    for (let attempt = 0; attempt < 2; attempt++) {
      const answer = await discover(origin, headers, version, timeoutMs);
      if ('failed' in answer) {
        return { era: 'legacy', reason: answer.failed, kept: answer.timedOut && keepSilence };
      }
      const verdict: EraVerdict = httpProbeVerdict(answer.status, answer.body);
      if (verdict.era !== 'modern') {
        return { era: 'legacy', reason: verdict.reason, kept: verdict.era === 'legacy' };
      }
      const result = isObject(answer.body) ? answer.body.result : undefined;
      if (isObject(result)) {
        const theirs = Array.isArray(result.supportedVersions) ? result.supportedVersions : [version];
        const chosen = chooseVersion(
          MODERN_VERSIONS,
          theirs.filter((each) => typeof each === 'string'),
        );
        if (chosen !== undefined) {
          const legacyCapabilities = await legacyFace(origin, headers, timeoutMs);
          return { era: 'modern', discover: result, version: chosen, legacyCapabilities };
        }
        return { era: 'legacy', reason: 'it supports no 2026 version taskgate speaks', kept: true };
      }
      const retry = verdict.supportedVersions && chooseVersion(MODERN_VERSIONS, verdict.supportedVersions);
      if (retry === undefined || retry === version) break;
      version = retry;
    }
    return { era: 'legacy', reason: 'a 2026 server that gave no DiscoverResult', kept: true };
  } finally {
    await origin.close();
  }
}

/**
 * The capabilities the server's 2025 face declares in answer to an initialize; its session is ended at
 * once (DELETE). Undefined when it has no 2025 face, or said nothing readable in time.
 */
async function legacyFace(
  origin: HttpOrigin,
  headers: Record<string, string> | undefined,
  timeoutMs: number,
): Promise<JsonObject | undefined> {
  const request = {
    jsonrpc: '2.0',
    id: PROBE_ID,
    method: 'initialize',
    params: { protocolVersion: LEGACY_VERSIONS[0], capabilities: {}, clientInfo: TASKGATE_INFO },
  };
  const answer = await post(origin, { ...headers }, request, timeoutMs);
  if ('failed' in answer) return undefined;
  if (answer.sessionId !== undefined) {
    const ended = {
      ...headers,
      'mcp-session-id': answer.sessionId,
      'mcp-protocol-version': LEGACY_VERSIONS[0]!,
    };
    await origin
      .request('DELETE', ended, AbortSignal.timeout(timeoutMs))
      .then((reply) => discard(reply.body))
      .catch(() => undefined);
  }
  const result = isObject(answer.body) ? answer.body.result : undefined;
  return isObject(result) && isObject(result.capabilities) ? result.capabilities : undefined;
}

/** `timedOut`: the server took the request and said nothing (as a stdio server that is silent: 2025). */
type Answer =
  { status: number; body: unknown; sessionId: string | undefined } | { failed: string; timedOut: boolean };

function discover(
  origin: HttpOrigin,
  headers: Record<string, string> | undefined,
  version: string,
  timeoutMs: number,
): Promise<Answer> {
  const request = {
    jsonrpc: '2.0',
    id: PROBE_ID,
    method: 'server/discover',
    params: {
      _meta: {
        [PROTOCOL_VERSION_META]: version,
        [CLIENT_CAPABILITIES_META]: {},
        [CLIENT_INFO_META]: TASKGATE_INFO,
      },
    },
  };
  return post(
    origin,
    { ...headers, 'mcp-protocol-version': version, 'mcp-method': 'server/discover' },
    request,
    timeoutMs,
  );
}

/** One probe request POSTed, its answer read off JSON or the POST's event stream. */
async function post(
  origin: HttpOrigin,
  headers: Record<string, string>,
  request: object,
  timeoutMs: number,
): Promise<Answer> {
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    const reply = await origin.request(
      'POST',
      { ...headers, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      signal,
      JSON.stringify(request),
    );
    const sessionId = header(reply, 'mcp-session-id');
    if (mediaType(reply) === 'text/event-stream') {
      let body: unknown;
      const parser = new SseParser(MAX_PROBE_BYTES, {
        event: (event) => {
          const message = parsed(event.data);
          if (!isObject(message) || message.id !== PROBE_ID) return;
          body = message;
          reply.body.destroy();
        },
        retry: () => undefined,
        oversized: () => undefined,
      });
      await pump(reply.body, parser);
      return { status: reply.statusCode, body, sessionId };
    }
    const raw = await readLimited(reply.body, MAX_PROBE_BYTES);
    return { status: reply.statusCode, body: raw === undefined ? undefined : parsed(raw), sessionId };
  } catch (error) {
    if (signal.aborted) return { failed: `no answer within ${timeoutMs} ms`, timedOut: true };
    return { failed: `no answer (${networkReason(error)})`, timedOut: false };
  }
}

function parsed(raw: Buffer): unknown {
  try {
    return parseFrame(raw, 'the upstream server');
  } catch {
    return undefined;
  }
}

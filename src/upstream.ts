/**
 * The upstream MCP server of one session: a child process on stdio, or a Streamable HTTP server.
 */
import type { Logger } from 'pino';
import { maskCommand, maskUrl } from './config/mask.js';
import { DEFAULT_REQUEST_TIMEOUT_MS, type Config } from './config/schema.js';
import { FaceChoosingUpstream } from './modern/face-choice.js';
import { ProbingUpstream } from './modern/probing-upstream.js';
import { isObject } from './protocol/messages.js';
import type { UpstreamCredential } from './security/upstream-credentials.js';
import type { Channel } from './transport/channel.js';
import type { OriginConnections } from './transport/http-wire.js';
import { SupervisedStdioUpstream, type SupervisionHooks } from './transport/supervised-upstream.js';
import { telemetry } from './telemetry/telemetry.js';

/**
 * How long a stdio server is given to answer the era probe. A 2025 server answers an unknown method at
 * once (usually -32601); one that says nothing is taken for 2025 after this, or after a quarter of
 * upstream.requestTimeout if that is shorter: the wait must not eat the deadline of the initialize it holds.
 */
const ERA_PROBE_TIMEOUT_MS = 3_000;

/** How long an HTTP server is given to answer the era probe (it decides nothing when it does not: asked again). */
const HTTP_ERA_PROBE_TIMEOUT_MS = 10_000;

export interface Upstream {
  channel: Channel;
  /** For people (logs): the command line or the URL, secrets masked. */
  description: string;
  stop(): Promise<void>;
}

export interface UpstreamOptions extends SupervisionHooks {
  /**
   * The Authorization of every request to an HTTP upstream (upstream-credentials.ts: a token got for it, or
   * the caller's own where the operator asked for that), over any in upstream.headers.
   */
  credential?: UpstreamCredential | undefined;
  /** Which server of `upstreams` this is: its spans name it. */
  server?: string;
  /** An HTTP upstream's keep-alive connections, shared by the sessions given the same (http-wire.ts). */
  connections?: OriginConnections | undefined;
}

export async function openUpstream(
  config: Config,
  logger: Logger,
  options: UpstreamOptions = {},
): Promise<Upstream> {
  const { credential, server, connections, ...hooks } = options;
  const named = server === undefined ? {} : { server };
  const upstream = config.upstream;
  if (!upstream) throw new Error('no upstream server configured');
  if (upstream.url !== undefined) {
    const [{ httpUpstreamEra }, { ModernHttpUpstream }, { ModernUpstreamTranslator }, { HttpUpstream }] =
      await httpClientSide();
    const url = upstream.url;
    const headers = headersFor(upstream, credential);
    const description = maskUrl(upstream.url);
    const era = upstream.era ?? 'auto';
    const found =
      era === 'legacy'
        ? undefined
        : await httpUpstreamEra(url, headers, httpProbeTimeoutMs(upstream), logger, credential);
    const openLegacy = () =>
      new HttpUpstream(
        {
          url,
          headers,
          credential,
          connections,
          handshakeTimeoutMs: upstream.requestTimeout,
          resumeTimeoutMs: upstream.resumeTimeout,
          holdRequestsMs: config.upstreamRestart.holdRequests,
          maxMessageBytes: config.maxMessageBytes,
          paused: hooks.flow?.reads,
        },
        logger,
      );
    if (found?.era === 'modern') {
      const { discover, version, legacyCapabilities } = found;
      const openModern = () =>
        new ModernUpstreamTranslator(
          new ModernHttpUpstream(
            { url, headers, credential, connections, maxMessageBytes: config.maxMessageBytes },
            logger,
          ),
          discover,
          version,
          logger,
          { statusNotifications: config.tasks.statusNotifications },
        );
      // A dual-era server under `auto`: each session on the face that offers what its client sees.
      const channel =
        era === 'auto' && legacyCapabilities !== undefined
          ? new FaceChoosingUpstream(
              {
                modern: isObject(discover.capabilities) ? discover.capabilities : {},
                legacy: legacyCapabilities,
                openModern,
                openLegacy,
              },
              logger,
            )
          : openModern();
      return {
        channel: telemetry().upstream(channel, { transport: 'tcp', serverUrl: url, ...named }),
        description,
        stop: () => channel.close(),
      };
    }
    if (era === 'modern') {
      logger.warn(
        `upstream.era is modern, but the upstream server did not answer server/discover (${found?.reason}): speaking 2025 to it`,
      );
    }
    const channel = openLegacy();
    return {
      channel: telemetry().upstream(channel, { transport: 'tcp', serverUrl: url, ...named }),
      description,
      stop: () => channel.close(),
    };
  }
  if (upstream.command === undefined) throw new Error('no upstream server configured');
  const { command, args, env, cwd } = upstream;
  const channel = await SupervisedStdioUpstream.start(
    { command, args, env, cwd },
    config.upstreamRestart,
    config.maxMessageBytes,
    logger,
    hooks,
  );
  const probing = new ProbingUpstream(
    channel,
    upstream.era ?? 'auto',
    Math.min(ERA_PROBE_TIMEOUT_MS, (upstream.requestTimeout ?? DEFAULT_REQUEST_TIMEOUT_MS) / 4),
    logger,
    { statusNotifications: config.tasks.statusNotifications },
    (reason) => channel.replaceBeforeHandshake(reason),
  );
  return {
    channel: telemetry().upstream(probing, { transport: 'pipe', ...named }),
    description: maskCommand(command, args),
    // Closed first (a translator ends its own calls there: the child's exit is not reported), then stopped.
    stop: async () => {
      await probing.close();
      await channel.stop();
    },
  };
}

/**
 * An HTTP upstream's era (and faces) asked as the gateway starts, so that its first session finds the
 * verdict made or under way (http-era.ts). Nothing waits for it: a probe that fails or decides nothing
 * leaves the sessions to ask as they did before.
 */
export function probeUpstreamAtStartUp(
  config: Config,
  logger: Logger,
  credential: UpstreamCredential | undefined,
): void {
  const upstream = config.upstream;
  if (upstream?.url === undefined || upstream.era === 'legacy') return;
  const url = upstream.url;
  // The HTTP client side is loaded here too, rather than by the first session.
  void httpClientSide()
    .then(([{ probeEraAtStartUp }]) =>
      probeEraAtStartUp(
        url,
        headersFor(upstream, credential),
        httpProbeTimeoutMs(upstream),
        logger,
        credential,
      ),
    )
    .catch((error: unknown) => logger.debug({ err: error }, 'the era probe at start-up did not run'));
}

type UpstreamSettings = NonNullable<Config['upstream']>;

/** The HTTP client side (undici among it), loaded only by a run with an HTTP upstream. */
function httpClientSide() {
  return Promise.all([
    import('./modern/http-era.js'),
    import('./transport/modern-http-upstream.js'),
    import('./modern/upstream-translator.js'),
    import('./transport/http-upstream.js'),
  ]);
}

function headersFor(upstream: UpstreamSettings, credential: UpstreamCredential | undefined) {
  return credential === undefined ? upstream.headers : withoutAuthorization(upstream.headers);
}

function httpProbeTimeoutMs(upstream: UpstreamSettings): number {
  return Math.min(HTTP_ERA_PROBE_TIMEOUT_MS, upstream.requestTimeout ?? DEFAULT_REQUEST_TIMEOUT_MS);
}

/** The headers without any Authorization they had, whatever its case: the credential's goes instead. */
function withoutAuthorization(headers: Record<string, string> | undefined): Record<string, string> {
  return Object.fromEntries(
    Object.entries(headers ?? {}).filter(([name]) => name.toLowerCase() !== 'authorization'),
  );
}

/**
 * Connects a TS SDK v2 client (@modelcontextprotocol/client 2.4.0), a real MCP 2026-07-28 peer, over stdio
 * to a command it spawns or over Streamable HTTP to a URL.
 *
 * Both modes open with `server/discover`. On stdio the SDK runs that probe on a sibling process spawned
 * from the same command (then killed) unless the transport is a subclass of its StdioClientTransport, which
 * probes on the connection itself: `probe: 'in-place'` keeps one process per connection.
 */
import {
  Client,
  StreamableHTTPClientTransport,
  type ClientCapabilities,
  type ElicitRequest,
  type ElicitResult,
} from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

export const MODERN_VERSION = '2026-07-28';

export interface ModernClientOptions {
  /** `pin` (default): 2026-07-28 or fail; `auto`: probe, and fall back to 2025 `initialize`. */
  mode?: 'pin' | 'auto';
  /** Answers the server's elicitation (an MRTR input request); declares `elicitation.form` when given. */
  onElicit?: (params: ElicitRequest['params']) => ElicitResult | Promise<ElicitResult>;
  /** Overrides what `onElicit` declares. */
  capabilities?: ClientCapabilities;
  /** stdio only: where the `server/discover` probe runs (see above); `sibling` by default, as the SDK does. */
  probe?: 'sibling' | 'in-place';
  /** stdio only: added to the environment of the spawned command. */
  env?: Record<string, string>;
}

export interface ModernConnection {
  client: Client;
  /** What the spawned command wrote to stderr (stdio; always empty over HTTP). */
  stderr: () => string;
  close(): Promise<void>;
}

/** The SDK probes on a subclass's own connection instead of spawning a sibling. */
class InPlaceProbeStdioTransport extends StdioClientTransport {}

export async function connectModern(
  target: { command: string[] } | { url: string | URL },
  options: ModernClientOptions = {},
): Promise<ModernConnection> {
  const { onElicit } = options;
  const client = new Client(
    { name: 'taskgate-modern-test', version: '1.0.0' },
    {
      capabilities: options.capabilities ?? (onElicit ? { elicitation: { form: {} } } : {}),
      versionNegotiation: { mode: options.mode === 'auto' ? 'auto' : { pin: MODERN_VERSION } },
    },
  );
  if (onElicit) client.setRequestHandler('elicitation/create', (request) => onElicit(request.params));

  let stderr = '';
  if ('url' in target) {
    await client.connect(new StreamableHTTPClientTransport(new URL(target.url)));
  } else {
    const [command, ...args] = target.command;
    if (command === undefined) throw new Error('connectModern: empty command');
    const Transport = options.probe === 'in-place' ? InPlaceProbeStdioTransport : StdioClientTransport;
    const transport = new Transport({
      command,
      args,
      stderr: 'pipe',
      env: { ...(process.env as Record<string, string>), ...options.env },
    });
    transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    await client.connect(transport);
  }
  return { client, stderr: () => stderr, close: () => client.close() };
}

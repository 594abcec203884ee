/**
 * The per-request `_meta` of MCP 2026-07-28 (basic/index.mdx "General fields: _meta", "Per-request protocol
 * fields"; basic/versioning.mdx "Protocol Version Negotiation"). A modern request carries its version and
 * capabilities itself; nothing is remembered from earlier requests on the same connection.
 */
import { isObject, metaOf, type JsonObject } from '../messages.js';
import { InvalidMetaError, UnsupportedVersionError, ok, refused, type Checked } from './errors.js';

export const PROTOCOL_VERSION_META = 'io.modelcontextprotocol/protocolVersion';
export const CLIENT_CAPABILITIES_META = 'io.modelcontextprotocol/clientCapabilities';
export const CLIENT_INFO_META = 'io.modelcontextprotocol/clientInfo';
export const LOG_LEVEL_META = 'io.modelcontextprotocol/logLevel';
export const SERVER_INFO_META = 'io.modelcontextprotocol/serverInfo';
/**
 * taskgate's own, inside one process only: the capabilities a 2026-07-28 caller declared, carried on the
 * 2025 request the bridge makes of it, for the translator to declare upstream in that request's place.
 */
export const CALLER_CAPABILITIES_META = 'taskgate/callerCapabilities';

/** The protocol versions that are served per request (the modern era), newest first. */
export const MODERN_VERSIONS: readonly string[] = ['2026-07-28'];

/** server/utilities/logging.mdx "Log Levels" (RFC 5424 severities). */
export const LOG_LEVELS = [
  'debug',
  'info',
  'notice',
  'warning',
  'error',
  'critical',
  'alert',
  'emergency',
] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** The schema's `Implementation`: `name` and `version` are required, anything else is carried along. */
export interface Implementation extends JsonObject {
  name: string;
  version: string;
}

/** The schema's `ClientCapabilities`, open to capabilities this file does not know; extensions by id. */
export interface ClientCapabilities extends JsonObject {
  extensions?: Record<string, JsonObject>;
}

export interface ModernRequestMeta {
  protocolVersion: string;
  clientCapabilities: ClientCapabilities;
  clientInfo?: Implementation;
  logLevel?: LogLevel;
}

/** A request is modern when it says which version it speaks; everything else is legacy traffic. */
export function isModernRequest(params: JsonObject | undefined): boolean {
  const meta = metaOf(params);
  return meta !== undefined && PROTOCOL_VERSION_META in meta;
}

/**
 * Reads the per-request fields of a modern request. `supported` is what an unsupported version is answered
 * with (every version taskgate serves, legacy ones included: the client may retry with any of them);
 * only the versions in MODERN_VERSIONS are served per request.
 */
export function readRequestMeta(
  params: JsonObject | undefined,
  supported: readonly string[],
): Checked<ModernRequestMeta> {
  const meta = metaOf(params) ?? {};
  const version = meta[PROTOCOL_VERSION_META];
  if (version === undefined) return refused(missing(PROTOCOL_VERSION_META));
  if (typeof version !== 'string')
    return refused(new InvalidMetaError(PROTOCOL_VERSION_META, 'must be a string'));
  if (!MODERN_VERSIONS.includes(version)) return refused(new UnsupportedVersionError(version, supported));

  const capabilities = meta[CLIENT_CAPABILITIES_META];
  if (capabilities === undefined) return refused(missing(CLIENT_CAPABILITIES_META));
  if (!isObject(capabilities)) {
    return refused(new InvalidMetaError(CLIENT_CAPABILITIES_META, 'must be an object (ClientCapabilities)'));
  }
  const { extensions } = capabilities;
  if (extensions !== undefined && !(isObject(extensions) && Object.values(extensions).every(isObject))) {
    return refused(
      new InvalidMetaError(CLIENT_CAPABILITIES_META, '.extensions must map extension ids to objects'),
    );
  }
  const read: ModernRequestMeta = {
    protocolVersion: version,
    clientCapabilities: capabilities as ClientCapabilities,
  };

  const info = meta[CLIENT_INFO_META];
  if (info !== undefined) {
    if (!isObject(info) || typeof info.name !== 'string' || typeof info.version !== 'string') {
      return refused(
        new InvalidMetaError(CLIENT_INFO_META, 'must be an Implementation with string name and version'),
      );
    }
    read.clientInfo = info as Implementation;
  }

  const level = meta[LOG_LEVEL_META];
  if (level !== undefined) {
    if (!LOG_LEVELS.includes(level as LogLevel)) {
      return refused(new InvalidMetaError(LOG_LEVEL_META, `must be one of ${LOG_LEVELS.join(', ')}`));
    }
    read.logLevel = level as LogLevel;
  }
  return ok(read);
}

const missing = (key: string): InvalidMetaError =>
  new InvalidMetaError(key, 'is missing: every 2026-07-28 request must carry it');

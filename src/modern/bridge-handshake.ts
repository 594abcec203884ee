/**
 * The bridge's own 2025 handshake with its Session (bridge.ts): the initialize it opens the Session with,
 * the upstream's answer that modern requests wait for, and what 2026-07-28 clients are given of it: the
 * `server/discover` result, and the server's identity in every result's `_meta`.
 */
import type { JsonRpcErrorObject } from '../protocol/errors.js';
import { successResponse, type JsonObject, type Request } from '../protocol/messages.js';
import { TASKS_EXTENSION } from '../protocol/modern/capabilities.js';
import { buildDiscoverResult, type LegacyInitializeResult } from '../protocol/modern/discover.js';
import type { ModernAnswer } from '../protocol/modern/exchange.js';
import type { Implementation } from '../protocol/modern/meta.js';
import { addedMembers } from '../protocol/modern/result-bytes.js';
import { CONSERVATIVE_CACHE } from '../protocol/modern/results.js';
import { toJsonRpcError } from '../tasks/wire-errors.js';
import { BRIDGE_CAPABILITIES, LEGACY_VERSION, asInitializeResult } from './legacy-form.js';

/** The id of the bridge's initialize; its own later requests count on from here. */
export const INITIALIZE_ID = 0;

/** taskgate serves the tasks extension in front of any upstream (discover advertises it). */
const TASKGATE_EXTENSIONS = { [TASKS_EXTENSION]: {} };

/** The 2025 initialize the Session is opened with. */
export function initializeRequest(clientInfo: Implementation): Request {
  return {
    jsonrpc: '2.0',
    id: INITIALIZE_ID,
    method: 'initialize',
    params: { protocolVersion: LEGACY_VERSION, capabilities: BRIDGE_CAPABILITIES, clientInfo },
  };
}

/** `server/discover`, answered from the upstream's initialize result. */
export function discoverAnswer(
  request: Request,
  upstream: LegacyInitializeResult,
  supportedVersions: readonly string[],
): ModernAnswer {
  const discovered = buildDiscoverResult(upstream, {
    supportedVersions,
    cache: CONSERVATIVE_CACHE,
    extensions: TASKGATE_EXTENSIONS,
  });
  return { response: successResponse(request.id, discovered) };
}

type Outcome = { result: JsonObject } | { error: JsonRpcErrorObject };

export class BridgeHandshake {
  private readonly initialized: Promise<LegacyInitializeResult>;
  /** What `initialized` resolved with, once it has: read without waiting. */
  private initializedAs: LegacyInitializeResult | undefined;
  private settle!: (outcome: Outcome) => void;
  /** The upstream's identity, put in every result's `_meta` (one object for all results). */
  resultOptions: { serverInfo?: Implementation } = {};
  /** The same, as the members result-bytes.ts puts in a plain call's result. */
  resultMembers = addedMembers(undefined);

  constructor() {
    this.initialized = new Promise<LegacyInitializeResult>((resolve, reject) => {
      this.settle = (outcome) => {
        if ('error' in outcome) return reject(new InitializeFailed(outcome.error));
        this.initializedAs ??= asInitializeResult(outcome.result);
        resolve(this.initializedAs);
      };
    });
    this.initialized.catch(() => undefined);
  }

  /**
   * `serve` with the upstream's initialize result: at once when it is known (no turn of the microtasks),
   * else once it comes; `fail` with the error when the upstream refused initialize or is gone.
   */
  whenInitialized<T>(
    serve: (upstream: LegacyInitializeResult) => T | Promise<T>,
    fail: (error: JsonRpcErrorObject) => T,
  ): T | Promise<T> {
    const upstream = this.initializedAs;
    if (upstream !== undefined) return serve(upstream);
    return this.initialized.then(serve, (error: unknown) =>
      fail(error instanceof InitializeFailed ? error.error : toJsonRpcError(error)),
    );
  }

  /** The Session answered the initialize (or, with an error, is gone before it did). */
  answered(outcome: Outcome): void {
    this.settle(outcome);
    if ('result' in outcome) {
      this.resultOptions = { serverInfo: asInitializeResult(outcome.result).serverInfo };
      this.resultMembers = addedMembers(this.resultOptions.serverInfo);
    }
  }
}

class InitializeFailed extends Error {
  constructor(readonly error: JsonRpcErrorObject) {
    super(error.message);
  }
}

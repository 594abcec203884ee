/**
 * The log levels of the client sessions on a shared upstream (`upstream.sharing: shared` and `pool`). The
 * server has one level: it is kept at the most verbose one a session needs, and what each session set is
 * filtered for it here (the multiplexer, src/transport/shared-upstream.ts, asks `wants`).
 */
import { ErrorCode } from '../protocol/errors.js';
import { errorResponse, successResponse, type Request, type Response } from '../protocol/messages.js';
import { LOG_LEVELS, type LogLevel } from '../protocol/modern/meta.js';
import type { LevelHost, SharedLevelRules, SharedPort, WireId } from '../transport/shared-rules.js';

/** A logging/setLevel sent upstream. */
interface LevelAsked {
  /** The level sent upstream. */
  level: string;
  /** Its place among the setLevels sent: answers that come out of order do not undo a later one. */
  seq: number;
  /** A port's own request: the level it asked for and the one it had before. */
  asked?: string;
  previous?: string | undefined;
}

/** RFC 5424 severities as MCP names them, least severe first; an unknown one ranks as debug. */
const rank = (level: string): number => Math.max(0, LOG_LEVELS.indexOf(level as LogLevel));

export class SharedLevels implements SharedLevelRules {
  /** The level each port set, if it set one and the server did not refuse it. */
  private readonly byPort = new Map<SharedPort, string>();
  /** The setLevels on their way upstream, by wire id. */
  private readonly sent = new Map<WireId, LevelAsked>();
  /**
   * The level the upstream has, as its answers said: set when it accepts a setLevel, not when one is sent,
   * so a refused one leaves it as it was. `debug` stands for its default too (an SDK server sends all);
   * undefined: not known (a setLevel went unanswered, cancelled), so the next level needed is asked.
   */
  private upstreamLevel: string | undefined = 'debug';
  /** The seq of the setLevel whose acceptance set upstreamLevel. */
  private levelSeq = 0;
  private confirmedSeq = 0;
  /** The latest setLevel sent and not yet answered. */
  private inFlight: LevelAsked | undefined;
  private host: LevelHost | undefined;

  bind(host: LevelHost): void {
    this.host = host;
  }

  /**
   * A level the upstream already has, with no other on its way, is answered here. Any other goes upstream
   * and its answer is the port's: accepted, it is the upstream's level; refused, neither the upstream's
   * level as known here nor the port's changes, as on a server of its own that refused it. While another
   * setLevel is in flight the confirmed level is not the one the server will end at (it may accept the
   * one in flight), so even the confirmed level is asked again: sent later, it is the one that holds.
   */
  setLevel(port: SharedPort, request: Request): void {
    const params = request.params;
    const asked = params?.level;
    if (typeof asked !== 'string' || !LOG_LEVELS.includes(asked as LogLevel)) {
      const message = `Invalid params for logging/setLevel: level must be one of ${LOG_LEVELS.join(', ')}`;
      return port.deliver(errorResponse(request.id, { code: ErrorCode.InvalidParams, message }));
    }
    const previous = this.byPort.get(port);
    this.byPort.set(port, asked);
    const level = this.needed();
    if (level === this.upstreamLevel && this.inFlight === undefined) {
      return port.deliver(successResponse(request.id, {}));
    }
    this.ask(port, { ...request, params: { ...params, level } }, { level, seq: 0, asked, previous });
  }

  answered(wireId: WireId, port: SharedPort | undefined, response: Response): void {
    const setLevel = this.sent.get(wireId);
    if (setLevel === undefined) return;
    this.sent.delete(wireId);
    if (this.inFlight === setLevel) this.inFlight = undefined;
    if ('result' in response) {
      if (setLevel.seq > this.confirmedSeq) {
        this.confirmedSeq = setLevel.seq;
        this.upstreamLevel = setLevel.level;
      }
      return;
    }
    this.host?.logger.warn(
      { logLevel: setLevel.level, error: response.error },
      'shared upstream: the server refused a log level its sessions need; it is not asked again until they change',
    );
    // Refused: the port keeps the level it had, unless it has asked for another since.
    if (port === undefined || setLevel.asked === undefined || this.byPort.get(port) !== setLevel.asked)
      return;
    if (setLevel.previous === undefined) this.byPort.delete(port);
    else this.byPort.set(port, setLevel.previous);
  }

  abandoned(wireId: WireId): void {
    const setLevel = this.sent.get(wireId);
    if (setLevel === undefined) return;
    this.sent.delete(wireId);
    if (this.inFlight === setLevel) this.inFlight = undefined;
    // The server may have taken it or not: the next level needed is asked, whatever it is.
    if (setLevel.seq > this.confirmedSeq) this.upstreamLevel = undefined;
  }

  /** A port that never set a level hears every message, as it would from a server of its own. */
  wants(port: SharedPort, level: unknown): boolean {
    const own = this.byPort.get(port);
    return own === undefined || typeof level !== 'string' || rank(level) >= rank(own);
  }

  /** A port left: the server is kept at the level the others need. */
  detached(port: SharedPort): void {
    this.byPort.delete(port);
    this.keep();
  }

  /**
   * Tells the upstream the level its ports need now, if that is not the one it has. (A new session, until
   * it sets a level of its own, hears everything.)
   */
  keep(): void {
    const level = this.needed();
    // The level the server will end at: the latest on its way if there is one (it outranks the confirmed
    // one), else the confirmed one. That one is not asked again; any other is, after the one in flight.
    // (Refused, it is not retried: the warning says so, and the next change of ports asks again.)
    if (level === (this.inFlight?.level ?? this.upstreamLevel)) return;
    const request: Request = { jsonrpc: '2.0', id: 0, method: 'logging/setLevel', params: { level } };
    this.ask(undefined, request, { level, seq: 0 });
  }

  /** A restarted server has its default level, and what was sent to the one before is moot. */
  upstreamClosed(): void {
    this.sent.clear();
    this.upstreamLevel = 'debug';
    this.inFlight = undefined;
  }

  private ask(port: SharedPort | undefined, request: Request, setLevel: LevelAsked): void {
    if (this.host === undefined) return;
    setLevel.seq = ++this.levelSeq;
    this.inFlight = setLevel;
    this.host.ask(port, request, (wireId) => this.sent.set(wireId, setLevel));
  }

  /**
   * The level the upstream must have: the most verbose any of the ports asked for, `debug` (everything)
   * when one of them never set any, as a server of its own would send it everything.
   */
  private needed(): string {
    let lowest: string | undefined;
    for (const port of this.host?.ports() ?? []) {
      const level = this.byPort.get(port) ?? LOG_LEVELS[0];
      if (lowest === undefined || rank(level) < rank(lowest)) lowest = level;
    }
    return lowest ?? LOG_LEVELS[0];
  }
}

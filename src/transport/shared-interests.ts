/**
 * What the ports of a shared upstream asked to hear: resource subscriptions and log levels. The upstream
 * holds one subscription per URI and one log level; these tables say which port wants what of it.
 */

/** RFC 5424 severities as MCP names them, least severe first. */
const LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'];

const rank = (level: string): number => {
  const found = LEVELS.indexOf(level);
  return found === -1 ? 0 : found;
};

export class Subscriptions<Port> {
  private readonly byUri = new Map<string, Set<Port>>();

  /** Adds the port; true when it is the URI's first subscriber (the upstream must be told). */
  subscribe(uri: string, port: Port): boolean {
    const ports = this.byUri.get(uri);
    if (ports !== undefined) {
      ports.add(port);
      return false;
    }
    this.byUri.set(uri, new Set([port]));
    return true;
  }

  /** Removes the port; true when it was the URI's last subscriber (the upstream must be told). */
  unsubscribe(uri: string, port: Port): boolean {
    const ports = this.byUri.get(uri);
    if (ports?.delete(port) !== true || ports.size > 0) return false;
    this.byUri.delete(uri);
    return true;
  }

  subscribers(uri: string): Iterable<Port> {
    return this.byUri.get(uri) ?? [];
  }

  /** Drops the port everywhere; the URIs it was the last subscriber of. */
  leave(port: Port): string[] {
    return [...this.byUri.keys()].filter((uri) => this.unsubscribe(uri, port));
  }

  /** The upstream forgot them all (it restarted). */
  clear(): void {
    this.byUri.clear();
  }
}

export class LogLevels<Port> {
  private readonly byPort = new Map<Port, string>();

  set(port: Port, level: string): void {
    this.byPort.set(port, level);
  }

  leave(port: Port): void {
    this.byPort.delete(port);
  }

  /**
   * The level the upstream must have: the most verbose any of the ports asked for, `debug` (everything)
   * when one of them never set any, as a server of its own would send it everything.
   */
  upstreamLevel(ports: Iterable<Port>): string {
    let lowest: string | undefined;
    for (const port of ports) {
      const level = this.byPort.get(port) ?? LEVELS[0]!;
      if (lowest === undefined || rank(level) < rank(lowest)) lowest = level;
    }
    return lowest ?? LEVELS[0]!;
  }

  /** A port that never set a level hears every message, as it would from a server of its own. */
  wants(port: Port, level: unknown): boolean {
    const own = this.byPort.get(port);
    return own === undefined || typeof level !== 'string' || rank(level) >= rank(own);
  }
}

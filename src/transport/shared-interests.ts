/**
 * Which ports of a shared upstream subscribed to which resources: the upstream holds one subscription per
 * URI, this table says which ports want its updates.
 */

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

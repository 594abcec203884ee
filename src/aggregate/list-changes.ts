/**
 * The client's `notifications/{tools,prompts,resources}/list_changed` for several servers: one for however
 * many changes (of any server, or of servers coming and going) come within `windowMs` of the first. A change
 * always has a notification sent after it, so none is lost; the client lists once, not once per server.
 */
export type ListKind = 'tools' | 'prompts' | 'resources';

export class ListChanges {
  private readonly pending = new Map<ListKind, NodeJS.Timeout>();
  private closed = false;

  constructor(
    private readonly notify: (kind: ListKind) => void,
    private readonly windowMs: number,
  ) {}

  changed(kind: ListKind): void {
    if (this.closed || this.pending.has(kind)) return;
    const timer = setTimeout(() => {
      this.pending.delete(kind);
      this.notify(kind);
    }, this.windowMs);
    this.pending.set(kind, timer);
  }

  /** Nothing more is sent (the client is gone). */
  close(): void {
    this.closed = true;
    for (const timer of this.pending.values()) clearTimeout(timer);
    this.pending.clear();
  }
}

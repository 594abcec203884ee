/**
 * The status changes of a store's tasks, handed out by session: one listener on the store whatever the
 * number of sessions, so that a change costs one lookup rather than a call to every session's services
 * (a gateway holds a thousand sessions, each with two TaskServices).
 */
import type { TaskRecord } from './state.js';
import type { TaskStore } from './store.js';

type Listener = (record: TaskRecord) => void;

class SessionTransitions {
  private readonly bySession = new Map<string, Set<Listener>>();
  private unsubscribe: (() => void) | undefined;

  constructor(private readonly store: TaskStore) {}

  /** `listener` hears the changes of the tasks of `sessionId`; the function returned stops it. */
  on(sessionId: string, listener: Listener): () => void {
    this.unsubscribe ??= this.store.onTransition((record) => this.changed(record));
    let listeners = this.bySession.get(sessionId);
    if (listeners === undefined) this.bySession.set(sessionId, (listeners = new Set()));
    listeners.add(listener);
    return () => {
      listeners.delete(listener);
      if (listeners.size > 0 || this.bySession.get(sessionId) !== listeners) return;
      this.bySession.delete(sessionId);
      if (this.bySession.size > 0) return;
      this.unsubscribe?.();
      this.unsubscribe = undefined;
    };
  }

  private changed(record: TaskRecord): void {
    const listeners = this.bySession.get(record.sessionId);
    if (listeners === undefined) return;
    for (const listener of listeners) {
      try {
        listener(record);
      } catch (error) {
        // As the stores do: one failing listener keeps the change from no other.
        process.emitWarning(error as Error);
      }
    }
  }
}

const byStore = new WeakMap<TaskStore, SessionTransitions>();

/** The per-session view of `store`'s transitions (one per store object). */
export function sessionTransitions(store: TaskStore): SessionTransitions {
  let transitions = byStore.get(store);
  if (transitions === undefined) byStore.set(store, (transitions = new SessionTransitions(store)));
  return transitions;
}

/**
 * A store as the Session of one of several servers behind one endpoint uses it: every task it creates
 * names that server (metrics, audit and the dashboard show it). Every other call is the store's own, its
 * very promise, as in noticingCreations (src/session/running-tasks.ts).
 */
import type { TaskStore } from './store.js';

export function tasksOfServer(store: TaskStore, server: string): TaskStore {
  return {
    create: (task) => store.create({ ...task, server }),
    get: (taskId) => store.get(taskId),
    update: (taskId, change) => store.update(taskId, change),
    list: (owner, cursor, limit) => store.list(owner, cursor, limit),
    waitForTerminal: (taskId, signal) => store.waitForTerminal(taskId, signal),
    onTransition: (listener) => store.onTransition(listener),
    close: () => store.close(),
    inputs: store.inputs,
  };
}

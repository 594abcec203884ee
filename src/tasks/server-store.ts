/**
 * A store as the Session of one of several servers behind one endpoint uses it: every task it creates
 * names that server (metrics, audit and the dashboard show it).
 */
import { withCreate, type TaskStore } from './store.js';

export function tasksOfServer(store: TaskStore, server: string): TaskStore {
  return withCreate(store, (task) => store.create({ ...task, server }));
}

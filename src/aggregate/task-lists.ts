/**
 * `tasks/list` across the servers: one page of each, the task ids prefixed, behind one opaque cursor
 * (src/aggregate/cursor.ts), and a page of the caller's tasks that servers run themselves for its other
 * sessions (replica-tasks.ts), which this session's servers do not know, behind the same cursor.
 */
import { ProtocolError } from '../protocol/errors.js';
import type { JsonObject } from '../protocol/messages.js';
import { decodeCursor, encodeCursor, type Position } from './cursor.js';
import type { Member } from './member.js';
import { withOuterTaskIds, type TaskIdNames } from './task-ids.js';

/** One page of the tasks listed elsewhere, from where `from` (a page's `next`) says; the first without. */
export type ListedElsewhere = (from: string | undefined) => Promise<{ tasks: JsonObject[]; next?: string }>;

/** The cursor's entry for the tasks listed elsewhere: no server is named so (only letters, digits, "_", "-"). */
const ELSEWHERE = '*';

export class TaskLists {
  constructor(private readonly names: TaskIdNames) {}

  async list(
    members: Member[],
    params: JsonObject | undefined,
    elsewhere: ListedElsewhere = () => Promise.resolve({ tasks: [] }),
  ): Promise<JsonObject> {
    const cursor = params?.cursor;
    const position: Position =
      cursor === undefined
        ? [...members.map((member): Position[number] => [member.name, null]), [ELSEWHERE, null]]
        : decodeCursor('tasks/list', cursor);
    const from = position.find(([name]) => name === ELSEWHERE);
    const byName = new Map(members.map((member) => [member.name, member]));
    const [outcomes, listed] = await Promise.all([
      Promise.all(
        position.map(async ([name, own]) => {
          const member = byName.get(name);
          if (member === undefined) return undefined;
          const outcome = await member.ask(
            'tasks/list',
            own === null ? undefined : { ...params, cursor: own },
          );
          return { member, outcome };
        }),
      ),
      from === undefined ? undefined : elsewhere(from[1] ?? undefined),
    ]);
    const tasks: unknown[] = [];
    const next: Position = [];
    let refused: ProtocolError | undefined;
    for (const entry of outcomes) {
      if (entry === undefined) continue;
      const { member, outcome } = entry;
      if (!outcome.ok) {
        refused ??= new ProtocolError(outcome.error.code, outcome.error.message, outcome.error.data);
        continue;
      }
      const renamed = withOuterTaskIds(outcome.result, member.name, this.names) ?? outcome.result;
      if (Array.isArray(renamed.tasks)) tasks.push(...(renamed.tasks as unknown[]));
      if (typeof outcome.result.nextCursor === 'string') next.push([member.name, outcome.result.nextCursor]);
    }
    if (listed !== undefined) {
      tasks.push(...listed.tasks);
      if (listed.next !== undefined) next.push([ELSEWHERE, listed.next]);
    }
    if (refused !== undefined && tasks.length === 0 && next.length === 0) throw refused;
    return { tasks, ...(next.length === 0 ? {} : { nextCursor: encodeCursor('tasks/list', next) }) };
  }
}

/**
 * `tasks/list` across the servers: one page of each, the task ids prefixed, behind one opaque cursor
 * (src/aggregate/cursor.ts); the first page also names the caller's tasks that servers run themselves for
 * its other sessions (replica-tasks.ts), which this session's servers do not know.
 */
import { ProtocolError } from '../protocol/errors.js';
import type { JsonObject } from '../protocol/messages.js';
import { decodeCursor, encodeCursor, type Position } from './cursor.js';
import type { Member } from './member.js';
import type { Names } from './names.js';
import { withOuterTaskIds } from './task-ids.js';

export class TaskLists {
  constructor(private readonly names: Names) {}

  async list(
    members: Member[],
    params: JsonObject | undefined,
    elsewhere: () => Promise<JsonObject[]> = () => Promise.resolve([]),
  ): Promise<JsonObject> {
    const cursor = params?.cursor;
    const others = cursor === undefined ? elsewhere() : Promise.resolve([]);
    const position: Position =
      cursor === undefined
        ? members.map((member) => [member.name, null])
        : decodeCursor('tasks/list', cursor);
    const byName = new Map(members.map((member) => [member.name, member]));
    const outcomes = await Promise.all(
      position.map(async ([name, own]) => {
        const member = byName.get(name);
        if (member === undefined) return undefined;
        const outcome = await member.ask('tasks/list', own === null ? undefined : { ...params, cursor: own });
        return { member, outcome };
      }),
    );
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
    tasks.push(...(await others));
    if (refused !== undefined && tasks.length === 0 && next.length === 0) throw refused;
    return { tasks, ...(next.length === 0 ? {} : { nextCursor: encodeCursor('tasks/list', next) }) };
  }
}

/**
 * tasks/list over both sides: taskgate's own tasks first (where it may list them), then the upstream's,
 * behind one cursor (cursor.ts). Each page is filled from both: the store's last page goes out with as
 * many of the upstream's tasks as fit in `tasks.listPageSize`, and the rest of an upstream page waits for
 * the next one. No page is empty while it has a cursor: a client may stop at an empty page.
 */
import { ErrorCode, ProtocolError } from '../protocol/errors.js';
import type { JsonObject } from '../protocol/messages.js';
import { InvalidCursorError } from './errors.js';
import { decodeListPosition, encodeListPosition, type ListPosition } from './cursor.js';
import type { OwnCall } from './own-call.js';
import type { TaskPage } from './store.js';
import { toWireTask } from './state.js';

/** Upstream pages read at most for one page of the answer (past them, the upstream lists nothing). */
const MAX_UPSTREAM_PAGES = 20;

export interface TaskListSides {
  /** taskgate may list its own tasks (they are bound to an identity, or it was told to). */
  listsOwn: boolean;
  /** The upstream serves tasks/list for its own tasks. */
  upstreamLists: boolean;
  /** A page of the store's tasks of this requester, `listPageSize` at most. */
  ownPage(cursor: string | undefined): Promise<TaskPage>;
  callUpstream(method: string, params: JsonObject): OwnCall;
  pageSize: number;
}

export async function listBothSides(sides: TaskListSides, cursor: string | undefined): Promise<JsonObject> {
  const start: ListPosition | undefined =
    cursor === undefined
      ? sides.listsOwn
        ? undefined
        : { side: 'upstream', cursor: undefined, skip: 0 }
      : decodeListPosition(cursor);
  if (start?.side === 'upstream' && !sides.upstreamLists) throw new InvalidCursorError();
  const tasks: unknown[] = [];
  if (start === undefined || start.side === 'own') {
    if (!sides.listsOwn) throw new InvalidCursorError();
    const page = await sides.ownPage(start?.cursor);
    tasks.push(...page.tasks.map(toWireTask));
    if (page.nextCursor !== undefined) {
      return { tasks, nextCursor: encodeListPosition({ side: 'own', cursor: page.nextCursor }) };
    }
    if (!sides.upstreamLists) return { tasks };
  }
  const from = start?.side === 'upstream' ? start : { side: 'upstream' as const, cursor: undefined, skip: 0 };
  return fillFromUpstream(sides, tasks, from);
}

async function fillFromUpstream(
  sides: TaskListSides,
  tasks: unknown[],
  from: Extract<ListPosition, { side: 'upstream' }>,
): Promise<JsonObject> {
  let { cursor, skip } = from;
  for (let read = 0; read < MAX_UPSTREAM_PAGES; read++) {
    const here = (): JsonObject => ({
      tasks,
      nextCursor: encodeListPosition({ side: 'upstream', cursor, skip }),
    });
    let result: JsonObject;
    try {
      result = await listUpstream(sides, cursor);
    } catch (error) {
      // The tasks of this page are not lost to the upstream's failure: the next page reports it.
      if (tasks.length > 0) return here();
      throw error;
    }
    const theirs = Array.isArray(result.tasks) ? result.tasks.slice(skip) : [];
    const room = sides.pageSize - tasks.length;
    if (theirs.length > room) {
      tasks.push(...theirs.slice(0, room));
      skip += room;
      return here();
    }
    tasks.push(...theirs);
    if (typeof result.nextCursor !== 'string') return { tasks };
    cursor = result.nextCursor;
    skip = 0;
    if (tasks.length === sides.pageSize) return here();
  }
  if (tasks.length > 0) return { tasks, nextCursor: encodeListPosition({ side: 'upstream', cursor, skip }) };
  throw new ProtocolError(
    ErrorCode.InternalError,
    `The upstream server answered tasks/list with ${MAX_UPSTREAM_PAGES} empty pages in a row`,
  );
}

async function listUpstream(sides: TaskListSides, cursor: string | undefined): Promise<JsonObject> {
  const answer = await sides.callUpstream('tasks/list', cursor === undefined ? {} : { cursor }).done;
  if (!answer) throw new ProtocolError(ErrorCode.InternalError, 'tasks/list was cancelled');
  if ('error' in answer.response) {
    const { code, message, data } = answer.response.error;
    throw new ProtocolError(code, message, data);
  }
  return answer.response.result;
}

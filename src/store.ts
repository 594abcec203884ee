/**
 * The task store of a run, from `config.store`: in this process (the default), or in a Redis shared by
 * several replicas. A Redis that cannot be reached at start-up does not keep taskgate from starting: until
 * it can be reached, every store operation fails at once with TaskStoreUnavailableError (-32002 on the
 * wire: a task-augmented call is refused, plain calls never touch the store), and the store recovers by
 * itself once Redis is there.
 */
import type { Logger } from 'pino';
import type { Config } from './config/schema.js';
import { MemoryTaskStore, type MemoryStoreOptions } from './tasks/memory-store.js';
import type { TaskStore } from './tasks/store.js';

/** How long start-up waits for Redis before it goes on without it. */
const CONNECT_WITHIN_MS = 2_000;

/** Opens the configured store; `memory` adds options of the memory store (hooks), when it is the one. */
export async function openStore(
  config: Config,
  logger: Logger,
  memory: Partial<MemoryStoreOptions> = {},
): Promise<TaskStore> {
  const limits = { maxTasks: config.tasks.maxTasks, maxResultBytes: config.tasks.maxResultBytes };
  const { url, password, keyPrefix, cursorSecret, leaseTtl, commandTimeout } = config.store;
  if (url === undefined) return new MemoryTaskStore({ ...memory, ...limits });
  // The config's own check requires it with a URL; this only satisfies the type checker.
  if (cursorSecret === undefined) throw new Error('store.cursorSecret is required with store.url');
  // Loaded only for a run that uses Redis (ioredis is a fair part of a start's time).
  const [{ RedisTaskStore }, { redact }] = await Promise.all([
    import('./tasks/redis-store.js'),
    import('./tasks/redis-link.js'),
  ]);
  const store = new RedisTaskStore({
    url,
    keyPrefix,
    cursorSecret,
    leaseTtlMs: leaseTtl,
    commandTimeoutMs: commandTimeout,
    ...limits,
    ...(password === undefined ? {} : { password }),
    logger,
  });
  const where = { redis: redact(url), keyPrefix, executor: store.executorId };
  try {
    await store.ready(CONNECT_WITHIN_MS);
    logger.info(where, 'task store: Redis');
  } catch (error) {
    logger.warn(
      { ...where, err: (error as Error).message },
      'task store: Redis cannot be reached yet; taskgate starts without it: calls with a task fail (-32002) until it can, plain calls work',
    );
  }
  return store;
}

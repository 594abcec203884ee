/**
 * A Redis for tests: `REDIS_URL` when it is set, else a private `redis-server` (no persistence) on a free
 * port, started for the test file and stopped after it. Without either, the tests are skipped locally and
 * fail on CI (CI=true): a CI run that silently skipped its Redis tests would prove nothing.
 *
 *   const redis = await redisForTests();            // top level of the test file
 *   describe.skipIf(!redis)('…', () => { … redis!.url … });
 *   afterAll(() => redis?.stop());
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { Redis } from 'ioredis';
import { freePort } from './ports.js';

export const REDIS_SERVER = process.env.REDIS_SERVER ?? 'redis-server';
const START_WITHIN_MS = 10_000;

export interface TestRedis {
  url: string;
  /** Deletes every key the tests wrote (under KEY_ROOT), then stops the private server if there is one. */
  stop(): Promise<void>;
}

/** Every test key lives under this root, one sub-prefix per run, so cleanup never touches anything else. */
export const KEY_ROOT = `taskgate-test:${randomUUID()}:`;
let prefixes = 0;
/** A fresh key prefix for one store (or one group of stores that share tasks). */
export const freshPrefix = (): string => `${KEY_ROOT}${++prefixes}:`;

export async function redisForTests(): Promise<TestRedis | undefined> {
  const fromEnv = process.env.REDIS_URL;
  if (fromEnv) return { url: fromEnv, stop: () => dropKeys(fromEnv) };
  const server = await startRedisServer().catch((error: unknown) => {
    if (process.env.CI === 'true') {
      throw new Error(`CI needs Redis: set REDIS_URL or install ${REDIS_SERVER} (${String(error)})`);
    }
    return undefined;
  });
  if (!server) return undefined;
  return { url: server.url, stop: () => server.stop() };
}

export interface RedisServer {
  url: string;
  port: number;
  stop(): Promise<void>;
}

/**
 * A redis-server of the test's own (to stop, pause or flush, even when REDIS_URL names a shared one);
 * without the binary the test is skipped, except under CI, where it fails.
 */
export async function privateRedisServer(context: { skip(): never }): Promise<RedisServer> {
  const server = await startRedisServer().catch((error: unknown) => {
    if (process.env.CI === 'true') throw error;
    return undefined;
  });
  return server ?? context.skip();
}

/** Starts a private redis-server (on `port`, or a free one) and resolves once it accepts connections. */
export async function startRedisServer(port?: number): Promise<RedisServer> {
  if (port !== undefined) return startOn(port);
  // A free port can be taken between the probe and the start: try another one then.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOn(await freePort());
    } catch (error) {
      if (attempt === 3) throw error;
    }
  }
}

async function startOn(chosen: number): Promise<RedisServer> {
  const child = spawn(
    REDIS_SERVER,
    ['--port', String(chosen), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: ['ignore', 'pipe', 'ignore'] },
  );
  const killOnExit = (): void => void child.kill('SIGKILL');
  process.once('exit', killOnExit);
  try {
    await readyOrExit(child);
    child.stdout?.resume();
  } catch (error) {
    child.kill('SIGKILL');
    process.off('exit', killOnExit);
    throw error;
  }
  return {
    url: `redis://127.0.0.1:${chosen}`,
    port: chosen,
    stop: async () => {
      process.off('exit', killOnExit);
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Waits for the server's "Ready to accept connections" line; rejects if it exits or takes too long. */
function readyOrExit(child: ChildProcess): Promise<void> {
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(
      () => fail(new Error(`redis-server not ready within ${START_WITHIN_MS} ms`)),
      START_WITHIN_MS,
    );
    const onData = (chunk: Buffer): void => {
      output += chunk.toString();
      if (/Ready to accept connections/.test(output)) {
        cleanup();
        resolve();
      }
    };
    const onExit = (code: number | null): void => fail(new Error(`redis-server exited (${code}): ${output}`));
    const fail = (error: Error): void => {
      cleanup();
      reject(error);
    };
    const cleanup = (): void => {
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      child.off('exit', onExit);
      child.off('error', fail);
    };
    child.stdout?.on('data', onData);
    child.once('exit', onExit);
    child.once('error', fail);
  });
}

/** Deletes every key under KEY_ROOT on a shared Redis. */
async function dropKeys(url: string): Promise<void> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
  try {
    const stream = redis.scanStream({ match: `${KEY_ROOT}*`, count: 1_000 });
    for await (const keys of stream as AsyncIterable<string[]>) {
      if (keys.length > 0) await redis.unlink(...keys);
    }
  } finally {
    await redis.quit();
  }
}

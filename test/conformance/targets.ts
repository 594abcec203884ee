/**
 * What the conformance runs go against: a fixture's own HTTP mode (the baseline), or taskgate's HTTP front
 * in front of one, its upstream a child on stdio per session or the fixture's HTTP mode (a sidecar).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startHttpFixture } from '../helpers/http-fixture.js';
import { Gateway, type FixtureName } from '../helpers/taskgate.js';
import type { Target } from './tables.js';

/** A fixture's own HTTP mode. */
export async function fixtureTarget(name: FixtureName, env: Record<string, string> = {}): Promise<Target> {
  const fixture = await startHttpFixture(name, { env });
  return { url: fixture.url, stop: () => fixture.stop('SIGTERM') };
}

/** taskgate's HTTP front, each session with its own `upstream` child on stdio. */
export async function gatewayTarget(upstream: string[], flags: string[] = []): Promise<Target> {
  const gateway = await Gateway.start(upstream, flags);
  return { url: gateway.url.href, stop: () => gateway.stop() };
}

export interface SidecarOptions {
  flags?: string[];
  /** The fixture's environment. */
  env?: Record<string, string>;
  /**
   * upstream settings no flag sets (requestTimeout): the URL then goes in a config file with them,
   * instead of `--upstream-url`.
   */
  upstream?: Record<string, unknown>;
}

/** taskgate as a sidecar in front of a fixture's HTTP mode. */
export async function sidecarTarget(name: FixtureName, options: SidecarOptions = {}): Promise<Target> {
  const fixture = await startHttpFixture(name, { env: options.env ?? {} });
  const cleanups = [() => fixture.stop('SIGTERM')];
  const stop = async (): Promise<void> => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  };
  try {
    let where = ['--upstream-url', fixture.url];
    if (options.upstream !== undefined) {
      const dir = await mkdtemp(join(tmpdir(), 'taskgate-conformance-'));
      cleanups.push(() => rm(dir, { recursive: true, force: true }));
      const config = join(dir, 'config.json');
      await writeFile(config, JSON.stringify({ upstream: { url: fixture.url, ...options.upstream } }));
      where = ['--config', config];
    }
    const gateway = await Gateway.start([], [...(options.flags ?? []), ...where]);
    cleanups.push(() => gateway.stop());
    return { url: gateway.url.href, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

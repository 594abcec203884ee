/**
 * A run loads only what it needs (issue 29): most of a start's time goes on loading modules, and the tests
 * start the CLI hundreds of times. Each case reads, at exit, which packages taskgate's process loaded.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { RawPeer } from '../helpers/taskgate.js';

const REPORTER = fileURLToPath(new URL('../fixtures/report-packages.js', import.meta.url));

/** What only some runs need: a config file, the metrics an admin listener shows, Redis, an HTTP upstream. */
const ON_DEMAND = ['yaml', 'prom-client', '@opentelemetry/api', 'ioredis', 'undici'];

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Starts taskgate on stdio with `flags`, completes the handshake, ends it; the packages it loaded. */
async function packagesOf(flags: string[]): Promise<string[]> {
  const peer = await RawPeer.initialized('legacy', flags, { NODE_OPTIONS: `--import ${REPORTER}` });
  cleanups.push(() => peer.kill());
  await peer.stop();
  const line = /^packages loaded: (.*)$/m.exec(peer.stderr);
  expect(line, `no report in:\n${peer.stderr}`).not.toBeNull();
  return JSON.parse(line![1]!) as string[];
}

describe('what a stdio run loads', () => {
  it('without a config file, an admin listener, Redis or an HTTP upstream: none of what they need', async () => {
    const loaded = await packagesOf([]);
    expect(loaded).toContain('pino');
    expect(loaded.filter((name) => ON_DEMAND.includes(name))).toEqual([]);
  });

  it('with an admin listener: prom-client, for its /metrics', async () => {
    const loaded = await packagesOf(['--admin-listen', '127.0.0.1:0']);
    expect(loaded).toContain('prom-client');
    expect(loaded).not.toContain('yaml');
  });

  it('with a config file: yaml, to read it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'taskgate-startup-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const file = join(dir, 'taskgate.yaml');
    await writeFile(file, 'tasks:\n  pollInterval: 500\n');
    const loaded = await packagesOf(['--config', file]);
    expect(loaded).toContain('yaml');
    expect(loaded).not.toContain('prom-client');
  });
});

/**
 * The `store` settings: in memory unless a Redis URL is given, and then a cursor secret that every replica
 * shares, which is never taken from a flag and never shown.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { UsageError, parseCommandLine } from '../../src/config/flags.js';
import { loadConfig, type Environment } from '../../src/config/load.js';
import { MASK, maskSecrets } from '../../src/config/mask.js';
import { problemsOf as refusedWith } from '../helpers/config-problems.js';

const SECRET = 'a cursor secret of more than sixteen bytes';
const dir = mkdtempSync(join(tmpdir(), 'taskgate-config-store-'));

const load = (argv: string[], env: Environment = {}) => loadConfig(parseCommandLine(argv), env).config;

const problemsOf = (argv: string[], env: Environment = {}): string[] => refusedWith(() => load(argv, env));

describe('the store settings', () => {
  it('keep tasks in memory by default', () => {
    expect(load([]).store).toEqual({ keyPrefix: 'taskgate:', leaseTtl: 15_000, commandTimeout: 10_000 });
  });

  it('take the URL, prefix and lease from flags, and the secrets from variables only', () => {
    const store = load(
      ['--store', 'rediss://redis.internal:6380/2', '--store-key-prefix', 'gw:', '--store-lease-ttl', '5000'],
      { TASKGATE_STORE_CURSOR_SECRET: SECRET, TASKGATE_STORE_PASSWORD: 'pw' },
    ).store;
    expect(store).toEqual({
      url: 'rediss://redis.internal:6380/2',
      keyPrefix: 'gw:',
      leaseTtl: 5_000,
      commandTimeout: 10_000,
      cursorSecret: SECRET,
      password: 'pw',
    });
  });

  it('refuses a secret given as a flag, which anyone could read in the process list', () => {
    for (const flag of ['--store-cursor-secret', '--store-password']) {
      expect(() => parseCommandLine([flag, SECRET])).toThrow(UsageError);
    }
  });

  it('needs a cursor secret with a Redis URL, and says how to make one', () => {
    expect(problemsOf(['--store', 'redis://127.0.0.1:6379'])).toEqual([
      'store.cursorSecret: required with store.url: tasks/list cursors are signed with it, so every replica needs the same secret of at least 16 bytes (e.g. TASKGATE_STORE_CURSOR_SECRET=$(openssl rand -hex 32))',
    ]);
  });

  it('refuses a short cursor secret without showing it', () => {
    const problems = problemsOf(['--store', 'redis://127.0.0.1:6379'], {
      TASKGATE_STORE_CURSOR_SECRET: 'hunter2',
    });
    expect(problems).toEqual([
      'store.cursorSecret: expected at least 16 bytes, got 7 (e.g. openssl rand -hex 32)',
    ]);
    expect(problems.join('\n')).not.toContain('hunter2');
  });

  it('accepts only redis:// and rediss:// URLs, and a lease of at least 100 ms', () => {
    const env = { TASKGATE_STORE_CURSOR_SECRET: SECRET };
    expect(problemsOf(['--store', 'http://127.0.0.1:6379', '--store-lease-ttl', '10'], env)).toEqual([
      '--store: expected a URL (redis:// or rediss://), got "http://127.0.0.1:6379"',
      '--store-lease-ttl: expected an integer from 100 to 2147483647, got 10',
    ]);
  });
});

describe('a refinement’s own message', () => {
  it('is the problem given, rather than the shape of the value', () => {
    const path = join(dir, 'two-upstreams.yaml');
    writeFileSync(path, 'upstream:\n  args: [x]\n');
    expect(problemsOf(['--config', path])).toEqual([
      'upstream: give exactly one of command (a stdio server) or url (a Streamable HTTP server) (line 2)',
    ]);
  });
});

describe('print-config masking', () => {
  it('masks the cursor secret, the password and the password of any URL', () => {
    expect(
      maskSecrets({
        store: { url: 'redis://user:hunter2@redis:6379/0', cursorSecret: SECRET, password: 'pw' },
        upstream: { url: 'https://:tok@example.com/mcp', args: ['--db', 'postgres://me:pw@db/x'] },
        other: 'redis://redis:6379',
      }),
    ).toEqual({
      store: { url: `redis://user:${MASK}@redis:6379/0`, cursorSecret: MASK, password: MASK },
      upstream: { url: `https://:${MASK}@example.com/mcp`, args: ['--db', `postgres://me:${MASK}@db/x`] },
      other: 'redis://redis:6379',
    });
  });
});

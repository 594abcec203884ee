/**
 * Issue 13.17 and 13.18 at the config's level: no secret in what taskgate prints or refuses with, and
 * no address accepted that cannot be listened on.
 */
import { describe, expect, it } from 'vitest';
import { parseCommandLine } from '../../src/config/flags.js';
import { loadConfig, resolveConfig } from '../../src/config/load.js';
import { MASK, maskCommand, maskSecrets, maskUrl } from '../../src/config/mask.js';
import { printable, summary } from '../../src/config/report.js';
import { problemsOf } from '../helpers/config-problems.js';

const load = (argv: string[], env: Record<string, string> = {}) => loadConfig(parseCommandLine(argv), env);

const SECRET_URL = 'http://user:URLPASS@127.0.0.1:9/mcp?api_key=QSECRET&tenant=T1#top';

describe('issue 13.17: secrets never in output or errors', () => {
  it('masks the password and every query value of a URL, and leaves the rest', () => {
    expect(maskUrl(SECRET_URL)).toBe(
      `http://user:${MASK}@127.0.0.1:9/mcp?api_key=${MASK}&tenant=${MASK}#top`,
    );
    expect(maskUrl('https://example.com/mcp')).toBe('https://example.com/mcp');
    expect(maskUrl('https://example.com/mcp?flag')).toBe('https://example.com/mcp?flag');
    expect(maskUrl('not a url ?a=b')).toBe('not a url ?a=b');
  });

  it('print-config and check-config show no secret of --upstream-url', () => {
    const loaded = load(['--upstream-url', SECRET_URL]);
    for (const text of [printable(loaded), summary(loaded)]) {
      expect(text).not.toMatch(/URLPASS|QSECRET|T1/);
      expect(text).toContain(`127.0.0.1:9/mcp?api_key=${MASK}`);
    }
    expect(JSON.stringify(maskSecrets({ upstream: { args: [SECRET_URL] } }))).not.toMatch(/URLPASS|QSECRET/);
  });

  it('names an upstream command with its secret arguments masked', () => {
    expect(maskCommand('node', ['server.js', '--token=abc', '--api-key', 'xyz', SECRET_URL])).toBe(
      `node server.js --token=${MASK} --api-key ${MASK} ${maskUrl(SECRET_URL)}`,
    );
  });

  it('refuses a short --auth-token saying what is wrong, without the token', () => {
    const problems = problemsOf(() => load(['--auth-token', 'shortsecret=alice']));
    expect(problems).toEqual([
      'auth.tokens[0].token: expected a string of at least 16 characters, got a string of 11 characters',
    ]);
  });

  it('refuses a short secret of the file without showing it', () => {
    const problems = problemsOf(() => resolveConfig({ auth: { bearerPassthrough: { secret: 'tooshort' } } }));
    expect(problems).toEqual([
      'auth.bearerPassthrough.secret: expected a string of at least 16 characters, got a string of 8 characters',
    ]);
  });
});

describe('issue 13.18: only ports that exist', () => {
  it.each([
    ['--listen', '127.0.0.1:99999', 99_999],
    ['--listen', '[::1]:65536', 65_536],
    ['--admin-listen', '70000', 70_000],
    ['--admin-listen', '127.0.0.1:99999', 99_999],
  ])('refuses %s %s with a clear message', (flag, address, port) => {
    expect(problemsOf(() => load([flag, address]))).toEqual([
      `${flag}: port ${port} does not exist: expected a port from 0 to 65535 (0 picks a free one), got "${address}"`,
    ]);
  });

  it('says which shape an address must have', () => {
    expect(problemsOf(() => load(['--listen', '127.0.0.1']))).toEqual([
      '--listen: expected PORT or HOST:PORT, got "127.0.0.1"',
    ]);
  });

  it('refuses the same in a variable, and takes the ports that exist', () => {
    expect(problemsOf(() => load([], { TASKGATE_LISTEN: '127.0.0.1:65536' }))[0]).toMatch(
      /^TASKGATE_LISTEN: port 65536 does not exist/,
    );
    expect(load(['--listen', '127.0.0.1:65535', '--admin-listen', '0']).config).toMatchObject({
      http: { listen: '127.0.0.1:65535' },
      admin: { listen: '0' },
    });
  });
});
